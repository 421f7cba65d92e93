"""What a final INCONCLUSIVE (and FAIL / INVALID) does to a test, per policy."""

from __future__ import annotations

import pytest

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.measure.outcomes import BudgetOutcome
from pytest_netperf.report.failure import failure_text
from pytest_netperf.verdict.stats import Verdict
from pytest_netperf.verdict.status import Status


def _outcome(status: str, text: str = "p90 < 1ms") -> BudgetOutcome:
    return BudgetOutcome("t.py::test", "default", parse_budget(text), status, None, ["a note"])


@pytest.mark.parametrize("policy, fails", [("fail", True), ("warn", False), ("pass", False)])
def test_inconclusive_follows_the_policy(policy: str, fails: bool) -> None:
    message = failure_text([_outcome("PASS"), _outcome("INCONCLUSIVE", "p99 < 2ms")], policy)
    assert (message is not None) == fails
    if fails:
        assert "INCONCLUSIVE: 'p99 < 2ms'" in message and "a note" in message


@pytest.mark.parametrize("status", ["FAIL", "INVALID"])
@pytest.mark.parametrize("policy", ["fail", "estimate", "warn", "pass"])
def test_fail_and_invalid_always_fail(status: str, policy: str) -> None:
    message = failure_text([_outcome(status)], policy)
    assert message is not None and f"{status}: 'p90 < 1ms'" in message


def test_new_and_pass_never_fail() -> None:
    assert failure_text([_outcome("PASS"), _outcome("NEW", "p99 <= 1.2x baseline")], "fail") is None


def _undecided(estimate: float, text: str = "rps_loss <= 5%") -> BudgetOutcome:
    budget = parse_budget(text)
    verdict = Verdict(
        budget=budget,
        status=Status.INCONCLUSIVE,
        estimate=estimate,
        ci_low=estimate - 0.04,
        ci_high=estimate + 0.04,
        threshold=0.05,
        n_rounds=12,
        p_value=0.2,
        method="paired t on log ratios",
    )
    return BudgetOutcome("t.py::test", "default", budget, "INCONCLUSIVE", verdict, [])


@pytest.mark.parametrize("estimate, fails", [(0.02, False), (0.049, False), (0.051, True), (0.09, True)])
def test_estimate_policy_fails_an_undecided_budget_only_when_its_estimate_is_outside(
    estimate: float, fails: bool
) -> None:
    message = failure_text([_outcome("PASS"), _undecided(estimate)], "estimate")
    assert (message is not None) == fails
    if fails:
        assert "INCONCLUSIVE: 'rps_loss <= 5%'" in message


def test_estimate_policy_fails_an_undecided_budget_without_an_estimate() -> None:
    assert failure_text([_outcome("INCONCLUSIVE")], "estimate") is not None
