"""Listener document -> RoundResult: counters, latency, intervals, client health, errors."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from pytest_netperf.drivers.locust.in_locust.output_document import output_document
from pytest_netperf.drivers.locust.in_locust.window_recorder import WindowRecorder
from pytest_netperf.drivers.locust.result_builder import (
    RunContext,
    build_round_result,
)
from pytest_netperf.errors import DriverError
from pytest_netperf.results.model import RoundResult


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _process(
    node_id: str, busy_s: float, wall_s: float = 2.0, warned: Optional[float] = None, sockets: int = 2
) -> dict:
    return {
        "role": "worker",
        "node_id": node_id,
        "host": "loadgen",
        "pid": 4242,
        "cpu_user_s": busy_s * 0.7,
        "cpu_sys_s": busy_s * 0.3,
        "wall_s": wall_s,
        "locust_cpu_peak_percent": warned or 20.0,
        "locust_cpu_warning_percent": warned,
        "sockets_opened": sockets,
        "counted_clients": [],
    }


def _part(
    node_id: str,
    latencies_ms: list[float],
    busy_s: float = 0.5,
    warned: Optional[float] = None,
    iterations: int = 0,
    intended: Optional[int] = None,
) -> dict[str, Any]:
    clock = ManualClock()
    recorder = WindowRecorder(clock=clock, intended_by=None if intended is None else lambda t: round(t * intended / 2))
    recorder.start()
    for i, value in enumerate(latencies_ms):
        clock.now = 2.0 * i / len(latencies_ms)
        recorder.record_response(200, value, response_length=2)
    recorder.record_response(503, 1.0)
    recorder.record_error("reset")
    for _ in range(iterations):
        recorder.note_iteration()
    clock.now = 2.0
    recorder.stop()
    process = _process(node_id, busy_s, warned=warned)
    process.update(requests=recorder.requests, errors=recorder.non_2xx + sum(recorder.errors.values()))
    return {"window": recorder.payload(), "process": process}


def _context(rate: Optional[float] = None, users: int = 4, workers: int = 2) -> RunContext:
    return RunContext(
        url="http://127.0.0.1:8080/",
        users=users,
        workers=workers,
        rate=rate,
        arrival="constant",
        warmup_s=1.0,
        duration_s=2.0,
        interval_s=1.0,
        timeout_s=5.0,
        locustfile=None,
        user_class="NetperfGetUser",
        notes=("a note",),
    )


def _document(parts: list[dict], expected: Optional[list[str]] = None, rate: float = 0.0) -> dict:
    master = _process("master", busy_s=0.02, sockets=0)
    master["role"] = "master"
    return output_document(
        role="master",
        window_s=2.0,
        rate=rate,
        users=4,
        workers_expected=expected if expected is not None else [p["process"]["node_id"] for p in parts],
        parts=parts,
        master_process=master,
        locust_version="2.47.0",
    )


def test_counters_latency_and_intervals_of_two_workers() -> None:
    parts = [_part("w1", [0.2] * 100), _part("w2", [0.4] * 100)]
    result = build_round_result(_document(parts), _context(), "2.47.0")
    assert result.driver == "locust" and result.mode == "closed"
    assert result.requests == 2 * 101 and result.ok == 200 and result.non_2xx == 2
    assert result.errors == {"reset": 2}
    assert result.status_codes == {"200": 200, "503": 2}
    assert result.achieved_rps == pytest.approx(202 / 2.0)
    assert result.latency.count == 200
    assert result.latency.p50_ns == pytest.approx(200_000, abs=1_000)
    assert result.latency.p90_ns == pytest.approx(400_000, abs=1_000)
    assert result.service_time is not None and result.service_time.count == 200
    assert result.schedule_lag is None
    assert result.sockets_opened == 4 and result.reconnects == 0
    assert result.bytes_received == 400
    assert [interval.requests for interval in result.intervals] == [100, 102]
    assert result.client.threads == 3 and not result.client.saturated
    assert result.config["notes"] == ["a note"] and result.config["workers"] == 2
    assert RoundResult.from_dict(result.to_dict()) == result


def test_busy_process_and_locust_warning_saturate() -> None:
    parts = [_part("w1", [0.2] * 10, busy_s=1.95), _part("w2", [0.2] * 10, warned=97.0)]
    health = build_round_result(_document(parts), _context(), "x").client
    assert health.saturated
    assert any("used 97.5% of a core" in reason for reason in health.saturation_reasons)
    assert any("above 90% (97%)" in reason for reason in health.saturation_reasons)


def test_paced_round_below_99_percent_of_the_rate_saturates() -> None:
    ok = build_round_result(_document([_part("w1", [0.2] * 10, iterations=200)], rate=100.0), _context(rate=100.0), "x")
    assert ok.mode == "open" and ok.requested_rps == 100.0
    assert ok.client.achieved_ratio == pytest.approx(1.0) and not ok.client.saturated
    slow = build_round_result(
        _document([_part("w1", [0.2] * 10, iterations=180)], rate=100.0), _context(rate=100.0), "x"
    )
    assert slow.client.achieved_ratio == pytest.approx(0.9)
    assert slow.client.saturation_reasons == [
        "achieved 90.0% of requested rate (< 99%, less one paced iteration per user at the window's edge)"
    ]


def test_window_edges_cut_at_most_one_paced_iteration_per_user() -> None:
    """CI saw 97.9% at 100/s over 1 s with 4 users on two workers: the window's edges, not a slow client."""

    def health(iterations: int):
        document = _document([_part("w1", [0.2] * 10, iterations=iterations)], rate=100.0)
        return build_round_result(document, _context(rate=100.0, users=4), "x").client

    # 200 expected over the context's 2 s: the floor is 0.99 * 200 - 4 = 194
    assert not health(194).saturated
    assert health(193).saturated


def test_poisson_rounds_are_judged_against_the_starts_their_schedules_intended() -> None:
    """CI saw 84.9% at 100/s over 1 s: Poisson schedules had drawn about 85 starts, not 100."""

    def health(iterations: int, intended: int):
        document = _document([_part("w1", [0.2] * 10, iterations=iterations, intended=intended)], rate=100.0)
        return build_round_result(document, _context(rate=100.0, users=4), "x").client

    punctual = health(171, intended=172)
    assert punctual.achieved_ratio == pytest.approx(171 / 172) and not punctual.saturated
    assert health(225, intended=226).achieved_ratio == pytest.approx(225 / 226)
    late = health(160, intended=172)  # floor 0.99 * 172 - 4
    assert late.saturated and late.achieved_ratio == pytest.approx(160 / 172)


def test_event_loop_lag_above_the_bound_saturates() -> None:
    late, punctual = _part("w1", [0.2] * 10, iterations=100), _part("w2", [0.2] * 10, iterations=100)
    late["process"]["loop_lag_p99_ns"] = 12_500_000.0
    punctual["process"]["loop_lag_p99_ns"] = 5_300_000.0  # a busy 2-core machine at a moderate rate
    punctual["process"]["loop_lag_max_ns"] = 48_000_000.0  # one stall: under the P99, in the config
    result = build_round_result(_document([late, punctual], rate=100.0), _context(rate=100.0), "x")
    assert result.client.saturation_reasons == [
        "event loop lag p99 12500 us in locust worker pid 4242 on loadgen above bound 10000 us"
        " (responses wait for the client)"
    ]
    assert result.config["loop_lag_p99_ns"] == [12_500_000.0, 5_300_000.0]
    assert result.config["loop_lag_max_ns"] == [None, 48_000_000.0]
    assert not build_round_result(_document([punctual]), _context(), "x").client.saturated


def test_a_worker_without_report_is_an_error() -> None:
    document = _document([_part("w1", [0.2])], expected=["w1", "w2"])
    with pytest.raises(DriverError, match=r"1 of 2 Locust workers sent no measurement \(missing: w2\)"):
        build_round_result(document, _context(), "x")


def test_unknown_schema_is_an_error() -> None:
    document = _document([_part("w1", [0.2])])
    document["schema"] = "something/9"
    with pytest.raises(DriverError, match="schema"):
        build_round_result(document, _context(), "x")


def test_a_worker_missing_from_the_round_is_named_with_the_reason() -> None:
    document = _document([_part("w1", [0.2] * 10)], expected=["w1", "w2"])
    document["workers_missing"] = {"w2": "stopped sending heartbeats during the round (died or unreachable)"}
    with pytest.raises(DriverError, match=r"1 of 2 .*w2 \(stopped sending heartbeats.*invalid"):
        build_round_result(document, _context(), "x")


def test_a_worker_that_served_nothing_makes_the_round_invalid() -> None:
    idle = _part("w2", [])
    idle["process"].update(requests=0, errors=0)
    with pytest.raises(DriverError, match="w2 on loadgen completed no request"):
        build_round_result(_document([_part("w1", [0.2] * 10), idle]), _context(), "x")


def test_bytes_sent_and_workers_served_are_reported() -> None:
    parts = [_part("w1", [0.2] * 10), _part("w2", [0.2] * 10)]
    for part in parts:
        part["window"]["bytes_sent"] = 1000
    result = build_round_result(_document(parts), _context(), "x")
    assert result.bytes_sent == 2000
    assert [w["id"] for w in result.config["workers_served"]] == ["w1", "w2"]
