"""A round that sent nothing is no measurement (issue #41): every driver says so, never a PASS.

A Locust task that raises on every call used to give rounds of 0 requests and 0 errors, so
``errors == 0`` passed; its exceptions now count as errors by kind, and the round is refused
with a reason that names them (not the client's saturation).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from netperf_rounds import make_round

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust.in_locust.error_kinds import task_exception_kind
from pytest_netperf.drivers.locust.in_locust.output_document import output_document
from pytest_netperf.drivers.locust.in_locust.window_recorder import WindowRecorder
from pytest_netperf.drivers.locust.result_builder import RunContext, build_round_result
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.errors import DriverError
from pytest_netperf.runtime.commands import CommandOutcome


def _silent(result_rps: float = 0.0, **changes: Any):
    return dataclasses.replace(make_round(rps=result_rps), ok=0, non_2xx=0, status_codes={}, **changes)


def test_a_round_with_requests_sent_something() -> None:
    assert make_round().nothing_sent() is None


def test_a_round_without_a_request_or_an_error_sent_nothing() -> None:
    reason = _silent().nothing_sent()
    assert reason is not None
    assert "sent nothing" in reason and "0 requests" in reason


def test_transport_errors_and_censored_requests_were_sent() -> None:
    assert _silent(errors={"connect_refused": 3}).nothing_sent() is None
    assert _silent(censored=2).nothing_sent() is None


def test_task_exceptions_are_not_requests_and_are_named() -> None:
    reason = _silent(errors={"task exception: ValueError": 40}).nothing_sent()
    assert reason is not None
    assert "sent nothing" in reason
    assert "task exception: ValueError" in reason and "40" in reason


def test_task_exception_kind_names_the_exception_type() -> None:
    assert task_exception_kind(ValueError("boom")) == "task exception: ValueError"
    assert task_exception_kind(KeyError("x")) == "task exception: KeyError"


# ----------------------------------------------------------------- Locust
class _Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def _raising_document(lag_ns: float = 0.0, busy_s: float = 0.1) -> dict[str, Any]:
    clock = _Clock()
    recorder = WindowRecorder(clock=clock)
    recorder.start()
    for i in range(20):
        clock.now = i * 0.05
        recorder.record_error(task_exception_kind(ValueError("boom")))
    clock.now = 1.0
    recorder.stop()
    process = {
        "role": "local",
        "node_id": "local",
        "host": "loadgen",
        "pid": 4242,
        "cpu_user_s": busy_s,
        "cpu_sys_s": 0.0,
        "wall_s": 1.0,
        "locust_cpu_peak_percent": 10.0,
        "locust_cpu_warning_percent": None,
        "sockets_opened": 0,
        "counted_clients": [],
        "loop_lag_p99_ns": lag_ns,
        "requests": recorder.requests,
        "errors": sum(recorder.errors.values()),
    }
    return output_document(
        role="local",
        window_s=1.0,
        rate=20.0,
        users=2,
        workers_expected=[],
        parts=[{"window": recorder.payload(), "process": process}],
    )


def _context() -> RunContext:
    return RunContext(
        url="http://127.0.0.1:8080/",
        users=2,
        workers=0,
        rate=20.0,
        arrival="constant",
        warmup_s=0.5,
        duration_s=1.0,
        interval_s=1.0,
        timeout_s=5.0,
        locustfile="raising.py",
        user_class=None,
    )


def test_a_locust_round_whose_every_task_raised_is_refused_naming_the_exception() -> None:
    with pytest.raises(DriverError) as info:
        build_round_result(_raising_document(), _context(), "2.47.0")
    text = str(info.value)
    assert "sent nothing" in text
    assert "task exception: ValueError" in text


def test_a_raising_task_is_not_blamed_on_a_saturated_client() -> None:
    """Locust logs every task exception's traceback: a busy event loop is the task's doing."""
    with pytest.raises(DriverError) as info:
        build_round_result(_raising_document(lag_ns=50e6, busy_s=0.97), _context(), "2.47.0")
    text = str(info.value)
    assert "task exception: ValueError" in text
    assert "saturated" not in text and "event loop lag" not in text


# ----------------------------------------------------------------- Rust
class _Answer:
    """A command runner that prints one Rust driver document (the driver's JSON keys)."""

    where = "host"

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document

    def run(self, argv: list[str], timeout_s: float) -> CommandOutcome:
        return CommandOutcome(0, json.dumps(self.document), "")


def _rust_document(requests: int) -> dict[str, Any]:
    latency = {"count": requests, "min": 0, "mean": 0, "max": 0, "stdev": 0, "p50": 0, "p90": 0, "p99": 0, "p999": 0}
    return {
        "schema_version": 1,
        "tool": {"version": "0.1.0"},
        "config": {"url": "http://127.0.0.1:8080/", "mode": "open", "connections": 1},
        "summary": {
            "duration_s": 1.0,
            "requested_rps": 0.5,
            "achieved_rps": float(requests),
            "requests": requests,
            "ok": requests,
            "non_2xx": 0,
            "status_codes": {"200": requests} if requests else {},
            "errors": {},
            "sockets_opened": 1,
        },
        "client": {},
        "latency_ns": latency,
    }


def test_a_rust_round_that_sent_nothing_is_a_driver_error() -> None:
    driver = RustDriver(runner=_Answer(_rust_document(0)))
    with pytest.raises(DriverError, match="sent nothing"):
        driver.run("http://127.0.0.1:8080/", LoadShape(rate=0.5, duration_s=1.0))


def test_a_rust_round_with_requests_is_a_result() -> None:
    driver = RustDriver(runner=_Answer(_rust_document(3)))
    assert driver.run("http://127.0.0.1:8080/", LoadShape(rate=3, duration_s=1.0)).requests == 3


def test_a_saturated_client_whose_tasks_raised_names_the_task_exceptions() -> None:
    """Some requests sent, but a task that raises busies Locust with tracebacks: the reason says so."""
    document = _raising_document(lag_ns=50e6)
    window = document["window"]
    window["requests"], window["ok"], window["status_codes"] = 5, 5, {"200": 5}
    result = build_round_result(document, _context(), "2.47.0")
    assert result.client.saturated
    assert any("task exception: ValueError" in reason for reason in result.client.saturation_reasons)
    assert result.errors == {"task exception: ValueError": 20}
