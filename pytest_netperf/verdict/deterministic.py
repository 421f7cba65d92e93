"""Verdicts on deterministic costs (instructions, system calls per request) from repetitions.

A cost pass repeats each count a few times; the counts barely move, so there is no
sampling distribution to test against. The range of the repetitions bounds the value (or
the ratio of every candidate repetition to every reference repetition): PASS when the
whole range meets the budget, FAIL when none of it does, INCONCLUSIVE when the budget lies
inside the range (the tolerance is the measured spread, not a model).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Optional

from pytest_netperf.budget.grammar import Budget
from pytest_netperf.verdict.stats import Verdict
from pytest_netperf.verdict.status import Status

METHOD = "deterministic"


def _holds(value: float, op: str, threshold: float) -> bool:
    return {
        "<": value < threshold,
        "<=": value <= threshold,
        ">": value > threshold,
        ">=": value >= threshold,
    }.get(op, value == threshold)


def spread(values: Sequence[float]) -> float:
    """(largest - smallest) / median of repetitions; 0 for one value."""
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle else 0.0


def evaluate_repetitions(
    budget: Budget, candidate: Sequence[float], reference: Optional[Sequence[float]] = None
) -> Verdict:
    """Judge ``budget`` on the repetitions of a cost pass (``reference`` for a ratio budget)."""
    if not candidate or (budget.form == "ratio" and not reference):
        raise ValueError(f"{budget.text}: no repetitions to judge")
    if budget.form == "ratio":
        assert reference is not None
        if min(reference) <= 0:
            raise ValueError(f"{budget.text}: the reference counted {min(reference):g} per request")
        estimate = statistics.median(candidate) / statistics.median(reference)
        low, high = min(candidate) / max(reference), max(candidate) / min(reference)
        described = (
            f"{len(candidate)} repetitions each side; spread {spread(candidate):.2%} (candidate), "
            f"{spread(reference):.2%} (reference); the interval holds every candidate/reference ratio"
        )
    else:
        estimate = statistics.median(candidate)
        low, high = min(candidate), max(candidate)
        described = f"{len(candidate)} repetitions; spread {spread(candidate):.2%}; the interval is their range"
    if all(_holds(v, budget.op, budget.threshold) for v in (low, high)):
        status = Status.PASS
    elif not any(_holds(v, budget.op, budget.threshold) for v in (low, high)):
        status = Status.FAIL
    else:
        status = Status.INCONCLUSIVE
    note = f"deterministic count: {described}"
    if status is Status.INCONCLUSIVE:
        note += "; the budget lies inside that range (use a budget clear of the spread)"
    return Verdict(
        budget=budget,
        status=status,
        estimate=float(estimate),
        ci_low=float(low),
        ci_high=float(high),
        threshold=budget.threshold,
        n_rounds=len(candidate),
        p_value=0.0 if status is Status.FAIL else 1.0,
        method=METHOD,
        note=note,
        exact=True,
    )
