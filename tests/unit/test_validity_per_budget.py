"""Which figures a saturated load driver spoils (measure/validity.py): schedule lag spoils
latency only; a pegged driver spoils rates and latencies; a driver that could not send its
schedule spoils the sent rate and the client-side errors; nothing spoils CPU per request,
memory or the counted costs; a driver that names no kind spoils every timed figure."""

from __future__ import annotations

from dataclasses import replace

import pytest
from netperf_rounds import make_round

from pytest_netperf.measure.validity import (
    SPOILED_FAMILIES,
    Disturbance,
    Shortfall,
    disturbance,
    samples_needed,
    shortfalls,
)

NEVER_SPOILED = ("cpu_per_request[*]", "cpu_per_request[edge]", "mem[proxy]", "instructions_per_request[edge]")


def spoiled_by(*kinds: Shortfall) -> Disturbance:
    return Disturbance(kinds=frozenset(kinds), reason="r", by_runner=True)


@pytest.mark.parametrize(
    ("kind", "spoiled", "kept"),
    [
        (Shortfall.SCHEDULE, ("p50", "p90", "p99", "mean", "max", "jitter"), ("rps", "errors", "error_rate", "gbps")),
        (Shortfall.CLIENT_CPU, ("p90", "rps", "gbps", "pps", "cpu[edge]"), ("errors", "error_rate", "loss")),
        (Shortfall.SEND_RATE, ("rps", "errors", "error_rate", "loss", "gbps"), ("p90", "p99")),
    ],
)
def test_each_shortfall_spoils_its_figures(kind: Shortfall, spoiled: tuple[str, ...], kept: tuple[str, ...]) -> None:
    d = spoiled_by(kind)
    assert [m for m in spoiled if not d.spoils(m)] == []
    assert [m for m in kept + NEVER_SPOILED if d.spoils(m)] == []


def test_no_shortfall_spoils_what_was_served_and_paid_for() -> None:
    every = spoiled_by(*Shortfall)
    assert [m for m in NEVER_SPOILED if every.spoils(m)] == []
    assert set(SPOILED_FAMILIES) == set(Shortfall)


def test_a_healthy_round_has_no_disturbance_and_a_silent_driver_spoils_everything() -> None:
    healthy = make_round()
    assert disturbance(healthy) is None
    silent = replace(healthy.client, saturated=True, saturation_reasons=["busy"])
    assert shortfalls(silent) == frozenset(Shortfall)
    said = replace(silent, saturation_kinds=["schedule", "schedule"], cpu_bound=False)
    found = disturbance(replace(healthy, client=said))
    assert found is not None and found.kinds == {Shortfall.SCHEDULE} and found.by_runner
    assert found.describe() == "the load driver was saturated (waiting for CPUs others held): busy"


def test_percentiles_need_enough_samples() -> None:
    assert [samples_needed(m) for m in ("p50", "p90", "p99", "p999", "mean", "rps")] == [2, 10, 100, 1000, 1, 0]
