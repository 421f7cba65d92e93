"""A miss against a stored baseline that this machine's slower speed explains (#38,
measure/speed_excuse.py): within the policy's 1.5x threshold a machine that calibrated
slower than the baseline's is judged with that speed given back. A miss the speed explains
is undecided on this runner (green under the default policy); a larger one stays red, saying
so; a machine that measured faster, or about the same, is judged as measured. The same for
absolute budgets (an absolute figure, an added amount) on a machine slower than the one they
were set on (``--netperf-budget-calibration``)."""

from __future__ import annotations

import re
from typing import Optional

import pytest
from netperf_rounds import make_round, six_rounds_judged

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.budget.metrics import metric_value
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure import runner_watch
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.outcomes import BudgetOutcome
from pytest_netperf.measure.speed_excuse import (
    MIN_SLOWDOWN,
    SlowerMachine,
    explains_budget_speed,
    explains_speed,
    slower_machine,
    slower_than_budgets,
    speed_given_back,
)
from pytest_netperf.results.model import RoundResult
from pytest_netperf.verdict.policy import undecided_fails
from pytest_netperf.verdict.status import Status

URL = "http://10.0.0.2/"
BASELINE_RPS = 10_000.0
BASELINE_MEDIAN_MS = 0.5
FIGURES = "calibration 50 ms vs 70 ms here"


@pytest.fixture(autouse=True)
def quiet_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    """No runner state: only the speed can explain a miss."""
    monkeypatch.setattr(runner_watch, "read_sample", lambda: None)


class SteadyDriver:
    """Every round measures ``rps`` (+-1%) and a median latency of ``median_ms`` (+-1%)."""

    name = "rust"
    cpus = None

    def __init__(self, rps: float, median_ms: float = BASELINE_MEDIAN_MS) -> None:
        self.rps, self.median_ms, self.calls = rps, median_ms, 0

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.calls += 1
        wobble = 1 + 0.01 * (self.calls % 3 - 1)
        return make_round(rps=self.rps * wobble, median_ns=self.median_ms * 1e6 * wobble, url=url, seed=self.calls)


def _stored(metric: str) -> list[float]:
    """The stored baseline: six rounds of 10,000/s at a 0.5 ms median."""
    driver = SteadyDriver(BASELINE_RPS)
    return [metric_value(driver.run(URL, LoadShape()), metric) for _ in range(6)]


def judged(driver: SteadyDriver, budget: str, slower: Optional[SlowerMachine]) -> BudgetOutcome:
    return six_rounds_judged(driver, budget, lambda key, label, metric: _stored(metric), URL, baseline_slower=slower)


def test_a_rate_miss_the_slowdown_explains_is_undecided_on_this_runner() -> None:
    # 0.66x of a baseline recorded while the host calibrated 1.4x faster: 0.92x given back
    outcome = judged(SteadyDriver(rps=6_600.0), "rps >= 0.7x baseline", SlowerMachine(1.4, FIGURES))
    assert outcome.status is Status.INCONCLUSIVE and outcome.verdict.excused
    assert outcome.verdict.n_rounds == 6 and round(outcome.verdict.estimate, 2) == 0.66  # as measured
    why = outcome.verdict.undecidable
    assert why.startswith("this machine measured 1.40x slower than the baseline's (calibration 50 ms vs 70 ms here)")
    assert "given back, rps would measure 0.924x, within the budget" in why
    assert "too busy" not in why and "not a verdict on the change" in why
    assert not undecided_fails(outcome.budget, outcome.verdict, "change")


def test_without_the_slowdown_the_same_rounds_fail() -> None:
    assert judged(SteadyDriver(rps=6_600.0), "rps >= 0.7x baseline", None).status is Status.FAIL


def test_a_latency_miss_the_slowdown_explains_is_undecided() -> None:
    outcome = judged(SteadyDriver(BASELINE_RPS, median_ms=0.65), "p50 <= 1.2x baseline", SlowerMachine(1.4, FIGURES))
    assert outcome.status is Status.INCONCLUSIVE
    assert "given back, p50 would measure 0.928x, within the budget" in outcome.verdict.undecidable


def test_a_miss_beyond_the_slowdown_stays_red_and_says_so() -> None:
    outcome = judged(SteadyDriver(rps=4_000.0), "rps >= 0.7x baseline", SlowerMachine(1.4, FIGURES))
    assert outcome.status is Status.FAIL
    assert "given back, rps would measure 0.560x: the speed difference does not explain the miss" in (
        outcome.verdict.note
    )


def test_a_passing_budget_is_untouched() -> None:
    outcome = judged(SteadyDriver(rps=9_000.0), "rps >= 0.7x baseline", SlowerMachine(1.4, FIGURES))
    assert outcome.status is Status.PASS and "given back" not in outcome.verdict.note


def test_only_wall_clock_figures_against_a_stored_baseline_are_explained() -> None:
    assert explains_speed(parse_budget("rps >= 0.7x baseline"), paired=False)
    assert explains_speed(parse_budget("p90 <= 1.2x baseline"), paired=False)
    assert explains_speed(parse_budget("cpu_per_request[proxy] <= 1.1x baseline"), paired=False)
    assert not explains_speed(parse_budget("rps >= 0.7x baseline"), paired=True)  # the base twin beside it
    assert not explains_speed(parse_budget("rps >= 1000"), paired=False)
    assert not explains_speed(parse_budget("p90 <= 1.2x reference"), paired=False)
    assert not explains_speed(parse_budget("mem[proxy] <= 1.1x baseline"), paired=False)
    assert not explains_speed(parse_budget("instructions_per_request[proxy] <= 1.01x baseline"), paired=False)


def test_speed_is_given_back_in_the_changes_favour() -> None:
    slower = SlowerMachine(1.25, FIGURES)
    assert speed_given_back("rps", [800.0], slower) == [1000.0]
    assert speed_given_back("p90", [1250.0], slower) == [1000.0]
    assert speed_given_back("cpu_per_request[proxy]", [1250.0], slower) == [1000.0]


def test_a_faster_or_alike_machine_gives_nothing_back() -> None:
    assert slower_machine(50.0, 40.0, FIGURES) is None  # faster here
    assert slower_machine(50.0, 50.0 * MIN_SLOWDOWN * 0.99, FIGURES) is None  # within the calibration's repeatability
    slower = slower_machine(50.0, 70.0, FIGURES)
    assert slower is not None and slower.factor == pytest.approx(1.4)


# ----- absolute budgets on a machine slower than the one they were set on ----------------
#: ``--netperf-budget-calibration 50`` on a machine that calibrated 70 ms: 1.4x slower.
BUDGET_MACHINE = SlowerMachine(1.4, "calibration 50 ms there vs 70 ms here", "the machine the budgets were set on")
REFERENCE_URL = "http://10.0.0.3/"


class TwoPathDriver:
    """The candidate URL at ``candidate_ms`` median, any other URL at ``reference_ms`` (+-1%)."""

    name = "rust"
    cpus = None

    def __init__(self, candidate_ms: float, reference_ms: float) -> None:
        self.medians = {URL: candidate_ms}
        self.reference_ms, self.calls = reference_ms, 0

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.calls += 1
        median = self.medians.get(url, self.reference_ms) * (1 + 0.01 * (self.calls % 3 - 1))
        return make_round(median_ns=median * 1e6, url=url, seed=self.calls)


def compared(driver: TwoPathDriver, budget: str, slower: Optional[SlowerMachine]) -> BudgetOutcome:
    settings = GateSettings(rounds_min=6, rounds_max=6, round_duration_s=0.1, warmup_s=0.0)
    g = Gate("t.py::test", [parse_budget(budget)], settings, lambda name, runner: driver, budget_slower=slower)
    g.compare(URL, reference=REFERENCE_URL, hops=2)
    (outcome,) = g.finish()
    return outcome


def test_an_absolute_latency_miss_the_slowdown_explains_is_undecided() -> None:
    # 0.75 ms against 0.6 ms set on a machine 1.4x faster: 0.54 ms given back
    outcome = judged(SteadyDriver(BASELINE_RPS, median_ms=0.75), "p50 <= 0.6ms", None)
    assert outcome.status is Status.FAIL
    gate = Gate(
        "t.py::test",
        [parse_budget("p50 <= 0.6ms")],
        GateSettings(rounds_min=6, rounds_max=6, round_duration_s=0.1, warmup_s=0.0),
        lambda name, runner: SteadyDriver(BASELINE_RPS, median_ms=0.75),
        budget_slower=BUDGET_MACHINE,
    )
    gate.measure(URL)
    (outcome,) = gate.finish()
    assert outcome.status is Status.INCONCLUSIVE and outcome.verdict.excused and outcome.verdict.n_rounds == 6
    assert outcome.verdict.estimate > 600_000, "the row shows the median as measured, above the budget"
    assert "inconclusive after 6 rounds" in " ".join(outcome.notes)
    why = outcome.verdict.undecidable
    assert why.startswith(
        "this machine measured 1.40x slower than the machine the budgets were set on "
        "(calibration 50 ms there vs 70 ms here)"
    ), why
    assert "given back, p50 would measure" in why and "within the budget" in why
    assert not undecided_fails(outcome.budget, outcome.verdict, "change")


def test_an_added_amount_per_hop_is_given_back_on_both_sides() -> None:
    # 2 hops add 1.4 ms (0.7 ms a hop) over the reference: 0.5 ms a hop on a machine 1.4x faster
    driver = TwoPathDriver(candidate_ms=2.4, reference_ms=1.0)
    assert compared(driver, "p50_added <= 0.6ms per hop", None).status is Status.FAIL
    outcome = compared(TwoPathDriver(candidate_ms=2.4, reference_ms=1.0), "p50_added <= 0.6ms per hop", BUDGET_MACHINE)
    assert outcome.status is Status.INCONCLUSIVE, outcome.verdict
    found = re.search(r"given back, p50 would measure (\d+)us, within the budget", outcome.verdict.undecidable)
    assert found and 450 <= int(found.group(1)) <= 560, outcome.verdict.undecidable


def test_an_added_amount_beyond_the_slowdown_stays_red() -> None:
    # 1.0 ms a hop: 0.71 ms given back, still over 0.6 ms: the speed does not explain it
    outcome = compared(TwoPathDriver(candidate_ms=3.0, reference_ms=1.0), "p50_added <= 0.6ms per hop", BUDGET_MACHINE)
    assert outcome.status is Status.FAIL
    assert "the speed difference does not explain the miss" in outcome.verdict.note, outcome.verdict.note


def test_a_ratio_against_the_same_run_gets_nothing_back() -> None:
    outcome = compared(TwoPathDriver(candidate_ms=2.4, reference_ms=1.0), "p50 <= 2x reference", BUDGET_MACHINE)
    assert outcome.status is Status.FAIL and "given back" not in outcome.verdict.note


def test_which_budgets_a_slower_machine_than_the_budgets_can_explain() -> None:
    assert explains_budget_speed(parse_budget("p99 < 1ms"))
    assert explains_budget_speed(parse_budget("p90_added <= 1ms per hop"))
    assert explains_budget_speed(parse_budget("rps >= 5000"))
    assert explains_budget_speed(parse_budget("cpu[proxy] <= 0.6 per 1k rps"))
    assert not explains_budget_speed(parse_budget("rps_loss <= 10%"))  # both sides slow down alike
    assert not explains_budget_speed(parse_budget("p90 <= 1.2x reference"))
    assert not explains_budget_speed(parse_budget("rps >= 0.7x baseline"))  # the baseline's own speed check
    assert not explains_budget_speed(parse_budget("errors == 0"))
    assert not explains_budget_speed(parse_budget("instructions_per_request[proxy] <= 1000"))


def test_the_budgets_machine_is_slower_only_beyond_the_calibrations_repeatability() -> None:
    assert slower_than_budgets(54.0, 50.0) is None
    assert slower_than_budgets(54.0, 54.0 * MIN_SLOWDOWN * 0.99) is None
    slower = slower_than_budgets(54.0, 126.0)
    assert slower is not None and slower.factor == pytest.approx(126 / 54)
    assert slower.text() == (
        "this machine measured 2.33x slower than the machine the budgets were set on "
        "(calibration 54 ms there vs 126 ms here)"
    )
