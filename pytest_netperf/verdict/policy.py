"""What a final INCONCLUSIVE does to the gate: the undecided-budget policies.

``change`` (the default): red only when the point estimate is outside the budget *and*
the rounds show a change in the harmful direction from no change (1.0x, a loss of 0,
nothing added): a one-sided p-value below :data:`CHANGE_LEVEL_SHARE` of ``1 - confidence``.
An unchanged stack rarely goes red on a budget it cannot decide, whatever the noise; a
regression clearly past the budget still goes red. Absolute budgets (``p99 < 5ms``) have
no "no change" point and are judged as under ``estimate``; so, in effect, are added amounts
(``p90_added``, ``rps_loss``) between two different paths, whose "nothing added" the rounds
always reject (sidecars always add some latency): such a budget is red whenever its estimate
lies past it (the sidecar example's per-hop budgets therefore warn instead). A budget the busy runner left
no round to judge (every round's driver behind its schedule, measure/validity.py) is green
under every policy but ``fail``: its note says the runner could not decide it.
``estimate``: red when the point estimate is outside the budget (on an unchanged stack
with a tight budget and noisy rounds, about one gate in four: a coin flip). ``fail``:
always red. ``warn`` and ``pass``: green (``warn`` with a warning).
Rates of each on synthetic and recorded rounds: ``benchmarks/inconclusive_policy.py``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

from pytest_netperf.budget.grammar import Budget

if TYPE_CHECKING:  # the policy names are read where numpy is absent (the Locust worker's CLI)
    from pytest_netperf.verdict.stats import Verdict

#: Every policy name, the default first.
POLICIES: tuple[str, ...] = ("change", "estimate", "fail", "warn", "pass")
#: ``change`` tests "no change" at this share of the verdict's alpha (1% one-sided at 95%
#: confidence). Chosen on recorded A/A rounds of the 2-core runner (tests/unit/test_aa_replay.py),
#: whose neighbouring rounds correlate (lag 1: +0.2) and whose CPU and P90 rounds have heavy
#: tails, at a budget 2.5% from no change: at the full alpha 5.8% (CPU per request) and 6.2%
#: (P90) of unchanged gates went red; at half of it 4.2% and 3.8%, and 7.2% and 6.0% once
#: the procedure kept measuring budgets a regression could still fail
#: (:data:`~pytest_netperf.verdict.stats.UNDECIDABLE_REACH_SE`); at a fifth, 3.5% and 4.0%.
CHANGE_LEVEL_SHARE = 0.2


def undecided_fails(budget: Budget, verdict: Optional[Verdict], policy: str) -> bool:
    """Whether a final INCONCLUSIVE verdict of ``budget`` turns the gate red under ``policy``."""
    if policy not in POLICIES:
        raise ValueError(f"unknown INCONCLUSIVE policy {policy!r}; expected one of {', '.join(POLICIES)}")
    if policy == "fail":
        return True
    if policy in ("warn", "pass"):
        return False
    if verdict is None:
        return True  # no estimate at all: nothing says the budget holds
    if verdict.excused:
        return False  # the runner left too few rounds, or explains the miss (the note says so)
    outside = not budget.satisfied_by(verdict.estimate)
    if policy == "estimate" or math.isnan(verdict.p_change):
        return outside
    return outside and verdict.p_change < CHANGE_LEVEL_SHARE * (1.0 - verdict.confidence)
