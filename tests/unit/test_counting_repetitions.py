"""Counted verdicts rest on the measured spread of the counting pass's repetitions (issue #41):
one repetition is refused, a count that moves with timing says so and names the parts that
move, an undecided count of an unchanged stack is not red under the default policy, and the
advice for it names the counting pass's own option."""

from __future__ import annotations

import pytest

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.budget.metrics import tool_of
from pytest_netperf.measure.outcomes import BudgetOutcome
from pytest_netperf.report.counted import counted_notes
from pytest_netperf.report.failure import FailureContext, failure_text
from pytest_netperf.results.counted import CountedCost, CountedRun, counting_tool, marginal
from pytest_netperf.settings import SettingError, Settings
from pytest_netperf.verdict.counted import evaluate_repetitions
from pytest_netperf.verdict.policy import undecided_fails
from pytest_netperf.verdict.status import Status

SYSCALLS = "syscalls_per_request[edge] <= 1.0x base"


def test_one_repetition_is_refused_because_it_has_no_spread() -> None:
    with pytest.raises(SettingError, match=r"counting_repetitions must be >= 2 \(got 1\).*no spread"):
        Settings.from_mapping({"counting_repetitions": "1"})
    assert Settings.from_mapping({"counting_repetitions": "2"}).counting_repetitions == 2


def _run(requests: int, calls: dict[str, float]) -> CountedRun:
    return CountedRun("syscalls", requests, sum(calls.values()), calls)


def _nginx_without_upstream_pool(readv_per_request: float) -> tuple[CountedRun, CountedRun]:
    """One repetition: 7 calls per request that do not move, and readv, which does."""
    steady = {"epoll_wait": 2.0, "recvfrom": 2.0, "writev": 2.0, "connect": 1.0}
    low = {name: 200 * v for name, v in steady.items()} | {"readv": 200 * 0.8, "execve": 1.0}
    high = {name: 1000 * v for name, v in steady.items()} | {
        "readv": 200 * 0.8 + 800 * readv_per_request,
        "execve": 1.0,
    }
    return _run(200, low), _run(1000, high)


def test_a_count_that_moves_with_timing_is_reported_naming_the_system_calls_that_move() -> None:
    cost = marginal("edge", [_nginx_without_upstream_pool(r) for r in (0.58, 1.0, 0.8)])
    assert set(cost.varying) == {"readv"}
    assert cost.varying["readv"] == pytest.approx((0.58, 1.0))
    assert CountedCost.from_dict(cost.to_dict()) == cost
    notes = counted_notes(parse_budget(SYSCALLS), {"syscalls": {"edge": cost}}, None, "base")
    timing = [n for n in notes if "timing" in n]
    assert timing and "readv 0.58 to 1.00" in timing[0] and "epoll_wait" not in timing[0], notes


def test_a_deterministic_count_is_not_called_timing_dependent() -> None:
    cost = marginal("edge", [_nginx_without_upstream_pool(0.8) for _ in range(3)])
    assert cost.varying == {}
    notes = counted_notes(parse_budget(SYSCALLS), {"syscalls": {"edge": cost}}, None, "base")
    assert not [n for n in notes if "timing" in n]


def test_an_undecided_count_of_an_unchanged_stack_is_not_red_under_the_default_policy() -> None:
    """README: ``change`` fails only when the rounds show a harmful change from no change;
    repetitions of both sides that overlap at 1.0x show none."""
    budget = parse_budget(SYSCALLS)
    head, base = [7.62, 8.0, 7.85], [7.6, 7.98, 7.8]
    verdict = evaluate_repetitions(budget, head, base)
    assert verdict.status is Status.INCONCLUSIVE
    assert verdict.estimate > 1.0  # outside the budget: `estimate` would fail it
    assert not undecided_fails(budget, verdict, "change")
    assert undecided_fails(budget, verdict, "estimate")


def test_an_undecided_count_that_is_worse_in_every_repetition_is_red_under_change() -> None:
    """Both sides deterministic (under 1% each), their ratios 1.002x to 1.017x: INCONCLUSIVE
    at 1.01x, the estimate past it, and every repetition worse than no change."""
    budget = parse_budget("instructions_per_request[edge] <= 1.01x base")
    verdict = evaluate_repetitions(budget, [18_450.0, 18_620.0, 18_560.0], [18_300.0, 18_420.0, 18_350.0])
    assert verdict.status is Status.INCONCLUSIVE
    assert verdict.ci_low > 1.0
    assert undecided_fails(budget, verdict, "change")


def test_a_timing_dependent_count_cannot_fail_on_a_difference_within_its_own_spread() -> None:
    """The head's repetitions vary by 5%: sides 1.5% to 8% apart are not a decided change."""
    budget = parse_budget(SYSCALLS)
    verdict = evaluate_repetitions(budget, [7.9, 8.3, 8.0], [7.7, 7.78, 7.72])
    assert verdict.status is Status.INCONCLUSIVE, verdict
    assert "timing" in verdict.note
    dropped_pool = evaluate_repetitions(budget, [13.5, 14.2, 13.8], [7.6, 7.98, 7.8])
    assert dropped_pool.status is Status.FAIL


def test_the_advice_for_an_undecided_counted_budget_names_the_counting_repetitions_option() -> None:
    budget = parse_budget("instructions_per_request[edge] <= 1.01x base")
    verdict = evaluate_repetitions(budget, [18_450.0, 18_620.0, 18_500.0], [18_300.0, 18_420.0, 18_350.0])
    outcome = BudgetOutcome("t.py::test_edge", "default", budget, verdict.status, verdict, [verdict.note], "base")
    text = failure_text([outcome], "fail", FailureContext(rounds_max=15))
    assert text is not None
    assert "--netperf-counting-repetitions" in text
    assert "--netperf-max-rounds" not in text


def test_a_miss_smaller_than_the_named_floor_per_request_is_within_the_counts_resolution() -> None:
    """CI counted nginx's system calls with two regex locations added at 1.002x [1.000x, 1.003x]
    of the base (8.016 against 8.0 per request: epoll batching moved with the slower server),
    a FAIL of ``<= 1.0x base``; no system call changed by the 0.05 per request the report names."""
    budget = parse_budget(SYSCALLS)
    candidate, reference = [8.016, 8.018, 8.011], [8.0, 8.004, 8.002]
    floor = counting_tool(tool_of(budget.metric)).named_floor
    assert floor == 0.05
    assert evaluate_repetitions(budget, candidate, reference).status is Status.FAIL  # no floor: every ratio > 1
    verdict = evaluate_repetitions(budget, candidate, reference, floor=floor)
    assert verdict.status is Status.PASS
    assert "misses the budget by 0.0" in verdict.note and "less than 0.05" in verdict.note, verdict.note


def test_a_dropped_keep_alive_pool_still_fails_with_the_floor() -> None:
    budget = parse_budget(SYSCALLS)
    verdict = evaluate_repetitions(budget, [14.0, 14.01, 14.0], [8.0, 8.004, 8.002], floor=0.05)
    assert verdict.status is Status.FAIL and "misses the budget" not in verdict.note


def test_an_instruction_budget_keeps_its_resolution_of_one_instruction() -> None:
    """1.5% over a 1.01x budget on ~25k instructions is ~125 instructions per request: a FAIL."""
    budget = parse_budget("instructions_per_request[edge] <= 1.01x base")
    floor = counting_tool(tool_of(budget.metric)).named_floor
    assert floor == 1.0
    verdict = evaluate_repetitions(budget, [25_470.0, 25_472.0], [25_000.0, 25_001.0], floor=floor)
    assert verdict.status is Status.FAIL
