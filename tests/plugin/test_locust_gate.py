"""The Locust driver through the plugin: same budgets, same reports, says which driver measured."""

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

FAST = netperf_args(2, 2, "1", "0.5")


@pytest.fixture(scope="module")
def echo() -> Iterator[LocalEchoServer]:
    with LocalEchoServer() as server:
        yield server


def test_locust_driver_feeds_the_same_budgets_and_reports(
    pytester: pytest.Pytester, echo: LocalEchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        """
        import os
        import pytest

        @pytest.mark.netperf("errors == 0", "sockets <= 2", driver="locust")
        def test_with_locust(netperf):
            netperf.measure(os.environ["NETPERF_TEST_URL"], connections=2, rate=40)
        """
    )
    monkeypatch.setenv("NETPERF_TEST_URL", echo.url)
    result = pytester.runpytest_subprocess(*FAST, "--netperf-json=out.json")
    rows = json_report(pytester, "out.json")["rows"]
    assert {r["driver"] for r in rows} == {"locust"}
    verdicts = {r["budget"]: r["verdict"] for r in rows}
    # A Locust process starved of CPU flags itself saturated (INVALID); otherwise both budgets pass.
    assert set(verdicts.values()) <= {"PASS", "INVALID"}, verdicts
    if "INVALID" not in verdicts.values():
        assert result.ret == 0, result.stdout.str()[-2000:]


def test_locust_bad_user_class_is_a_clear_error(
    pytester: pytest.Pytester, echo: LocalEchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        flows="""
        from locust import FastHttpUser, task

        class Shopper(FastHttpUser):
            @task
            def home(self):
                self.client.get("/")
        """,
        test_flow="""
        import os
        import pytest

        @pytest.mark.netperf("errors == 0", driver="locust", locustfile="flows.py", user_class="Buyer")
        def test_flow(netperf):
            netperf.measure(os.environ["NETPERF_TEST_URL"], connections=1)
        """,
    )
    monkeypatch.setenv("NETPERF_TEST_URL", echo.url)
    result = pytester.runpytest_subprocess(*FAST)
    result.stdout.fnmatch_lines(["*user class Buyer not found*Shopper*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_too_few_remote_workers_is_invalid_naming_how_many_came(
    pytester: pytest.Pytester, echo: LocalEchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No worker attaches within the timeout: the test is INVALID with the count, nothing stays up."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pytester.makepyfile(
        """
        import os
        import pytest

        @pytest.mark.netperf("errors == 0", driver="locust")
        def test_remote(netperf):
            netperf.measure(os.environ["NETPERF_TEST_URL"], connections=2, rate=20)
        """
    )
    monkeypatch.setenv("NETPERF_TEST_URL", echo.url)
    result = pytester.runpytest_subprocess(
        *FAST,
        "--netperf-locust-remote-workers=2",
        f"--netperf-locust-master=127.0.0.1:{port}",
        "--netperf-locust-workers-timeout=1",
    )
    result.stdout.fnmatch_lines(
        [
            f"*INVALID*only 0 of 2 Locust workers attached to the master at 127.0.0.1:{port} "
            "within 1s*netperf locust-worker*"
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    with socket.socket() as probe:  # the master is gone: its port can be bound again
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--netperf-locust-master=nowhere"], "*--netperf-locust-master*expected BIND:PORT*nowhere*"),
        (["--netperf-locust-remote-workers=-2"], "*--netperf-locust-remote-workers*>= 0*"),
        (["--netperf-locust-workers-timeout=0"], "*--netperf-locust-workers-timeout*> 0*"),
    ],
)
def test_bad_locust_options_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*args)
    result.stderr.fnmatch_lines([message])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
