"""What a final INCONCLUSIVE (and FAIL / INVALID) does to a test, per policy."""

from __future__ import annotations

import pytest

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.measure.gate import BudgetOutcome, Gate


def _outcome(status: str, text: str = "p90 < 1ms") -> BudgetOutcome:
    return BudgetOutcome("t.py::test", "default", parse_budget(text), status, None, ["a note"])


@pytest.mark.parametrize("policy, fails", [("fail", True), ("warn", False), ("pass", False)])
def test_inconclusive_follows_the_policy(policy: str, fails: bool) -> None:
    message = Gate.failure_message([_outcome("PASS"), _outcome("INCONCLUSIVE", "p99 < 2ms")], policy)
    assert (message is not None) == fails
    if fails:
        assert "INCONCLUSIVE: 'p99 < 2ms'" in message and "a note" in message


@pytest.mark.parametrize("status", ["FAIL", "INVALID"])
@pytest.mark.parametrize("policy", ["fail", "warn", "pass"])
def test_fail_and_invalid_always_fail(status: str, policy: str) -> None:
    message = Gate.failure_message([_outcome(status)], policy)
    assert message is not None and f"{status}: 'p90 < 1ms'" in message


def test_new_and_pass_never_fail() -> None:
    assert Gate.failure_message([_outcome("PASS"), _outcome("NEW", "p99 <= 1.2x baseline")], "fail") is None
