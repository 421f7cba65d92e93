"""A rate relative to the machine: ``rate="25%"`` is that share of the capacity measured first.

A latency budget at a fixed rate holds only below the knee, where requests do not queue for
the CPUs; a rate tuned on one machine sits above the knee of one half as fast. With a
:class:`~pytest_netperf.measure.load_options.CapacityShare` the gate measures, before the
rounds, every series of the measurement in one closed-loop run over the shape's
connections, and loads all of them in open loop at the share of the lowest capacity, so
the sides of a comparison get the same rate and the slowest stays below its knee. The
capacity run warms a series up: its first round takes only the warmup of later rounds.

A :class:`CapacityMemory` (one per session) keeps what was measured: a series measured again
within :data:`CAPACITY_REUSE_S`, by the same driver from the same place with the same
connections, takes the capacity already measured, and the note says when and by whom. So a
test that loads a target at 0.6x and 2x the share another test just used loads it at exactly
those multiples of its rate, and does not spend a capacity run on it again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, Optional

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import DriverError, InvalidMeasurement
from pytest_netperf.measure.load_options import CapacityShare
from pytest_netperf.measure.model import Measurement, Series

#: Seconds of the closed-loop capacity run (after the shape's warmup, at most 0.5 s). Half a
#: second holds thousands of requests even on a deep sidecar chain (600/s); the rate is a
#: share of it, and the same chain's capacity moved 20-35% from run to run at 1 s as well.
CAPACITY_RUN_S = 0.5
#: Seconds a measured capacity is taken again for the same series instead of measuring anew.
CAPACITY_REUSE_S = 120.0


@dataclass(frozen=True)
class KnownCapacity:
    """A series' capacity as measured: requests/s, when (monotonic seconds), and by what."""

    rps: float
    measured_at: float
    by: str


class CapacityMemory:
    """The capacities measured in one session, by series (driver, where it runs, URL, shape),
    each taken again for :data:`CAPACITY_REUSE_S` seconds after it was measured."""

    def __init__(self, max_age_s: float = CAPACITY_REUSE_S, now: Callable[[], float] = time.monotonic) -> None:
        self.max_age_s = max_age_s
        self.now = now
        self._known: dict[str, KnownCapacity] = {}

    def recall(self, key: str) -> Optional[KnownCapacity]:
        """The capacity measured for ``key`` no longer than ``max_age_s`` ago, or None."""
        known = self._known.get(key)
        if known is None or self.now() - known.measured_at > self.max_age_s:
            return None
        return known

    def remember(self, key: str, rps: float, by: str) -> None:
        """``key`` measured ``rps`` just now, by ``by`` (a test id and measurement key)."""
        self._known[key] = KnownCapacity(rps, self.now(), by)


def capacity_shape(shape: LoadShape) -> LoadShape:
    """The closed-loop shape that measures a series' capacity: its connections, 1 s, and none
    of the open loop's options (a real-time closed loop would starve the target's CPU)."""
    extra = {k: v for k, v in shape.extra.items() if k not in ("realtime", "seed")}
    return replace(shape, rate=None, duration_s=CAPACITY_RUN_S, warmup_s=min(shape.warmup_s, 0.5), extra=extra)


def capacity_key(series: Series) -> str:
    """What makes two series' capacity runs the same: driver, where it runs, URL and shape."""
    return f"{series.driver}|{series.where}|{series.url}|{capacity_shape(series.shape)!r}"


def resolve_capacity_share(
    m: Measurement, share: CapacityShare, memory: Optional[CapacityMemory] = None, by: str = ""
) -> str:
    """Measure the capacity of every series of ``m`` (or take it from ``memory``), set their rate
    to ``share`` of the lowest, and return the note that says so; ``by`` names the measurement
    in ``memory``. InvalidMeasurement when a series answers nothing."""
    capacities: dict[str, float] = {}
    reused: dict[str, str] = {}
    for series in m.series():
        known = memory.recall(capacity_key(series)) if memory is not None else None
        if memory is not None and known is not None:
            capacities[series.label] = known.rps
            reused[series.label] = f" (measured {memory.now() - known.measured_at:.0f} s before, by {known.by})"
            continue
        where = f"{series.label} {series.url} (capacity for rate={share})"
        try:
            result = series.driver_or_fail(where).run(series.url, capacity_shape(series.shape))
        except DriverError as exc:
            raise InvalidMeasurement(f"{where}: {exc}") from exc
        if result.ok <= 0 or result.achieved_rps <= 0:
            raise InvalidMeasurement(
                f"{where}: no successful response in {CAPACITY_RUN_S:g} s closed loop "
                f"({result.requests} requests, {result.error_count} errors): no capacity to take a share of"
            )
        capacities[series.label] = result.achieved_rps
        series.warm = True
        if memory is not None:
            memory.remember(capacity_key(series), result.achieved_rps, by)
    lowest = min(capacities.values())
    rate = share.fraction * lowest
    for series in m.series():
        series.shape = replace(series.shape, rate=rate)
    sides = ", ".join(f"{label} {rps:,.0f}{reused.get(label, '')}" for label, rps in capacities.items())
    return (
        f"rate={share} of the measured capacity: {rate:,.0f} requests/s open loop (closed-loop capacity "
        f"at {m.candidate.shape.connections} connections, requests/s: {sides})"
    )
