"""A rate relative to the machine: ``rate="25%"`` is that share of the capacity measured first.

A latency budget at a fixed rate holds only below the knee, where requests do not queue for
the CPUs; a rate tuned on one machine sits above the knee of one half as fast. With a
:class:`~pytest_netperf.measure.load_options.CapacityShare` the gate measures, before the
rounds, every series of the measurement in one closed-loop run over the shape's
connections, and loads all of them in open loop at the share of the lowest capacity, so
the sides of a comparison get the same rate and the slowest stays below its knee.
"""

from __future__ import annotations

from dataclasses import replace

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import DriverError, InvalidMeasurement
from pytest_netperf.measure.load_options import CapacityShare
from pytest_netperf.measure.model import Measurement

#: Seconds of the closed-loop capacity run (after the shape's warmup, at most 0.5 s).
CAPACITY_RUN_S = 1.0


def capacity_shape(shape: LoadShape) -> LoadShape:
    """The closed-loop shape that measures a series' capacity: its connections, 1 s, and none
    of the open loop's options (a real-time closed loop would starve the target's CPU)."""
    extra = {k: v for k, v in shape.extra.items() if k not in ("realtime", "seed")}
    return replace(shape, rate=None, duration_s=CAPACITY_RUN_S, warmup_s=min(shape.warmup_s, 0.5), extra=extra)


def resolve_capacity_share(m: Measurement, share: CapacityShare) -> str:
    """Measure the capacity of every series of ``m``, set their rate to ``share`` of the lowest,
    and return the note that says so. InvalidMeasurement when a series answers nothing."""
    capacities: dict[str, float] = {}
    for series in m.series():
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
    lowest = min(capacities.values())
    rate = share.fraction * lowest
    for series in m.series():
        series.shape = replace(series.shape, rate=rate)
    sides = ", ".join(f"{label} {rps:,.0f}" for label, rps in capacities.items())
    return (
        f"rate={share} of the measured capacity: {rate:,.0f} requests/s open loop (closed-loop capacity "
        f"at {m.candidate.shape.connections} connections, requests/s: {sides})"
    )
