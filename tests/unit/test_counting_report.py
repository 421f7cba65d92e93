"""Where the cost went, as the reports say it (issue #41): unresolved functions of a stripped
binary are named by the program that ran them, not ``???``; a counted budget's notes lead with
what the counting pass counted and leave out the timed rounds' "measured again" notes."""

from __future__ import annotations

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.model import Measurement, Series
from pytest_netperf.measure.outcomes import BudgetOutcome
from pytest_netperf.report.counted import counted_notes, outcome_notes
from pytest_netperf.results.counted import CountedCost
from pytest_netperf.runtime.trace_output import cachegrind_counts, merge_cachegrind
from pytest_netperf.verdict.counted import evaluate_repetitions

STRIPPED = """desc: I1 cache: 32768 B, 64 B, 8-way associative
cmd: /usr/local/sbin/haproxy -W -db -f /usr/local/etc/haproxy/haproxy.cfg
events: Ir
fl=???
fn=???
0 700
fl=./string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S
fn=__memmove_avx_unaligned_erms
10 30
fl=src/foo.c
fn=???
3 5
summary: 735
"""
SHELL = """cmd: /bin/sh /app/start.sh
events: Ir
fl=???
fn=???
0 40
summary: 40
"""


def test_unresolved_code_is_named_by_the_program_that_ran_it() -> None:
    total, functions = cachegrind_counts(STRIPPED)
    assert total == 735
    assert functions == {
        "??? [haproxy]": 700,
        "__memmove_avx_unaligned_erms": 30,
        "??? [src/foo.c]": 5,
    }
    _, merged, _ = merge_cachegrind({"cachegrind.7": STRIPPED, "cachegrind.3": SHELL})
    assert merged["??? [haproxy]"] == 700 and merged["??? [sh]"] == 40


def test_the_change_note_explains_an_unresolved_name() -> None:
    budget = parse_budget("instructions_per_request[edge] <= 1.01x base")
    before = CountedCost("edge", "instructions", (18_400.0, 18_410.0), {"??? [haproxy]": 9_000.0})
    after = CountedCost("edge", "instructions", (19_400.0, 19_410.0), {"??? [haproxy]": 10_000.0})
    notes = counted_notes(budget, {"instructions": {"edge": after}}, {"instructions": {"edge": before}}, "base")
    assert "??? [haproxy] +1,000" in notes[-1]
    assert "without symbols" in notes[-1] and "haproxy" in notes[-1]


def test_a_counted_budgets_notes_lead_with_the_count_and_leave_out_the_timed_rounds_retries() -> None:
    budget = parse_budget("syscalls_per_request[edge] <= 12")
    cost = CountedCost("edge", "syscalls", (8.0, 8.0, 8.0), {"writev": 2.0}, (200, 1000), 9.5)
    series = Series("candidate", "http://172.18.0.3:80/", "edge", "rust", LoadShape())
    series.counted = {"syscalls": {"edge": cost}}
    m = Measurement("default", series)
    verdict = evaluate_repetitions(budget, list(cost.per_request))
    retried = "candidate round 3 measured again: the driver's schedule lagged 120 ms"
    outcome = BudgetOutcome("t.py::test_edge", "default", budget, verdict.status, verdict, [verdict.note, retried])
    notes = outcome_notes(outcome, m)
    assert notes[0].startswith("counting pass of edge (candidate): syscalls under strace")
    assert notes[1].startswith("counted: 3 repetitions")
    assert retried not in notes
    timed = BudgetOutcome("t.py::test_edge", "default", parse_budget("p90 < 5ms"), verdict.status, None, [retried])
    assert outcome_notes(timed, m) == [retried]
