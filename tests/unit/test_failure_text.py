"""The failing gate's text (:mod:`pytest_netperf.report.failure`): one line per failing budget
with verdict, value, interval, reference and rounds; notes once; then what to do.

Verdicts come from :func:`stats.evaluate` on made-up rounds; the gate cases use a synthetic
driver (known throughput per URL, 1% jitter) so they take milliseconds.
"""

from __future__ import annotations

import itertools
import re
from typing import Optional

from netperf_rounds import make_round

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.model import BaselineLookup
from pytest_netperf.measure.outcomes import BudgetOutcome
from pytest_netperf.report.failure import FailureContext, budget_line, failure_text, reference_names
from pytest_netperf.results.model import RoundResult
from pytest_netperf.verdict import stats
from pytest_netperf.verdict.status import Status

TEST = "tests/test_gw.py::test_throughput_c100[link]"
SLOW = [6_000.0, 6_200.0, 6_100.0, 6_300.0, 6_150.0]
FAST = [10_000.0, 10_100.0, 9_900.0, 10_050.0, 9_950.0]


def _outcome(text: str, label: str, notes: list[str] | None = None, **values: list[float]) -> BudgetOutcome:
    budget = parse_budget(text)
    verdict = stats.evaluate(budget, values.pop("candidate"), **values)
    return BudgetOutcome(TEST, "default", budget, verdict.status, verdict, list(notes or []), label)


def test_one_failing_budget_is_one_line_with_value_interval_reference_and_rounds() -> None:
    outcome = _outcome("rps >= 0.7x baseline", "baseline", candidate=SLOW, baseline=FAST)
    assert outcome.status is Status.FAIL
    context = FailureContext(references={("default", "baseline"): "the stored baseline (amd-epyc-2c)"})
    text = failure_text([outcome], "fail", context)
    assert text is not None
    lines = text.splitlines()
    assert lines[0] == "netperf gate failed:"
    v = outcome.verdict
    assert v is not None
    fmt = outcome.budget.format_value
    assert lines[1] == (
        f"  FAIL: 'rps >= 0.7x baseline': {fmt(v.estimate)} [{fmt(v.ci_low)}, {fmt(v.ci_high)}]"
        " vs the stored baseline (amd-epyc-2c), n=5"
    )
    assert lines[1].count("rps >= 0.7x baseline") == 1  # said once, no restated status or evidence
    assert f"netperf baseline update '{TEST}'" in text and "--netperf-update-baseline" in text
    assert len(lines) <= 6


def test_an_absolute_budget_shows_the_value_in_its_unit_and_no_reference() -> None:
    outcome = _outcome("rps >= 8000", "absolute", candidate=SLOW)
    line = budget_line(outcome)
    assert line.startswith("FAIL: 'rps >= 8000': 6,1") and " rps [" in line and line.endswith(", n=5")
    assert " vs " not in line


def test_an_exact_count_has_no_interval() -> None:
    outcome = _outcome("errors == 0", "absolute", candidate=[0.0, 3.0, 1.0])
    assert budget_line(outcome) == "FAIL: 'errors == 0': 4 (exact), n=3"


def test_invalid_without_a_verdict_says_so_with_its_reason_and_what_to_do() -> None:
    budget = parse_budget("p99 < 10ms")
    outcome = BudgetOutcome(TEST, "hops=3", budget, Status.INVALID, None, ["candidate: too few samples"], "absolute")
    text = failure_text([outcome], "warn")
    assert text is not None
    assert "  INVALID: 'p99 < 10ms' [hops=3]: no verdict" in text
    assert "      candidate: too few samples" in text
    assert "fix the cause" in text


def test_inconclusive_fails_only_under_policy_fail_and_names_the_round_cap() -> None:
    noisy = [v * f for v, f in zip(FAST, (0.9, 1.1, 0.95, 1.05, 1.0), strict=True)]
    outcome = _outcome("rps >= 0.99x reference", "reference", candidate=noisy, reference=FAST)
    assert outcome.status is Status.INCONCLUSIVE
    assert failure_text([outcome], "warn") is None
    text = failure_text([outcome], "fail", FailureContext(rounds_max=15))
    assert text is not None
    assert "(max 15): raise --netperf-max-rounds" in text and "--netperf-inconclusive=warn" in text


def test_notes_shared_by_every_failing_budget_are_said_once() -> None:
    shared = "baseline measured on a different machine: kernel 6.1 -> 6.8"
    a = _outcome("rps >= 0.7x baseline", "baseline", [shared, "own note"], candidate=SLOW, baseline=FAST)
    b = _outcome("rps >= 8000", "absolute", [shared], candidate=SLOW)
    text = failure_text([a, b], "fail")
    assert text is not None
    assert text.count(shared) == 1 and text.count("own note") == 1
    assert text.splitlines()[0] == "netperf gate failed: 2 of 2 budgets"


def test_an_update_run_does_not_ask_for_an_update_and_reports_are_named() -> None:
    outcome = _outcome("rps >= 0.7x baseline", "baseline", candidate=SLOW, baseline=FAST)
    context = FailureContext(baseline_written=True, reports=("out (plots)", "out/results.json"))
    text = failure_text([outcome], "fail", context)
    assert text is not None
    assert "netperf baseline update" not in text and "this run wrote the new baseline" in text
    assert text.splitlines()[-1] == "  - reports: out (plots), out/results.json"


def test_passing_and_new_outcomes_have_no_text() -> None:
    ok = _outcome("rps >= 0.5x baseline", "baseline", candidate=SLOW, baseline=FAST)
    new = BudgetOutcome(TEST, "default", parse_budget("p99 <= 2x baseline"), Status.NEW, None, ["no baseline"])
    assert failure_text([ok, new], "fail") is None


# ----- from a gate --------------------------------------------------------------------------
class Driver:
    """Answers each URL with its own throughput: the first URL with 3% jitter, the others steady."""

    name = "rust"

    def __init__(self, rps: dict[str, float]) -> None:
        self.rps = rps
        self.jitter = {
            url: itertools.cycle((0.97, 1.03, 1.0, 0.99, 1.02) if i == 0 else (1.0,)) for i, url in enumerate(rps)
        }

    cpus = None  # not pinned

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        return make_round(rps=self.rps[url] * next(self.jitter[url]), url=url)


def _gate(
    budgets: list[str], rps: dict[str, float], lines: list[str], baseline_lookup: Optional[BaselineLookup] = None
) -> Gate:
    driver = Driver(rps)
    return Gate(
        TEST,
        [parse_budget(text) for text in budgets],
        GateSettings(rounds_min=4, rounds_max=8, round_batch=2, round_duration_s=0.1, warmup_s=0.0),
        driver_factory=lambda name, runner: driver,
        baseline_lookup=baseline_lookup,
        progress=lines.append,
    )


def test_a_gate_names_its_reference_url_and_does_not_restate_the_inconclusive_note() -> None:
    head, ref = "http://10.0.0.2/", "http://10.0.0.3/"
    progress: list[str] = []
    g = _gate(["rps >= 0.95x reference", "rps >= 0.9x reference"], {head: 9_000.0, ref: 10_000.0}, progress)
    g.compare(head, ref, connections=8)
    outcomes = g.finish()
    assert [o.status for o in outcomes] == [Status.FAIL, Status.INCONCLUSIVE]
    assert any(n.startswith("inconclusive after 8 rounds") for n in outcomes[1].notes)
    context = FailureContext(references=reference_names(g.measurements), rounds_max=8)
    text = failure_text(outcomes, "fail", context)
    assert text is not None
    ratio = r"0\.\d{3}x \[0\.\d{3}x, 0\.\d{3}x\]"
    against = re.escape(f" vs the same-run reference {ref}, n=8")
    assert re.search(f"^  FAIL: 'rps >= 0.95x reference': {ratio}{against}$", text, re.M), text
    assert re.search(f"^  INCONCLUSIVE: 'rps >= 0.9x reference': {ratio}{against}$", text, re.M), text
    assert "inconclusive after" not in text  # the line says the rounds; the steps say the policy
    assert len(text.splitlines()) <= 10


def test_progress_lines_say_the_round_the_plan_the_cap_and_the_time() -> None:
    url = "http://10.0.0.2/"
    progress: list[str] = []
    # 10% below a noisy 4-round baseline: undecided to the cap, but leaning past the budget,
    # so it keeps measuring (at 1.0x the budget would be undecidable here and stop at once)
    stored = [10_000.0 * f for f in (0.9, 1.1, 0.95, 1.05)]
    g = _gate(["rps >= 0.99x baseline"], {url: 9_000.0}, progress, lambda key, label, metric: stored)
    g.measure(url, connections=8)
    assert progress[0].startswith(f"{TEST} [default] round 1/4 (max 8) candidate (")
    assert progress[0].endswith("s elapsed)")
    more = [line for line in progress if "inconclusive" in line]
    assert more and "after 4 rounds: measuring up to 6 (max 8)" in more[0] and more[0].endswith("s elapsed")
    assert any("round 5/6 (max 8) candidate" in line for line in progress)
    assert any(" round 8/8 candidate " in line for line in progress)  # the cap reached: no "(max 8)"
