"""Recorded paired rounds replayed through the real sequential procedure as simulated gates.

Each gate draws moving blocks of consecutive pairs (so drift and the correlation of
neighbouring rounds stay) from the allowed block starts, runs the plan and judges a final
INCONCLUSIVE with the given policy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pytest_netperf.budget.grammar import Budget
from pytest_netperf.verdict.policy import undecided_fails
from pytest_netperf.verdict.sequential import Rounds, SequentialPlan, sequential_verdict
from pytest_netperf.verdict.status import Status


def replayed_gates(
    budget: Budget,
    cand: np.ndarray,
    ref: np.ndarray,
    block_starts: Sequence[int],
    *,
    plan: SequentialPlan,
    policy: str,
    gates: int,
    block: int,
    seed: int,
) -> tuple[float, float]:
    """Share of the replayed gates that end red, and their mean rounds."""
    rng = np.random.default_rng(seed)
    reds = rounds = 0
    for _ in range(gates):
        stream: list[int] = []

        def measure(k: int, stream: list[int] = stream) -> Rounds:
            while len(stream) < k:
                start = block_starts[int(rng.integers(0, len(block_starts)))]
                stream.extend(range(start, start + block))
            taken, stream[:] = stream[:k], stream[k:]
            return Rounds(candidate=cand[taken].tolist(), reference=ref[taken].tolist())

        verdict = sequential_verdict(budget, measure, plan=plan)
        rounds += verdict.n_rounds
        reds += verdict.status is Status.FAIL or (
            verdict.status is Status.INCONCLUSIVE and undecided_fails(budget, verdict, policy)
        )
    return reds / gates, rounds / gates
