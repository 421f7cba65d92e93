"""Under ``--netperf-base``, a URL target's budget against the baseline says that it was judged
against the stored baseline: a URL has no base revision to measure (issue #41)."""

from __future__ import annotations

from netperf_rounds import make_rounds

from pytest_netperf.baseline.policy import note_unmeasured_base
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.model import Measurement, Series
from pytest_netperf.measure.outcomes import BudgetOutcome
from pytest_netperf.verdict.status import Status

TEST = "tests/test_gw.py::test_latency"
URL = "http://127.0.0.1:8080/"


def _measurement(base: bool = False) -> Measurement:
    def series(label: str) -> Series:
        return Series(label=label, url=URL, where="host", driver="rust", shape=LoadShape(), rounds=make_rounds(2))

    return Measurement(key="default", candidate=series("candidate"), base=series("base") if base else None)


def _outcomes() -> list[BudgetOutcome]:
    return [
        BudgetOutcome(TEST, "default", parse_budget("p90 <= 1.2x baseline"), Status.PASS, None),
        BudgetOutcome(TEST, "default", parse_budget("errors == 0"), Status.PASS, None),
    ]


def test_a_url_target_under_base_says_it_was_judged_against_the_stored_baseline() -> None:
    outcomes = _outcomes()
    note_unmeasured_base(outcomes, [_measurement()], "origin/main")
    baseline, absolute = outcomes
    assert any("--netperf-base origin/main" in n and URL in n and "stored baseline" in n for n in baseline.notes)
    assert not absolute.notes


def test_a_measured_base_twin_and_no_base_option_add_nothing() -> None:
    outcomes = _outcomes()
    note_unmeasured_base(outcomes, [_measurement(base=True)], "origin/main")
    note_unmeasured_base(outcomes, [_measurement()], "")
    assert not any(o.notes for o in outcomes)
