"""The sequential procedure: measure a batch, judge, add rounds while undecided.

:func:`run_sequential` is the one loop. The gate runs it with every budget of a
measurement; :func:`sequential_verdict` runs it for one budget on a callable that hands
out rounds, which is how the statistics are validated on synthetic data
(``benchmarks/stats_calibration.py``, ``tests/unit/test_stats.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Optional, TypeVar

from pytest_netperf import defaults
from pytest_netperf.budget.grammar import Budget, coerce_budget
from pytest_netperf.verdict.error_control import planned_looks
from pytest_netperf.verdict.stats import Verdict, evaluate
from pytest_netperf.verdict.status import Status

Key = TypeVar("Key")


@dataclass(frozen=True)
class SequentialPlan:
    """How many rounds to measure: ``min_rounds`` first, then ``batch`` more per look
    while a budget is INCONCLUSIVE, never beyond ``max_rounds``."""

    min_rounds: int = defaults.ROUNDS_MIN
    max_rounds: int = defaults.ROUNDS_MAX
    batch: int = defaults.ROUND_BATCH

    def __post_init__(self) -> None:
        planned_looks(self.min_rounds, self.max_rounds, self.batch)  # validates

    @classmethod
    def fixed(cls, rounds: int) -> SequentialPlan:
        """Exactly ``rounds`` rounds and a single look."""
        return cls(rounds, rounds, 1)

    @property
    def looks(self) -> int:
        """Number of looks: one at ``min_rounds``, then one per batch."""
        return planned_looks(self.min_rounds, self.max_rounds, self.batch)


def run_sequential(
    plan: SequentialPlan,
    measure_more: Callable[[int], None],
    judge: Callable[[int, int], Mapping[Key, Verdict]],
    on_more: Optional[Callable[[list[Key], int], None]] = None,
) -> Mapping[Key, Verdict]:
    """Run the procedure; returns the verdicts of the last look.

    ``measure_more(k)`` measures ``k`` more rounds; ``judge(look, looks)`` judges every
    budget on all rounds so far at that look's alpha. ``on_more(undecided, total)`` is
    told before more rounds are measured (for progress lines).
    """
    looks = plan.looks
    done, wanted = 0, plan.min_rounds
    verdicts: Mapping[Key, Verdict] = {}
    for look in range(1, looks + 1):
        measure_more(wanted)
        done += wanted
        verdicts = judge(look, looks)
        # a budget this runner cannot decide within the plan stops asking for rounds
        undecided = [key for key, v in verdicts.items() if v.status is Status.INCONCLUSIVE and not v.undecidable]
        if not undecided or done >= plan.max_rounds:
            break
        wanted = min(plan.batch, plan.max_rounds - done)
        if on_more is not None:
            on_more(undecided, done + wanted)
    return verdicts


class Rounds(NamedTuple):
    """Per-round values of a batch: the candidate and, for reference budgets, the
    reference measured in the same (interleaved) rounds."""

    candidate: Sequence[float]
    reference: Optional[Sequence[float]] = None


def sequential_verdict(
    budget: Budget | str,
    measure: Callable[[int], Rounds],
    baseline: Optional[Sequence[float]] = None,
    *,
    plan: Optional[SequentialPlan] = None,
    confidence: float = defaults.CONFIDENCE,
    hops: Optional[int] = None,
    spending: str = defaults.SPENDING,
) -> Verdict:
    """:func:`run_sequential` for one budget; ``measure(k)`` returns ``k`` more rounds."""
    parsed = coerce_budget(budget)
    plan = plan or SequentialPlan()
    candidate: list[float] = []
    reference: list[float] = []

    def measure_more(k: int) -> None:
        more = measure(k)
        if len(more.candidate) != k:
            raise ValueError(f"measure({k}) returned {len(more.candidate)} rounds")
        candidate.extend(float(v) for v in more.candidate)
        if more.reference is not None:
            reference.extend(float(v) for v in more.reference)

    def judge(look: int, looks: int) -> dict[str, Verdict]:
        verdict = evaluate(
            parsed,
            candidate,
            reference or None,
            baseline,
            confidence,
            looks,
            look,
            hops,
            spending=spending,
            max_rounds=plan.max_rounds,
        )
        return {parsed.text: verdict}

    return run_sequential(plan, measure_more, judge)[parsed.text]
