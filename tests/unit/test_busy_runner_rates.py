"""A rate against a stored baseline on a busy runner (#38, measure/validity.py ``given_back``):
a ``rps >= 0.6x baseline`` that misses while other processes held part of the cores is
undecided on this runner when the cores they took, given back, would put it within the
budget; a miss they do not explain, a miss on a quiet runner and a budget against the base
twin are judged as measured."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import pytest
from netperf_rounds import make_round, runner_state, six_rounds_judged

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure import rounds, runner_watch
from pytest_netperf.measure.outcomes import BudgetOutcome
from pytest_netperf.measure.validity import explains_rates, given_back
from pytest_netperf.results.model import RoundResult
from pytest_netperf.results.runner import RunnerState
from pytest_netperf.verdict.policy import undecided_fails
from pytest_netperf.verdict.status import Status

URL = "http://10.0.0.2/"
BASELINE_RPS = 10_000.0


@pytest.fixture(autouse=True)
def runner_as_the_driver_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rounds keep the runner state the fake driver gives them (this machine's is not read)."""
    monkeypatch.setattr(runner_watch, "read_sample", lambda: None)


def state(outside: float, steal: float = 0.0, stack: Optional[float] = 1.2) -> RunnerState:
    """A 2-core runner: the driver 0.5 cores, the stack ``stack``, others ``outside``."""
    return runner_state(outside, stack, steal, driver=0.5, load=3.0)


class SharedRunnerDriver:
    """Every round measures ``rps`` (+-1%) with other processes using ``outside`` cores."""

    name = "rust"
    cpus = None

    def __init__(self, rps: float, outside: float, steal: float = 0.0, stack: Optional[float] = 1.2) -> None:
        self.rps, self.outside, self.steal, self.stack, self.calls = rps, outside, steal, stack, 0

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.calls += 1
        result = make_round(rps=self.rps * (1 + 0.01 * (self.calls % 3 - 1)), url=url, seed=self.calls)
        return replace(result, runner=state(self.outside, self.steal, self.stack))


def judged(driver: SharedRunnerDriver, budget: str = "rps >= 0.6x baseline") -> BudgetOutcome:
    stored = [BASELINE_RPS * (1 + 0.01 * (i % 3 - 1)) for i in range(6)]
    return six_rounds_judged(driver, budget, lambda key, label, metric: stored, URL)


def test_a_miss_the_taken_cores_explain_is_undecided_on_this_runner() -> None:
    # the example job beside busy-neighbor --level busy: 0.558x of the quiet baseline, others 0.32 cores
    outcome = judged(SharedRunnerDriver(rps=5_580.0, outside=0.32))
    assert outcome.status is Status.INCONCLUSIVE and outcome.verdict.excused
    # the row shows the figure as measured, over the rounds measured; the note what it would be
    assert outcome.verdict.n_rounds == 6 and round(outcome.verdict.estimate, 3) == 0.558
    why = outcome.verdict.undecidable
    assert why.startswith("this runner was too busy to measure rps: other processes and steal took 0.32 of the 2")
    assert "given back, rps would measure 0.664x" in why and "within the budget" in why
    assert not undecided_fails(outcome.budget, outcome.verdict, "change")


def test_steal_counts_as_taken() -> None:
    # neither alone makes the runner busy (a quarter of the cores, 5% steal); together they took 0.28
    outcome = judged(SharedRunnerDriver(rps=5_580.0, outside=0.2, steal=0.04))
    assert outcome.status is Status.INCONCLUSIVE and "took 0.28 of the 2 cores" in outcome.verdict.undecidable


def test_a_miss_beyond_what_was_taken_stays_red_and_says_so() -> None:
    outcome = judged(SharedRunnerDriver(rps=3_000.0, outside=0.32))
    assert outcome.status is Status.FAIL
    assert "given back, rps would measure 0.357x: the runner does not explain the miss" in outcome.verdict.note


def test_a_quiet_runner_is_judged_as_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    watched: list[bool] = []
    monkeypatch.setattr(rounds, "outside_when_idle", lambda: watched.append(True) or (0.08, 2))
    outcome = judged(SharedRunnerDriver(rps=5_800.0, outside=0.15))  # 0.075 of the cores: quiet
    assert outcome.status is Status.FAIL and "given back" not in outcome.verdict.note
    assert watched == [True], "quiet during the rounds: the runner is watched with no load once"


def test_a_neighbour_held_back_during_the_rounds_is_seen_with_no_load(monkeypatch: pytest.MonkeyPatch) -> None:
    # the example job beside busy-neighbor --level busy: others took 0.15 of 2 cores during a
    # closed loop at 20x the CPU weight (0.612x of its quiet baseline), wanted 0.59 with no load
    monkeypatch.setattr(rounds, "outside_when_idle", lambda: (0.59, 2))
    outcome = judged(SharedRunnerDriver(rps=6_120.0, outside=0.15), "rps >= 0.8x baseline")
    assert outcome.status is Status.INCONCLUSIVE and outcome.verdict.excused and outcome.verdict.n_rounds == 6
    why = outcome.verdict.undecidable
    assert "took 0.15 of the 2 cores on average" in why and "and wanted 0.59 while the test sent no load" in why
    assert "given back, rps would measure 0.868x, within the budget" in why  # 0.612x x 2 / 1.41
    assert not undecided_fails(outcome.budget, outcome.verdict, "change")


def test_a_miss_beyond_what_a_held_back_neighbour_wanted_stays_red(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rounds, "outside_when_idle", lambda: (1.0, 2))
    outcome = judged(SharedRunnerDriver(rps=3_000.0, outside=0.15), "rps >= 0.8x baseline")
    assert outcome.status is Status.FAIL
    assert "given back, rps would measure 0.600x: the runner does not explain the miss" in outcome.verdict.note


def test_unknown_contention_explains_nothing() -> None:
    outcome = judged(SharedRunnerDriver(rps=5_580.0, outside=0.32, stack=None))  # a plain URL's server
    assert outcome.status is Status.FAIL


def test_a_passing_rate_is_untouched() -> None:
    outcome = judged(SharedRunnerDriver(rps=9_000.0, outside=0.32))
    assert outcome.status is Status.PASS and "given back" not in outcome.verdict.note


def test_only_rates_without_a_side_of_this_run_are_explained() -> None:
    assert explains_rates(parse_budget("rps >= 0.6x baseline"), paired=False)
    assert explains_rates(parse_budget("rps >= 1000"), paired=False)
    assert explains_rates(parse_budget("gbps >= 0.9x baseline"), paired=False)
    assert not explains_rates(parse_budget("rps >= 0.6x base"), paired=True), "the base twin shares the runner"
    assert not explains_rates(parse_budget("rps >= 0.9x reference"), paired=True)
    assert not explains_rates(parse_budget("p99 <= 1.1x baseline"), paired=False), "latency follows bursts"
    assert not explains_rates(parse_budget("loss <= 1%"), paired=False)
    assert not explains_rates(parse_budget("cpu_per_request[edge] <= 1.05x baseline"), paired=False)


def test_given_back_scales_each_round_by_the_cores_left() -> None:
    assert given_back([100.0, 100.0], [(0.5, 2), (1.0, 2)]) == pytest.approx([100 * 2 / 1.5, 100 * 2 / 1.0])
    assert given_back([100.0], [(0.1, 2)]) is None, "0.05 of the cores: a quiet runner"
    assert given_back([100.0], [(1.8, 2)]) is None, "too little left to scale from"
    assert given_back([], []) is None
    assert given_back([100.0], [(0.1, 2)], idle=(0.4, 2)) is None, "others wanted 0.2 of the cores: quiet"
    wanted = given_back([100.0, 100.0], [(0.1, 2), (0.8, 2)], idle=(0.5, 2))
    assert wanted == pytest.approx([100 * 2 / 1.5, 100 * 2 / 1.2]), "the larger of taken and wanted"
    heavy = given_back([100.0], [(0.1, 2)], idle=(1.8, 2))  # busy-neighbor --level heavy wants 1.8
    assert heavy == pytest.approx([100 * 2 / 0.5]), "at most MAX_TAKEN_SHARE of the cores, never less"


def test_a_miss_beyond_what_steal_took_from_every_round_stays_red(monkeypatch: pytest.MonkeyPatch) -> None:
    # a CI run: upstream keep-alive dropped (0.143x of the stored baseline) while the hypervisor
    # stole 25.7% of the CPU in every round; no quiet round was left, yet 0.51 cores given back
    # cannot lift 0.143x to 0.6x
    monkeypatch.setattr(rounds, "outside_when_idle", lambda: (0.05, 2))
    outcome = judged(SharedRunnerDriver(rps=1_430.0, outside=0.03, steal=0.257))
    assert outcome.status is Status.FAIL and not outcome.verdict.excused
    note = outcome.verdict.note
    assert "6 of 6 round(s) measured while the runner was busy" in note and "kept" in note
    assert "took 0.54 of the 2 cores on average" in note
    assert note.count("given back, rps would measure 0.196x: the runner does not explain the miss") == 1, note


def test_a_miss_steal_explains_in_every_round_is_undecided(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rounds, "outside_when_idle", lambda: (0.05, 2))
    outcome = judged(SharedRunnerDriver(rps=5_000.0, outside=0.03, steal=0.257))  # 0.68x given back
    assert outcome.status is Status.INCONCLUSIVE and outcome.verdict.excused
    assert outcome.verdict.undecidable.startswith("this runner was too busy to measure rps: 6 of 6 round(s)")


def test_a_miss_a_neighbour_wanted_more_than_it_took_explains_is_undecided(monkeypatch: pytest.MonkeyPatch) -> None:
    # steal made every round busy; others wanted 1.0 core with no load: given back the larger
    monkeypatch.setattr(rounds, "outside_when_idle", lambda: (1.0, 2))
    outcome = judged(SharedRunnerDriver(rps=3_500.0, outside=0.03, steal=0.06))  # 0.7x given back
    assert outcome.status is Status.INCONCLUSIVE and outcome.verdict.excused
