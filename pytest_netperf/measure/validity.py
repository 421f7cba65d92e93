"""Whether measured rounds may be judged at all: no verdict without data.

A round of a saturated driver makes the measurement INVALID. A latency budget is INVALID
(never a PASS or a FAIL) when a round has too few latency samples (2xx responses) for
its metric: a percentile ``q``
needs at least ``ceil(100 / (100 - q))`` latency samples (p50: 2, p90: 10, p99: 100,
p99.9: 1000), so that at least one sample lies at or above it; the mean and the maximum
need one. An empty histogram is never a latency of 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Optional

from pytest_netperf.budget import metrics
from pytest_netperf.results.model import RoundResult


def samples_needed(metric: str) -> int:
    """Latency samples a round needs before ``metric`` means anything (0 for non-latency)."""
    known = metrics.get(metric)
    if not known.from_histogram:
        return 0
    q = known.percentile  # None for the mean and the maximum: one sample will do
    return 1 if q is None else math.ceil(100.0 / (100.0 - q) - 1e-9)


def saturation_problem(result: RoundResult) -> Optional[str]:
    """Why the driver's own health invalidates ``result``, or None."""
    if not result.client.saturated:
        return None
    return "the load driver was saturated: " + ("; ".join(result.client.saturation_reasons) or "no reason given")


def samples_problem(rounds: Iterable[RoundResult], metric: str) -> Optional[str]:
    """Why ``metric`` cannot be judged on ``rounds`` (too few latency samples), or None."""
    needed = samples_needed(metric)
    for index, result in enumerate(rounds, start=1):
        if result.latency.count < needed:
            return (
                f"round {index} has {result.latency.count} latency sample(s), fewer than the {needed} "
                f"that {metric} needs ({result.requests} requests completed, {result.ok} answered 2xx, "
                f"{result.error_count} errors, {result.censored} still unanswered at the end): "
                "no verdict without data"
            )
    return None
