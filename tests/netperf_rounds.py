"""Round results built from real HdrHistograms, for the baseline, report and CLI tests.

The latencies are synthetic (seeded lognormal samples) but go through the same
HdrHistogram encoding the driver uses, so decoding and percentiles are exercised.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import statistics
from typing import Any, Optional

from hdrh.histogram import HdrHistogram

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.model import BaselineLookup
from pytest_netperf.measure.outcomes import BudgetOutcome
from pytest_netperf.results.model import ClientHealth, LatencySummary, RoundResult
from pytest_netperf.results.runner import RunnerState


def latency_summary(median_ns: float, samples: int = 500, seed: int = 1) -> LatencySummary:
    """A summary whose numbers come from a real histogram of lognormal samples."""
    return dataclasses.replace(_cached_summary(median_ns, samples, seed))


@functools.lru_cache(maxsize=256)
def _cached_summary(median_ns: float, samples: int, seed: int) -> LatencySummary:
    # Recording in pure Python is slow; the same inputs always give the same summary.
    rng = random.Random(seed)
    histogram = HdrHistogram(1_000, 60_000_000_000, 3)
    values = [int(median_ns * rng.lognormvariate(0.0, 0.35)) for _ in range(samples)]
    for value in values:
        histogram.record_value(value)
    # (hdrh's own mean/stdev walk every bucket in Python: slow; the samples are at hand.)
    return LatencySummary(
        count=histogram.get_total_count(),
        min_ns=float(min(values)),
        mean_ns=float(statistics.fmean(values)),
        max_ns=float(max(values)),
        stdev_ns=float(statistics.pstdev(values)),
        p50_ns=float(histogram.get_value_at_percentile(50)),
        p90_ns=float(histogram.get_value_at_percentile(90)),
        p99_ns=float(histogram.get_value_at_percentile(99)),
        p999_ns=float(histogram.get_value_at_percentile(99.9)),
        histogram=histogram.encode().decode("ascii"),
    )


def make_round(
    rps: float = 10_000.0,
    median_ns: float = 500_000.0,
    errors: int = 0,
    seed: int = 1,
    url: str = "http://127.0.0.1:8080/",
) -> RoundResult:
    """One closed-loop round of ``rps`` responses/s over 5 s."""
    requests = int(rps * 5)
    return RoundResult(
        driver="rust",
        target=url,
        mode="closed",
        duration_s=5.0,
        requested_rps=None,
        achieved_rps=rps,
        requests=requests,
        ok=requests - errors,
        non_2xx=errors,
        status_codes={"200": requests - errors, **({"504": errors} if errors else {})},
        errors={},
        sockets_opened=100,
        reconnects=0,
        bytes_sent=requests * 80,
        bytes_received=requests * 200,
        latency=latency_summary(median_ns, seed=seed),
        client=ClientHealth(cpu_util=0.4, threads=2),
        connections=100,
        driver_version="0.1.0",
        config={"url": url, "mode": "closed", "connections": 100},
    )


def make_rounds(n: int, rps: float = 10_000.0, median_ns: float = 500_000.0, seed: int = 1) -> list[RoundResult]:
    """``n`` rounds with slightly different throughput and latency."""
    return [make_round(rps=rps * (1 + 0.01 * (i % 3 - 1)), median_ns=median_ns, seed=seed + i) for i in range(n)]


#: A machine fingerprint as a baseline stores it (the baseline and CLI tests).
FINGERPRINT = {
    "cpu_model": "Example CPU 3000",
    "logical_cores": 2,
    "kernel": "6.1.0-18-amd64",
    "docker_version": "20.10.24",
    "image_digests": {"nginx": "sha256:aaa"},
    "python": "3.11.2",
    "plugin_version": "0.1.0",
    "driver_version": "0.1.0",
}


def runner_state(
    outside: float,
    stack: float | None = 0.3,
    steal: float = 0.0,
    started: float = 100.0,
    driver: float = 0.2,
    load: float = 1.0,
) -> RunnerState:
    """A 2-core runner over a 1 s round: the driver used ``driver`` cores, the stack ``stack``
    (None: a plain URL's server, unread), other processes ``outside``."""
    return RunnerState(
        cores=2,
        span_s=1.0,
        process_cores=driver + (stack or 0.0) + outside,
        interrupt_cores=0.05,
        steal_share=steal,
        load_avg_1m=load,
        driver_cores=driver,
        stack_cores=stack,
        started_at=started,
    )


def six_rounds_judged(
    driver: Any, budget: str, baseline: Optional[BaselineLookup] = None, url: str = "http://10.0.0.2/", **gate: Any
) -> BudgetOutcome:
    """``budget`` judged by a gate on six rounds of ``driver`` (any object with the driver's
    ``run``) at ``url``, against ``baseline`` when given; ``gate``: more Gate arguments."""
    settings = GateSettings(rounds_min=6, rounds_max=6, round_duration_s=0.1, warmup_s=0.0)
    g = Gate(
        "t.py::test",
        [parse_budget(budget)],
        settings,
        driver_factory=lambda name, runner: driver,
        baseline_lookup=baseline,
        **gate,
    )
    g.measure(url)
    (outcome,) = g.finish()
    return outcome
