"""A Locust task that raises on every call (issue #41): INVALID naming the exception, never a PASS."""

from __future__ import annotations

import importlib.util
from typing import Iterator

import pytest
from pytester_helpers import json_report, netperf_args

from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer

# Never import locust here: it monkey-patches the process with gevent. Look it up only.
if importlib.util.find_spec("locust") is None:  # pragma: no cover - depends on the machine
    pytest.skip("locust is not installed", allow_module_level=True)
try:
    find_driver_binary()
except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"netperf-driver (echo server) is not installed: {exc}", allow_module_level=True)


@pytest.fixture(scope="module")
def echo() -> Iterator[LocalEchoServer]:
    with LocalEchoServer() as server:
        yield server


@pytest.mark.parametrize("workers", [0, 1], ids=["one-process", "master-and-worker"])
def test_a_task_that_always_raises_is_invalid_not_a_pass(
    pytester: pytest.Pytester, echo: LocalEchoServer, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    pytester.makepyfile(
        flows="""
        from locust import FastHttpUser, task

        class Raiser(FastHttpUser):
            @task
            def boom(self):
                raise ValueError("the task is broken")
        """,
        test_flow="""
        import os
        import pytest

        @pytest.mark.netperf("errors == 0", driver="locust", locustfile="flows.py")
        def test_flow(netperf):
            netperf.measure(os.environ["NETPERF_TEST_URL"], connections=2, rate=20)
        """,
    )
    monkeypatch.setenv("NETPERF_TEST_URL", echo.url)
    options = netperf_args(2, 2, "1", "0.5", "--netperf-json=out.json", f"--netperf-locust-workers={workers}")
    result = pytester.runpytest_subprocess(*options)
    output = result.stdout.str()
    assert result.ret != 0, output[-3000:]
    rows = json_report(pytester, "out.json")["rows"]
    assert [row["verdict"] for row in rows] == ["INVALID"], rows
    assert "sent nothing" in output and "task exception: ValueError" in output, output[-3000:]
    assert "saturated" not in output, output[-3000:]
