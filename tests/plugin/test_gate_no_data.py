"""No verdict without data: budgets that nothing measured are INVALID, never PASS.

Each case was a wrong PASS before: a server that never answers, latency of error
responses only, a per-hop budget measured at zero hops. Real driver, real echo server on
loopback; rounds are short.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pytester_helpers import json_report, netperf_args

from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer

try:
    find_driver_binary()
except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"netperf-driver is not installed: {exc}", allow_module_level=True)

FAST = netperf_args(2, 2, "1", "0.2", "--netperf-max-lag=100", "--netperf-json=out.json")


@pytest.fixture(scope="module")
def echo_server() -> Iterator[LocalEchoServer]:
    with LocalEchoServer() as server:
        yield server


@pytest.fixture
def echo(echo_server: LocalEchoServer, monkeypatch: pytest.MonkeyPatch) -> LocalEchoServer:
    monkeypatch.setenv("NETPERF_TEST_URL", echo_server.url)
    return echo_server


def _run(pytester: pytest.Pytester, echo: LocalEchoServer, source: str) -> tuple[pytest.RunResult, dict]:
    pytester.makepyfile(test_gate=source)
    result = pytester.runpytest_subprocess(*FAST)
    report = json_report(pytester, "out.json") if (pytester.path / "out.json").exists() else {}
    return result, report


def _verdicts(report: dict) -> dict[str, str]:
    return {row["budget"]: row["verdict"] for row in report.get("rows", [])}


def test_a_server_that_never_answers_is_not_a_pass(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    result, report = _run(
        pytester,
        echo,
        """
import os, pytest
from pytest_netperf import with_query

@pytest.mark.netperf("p99 < 10ms")
def test_silent(netperf):
    netperf.measure(with_query(os.environ["NETPERF_TEST_URL"], delay="4s"), connections=4, timeout=5)
""",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-2000:]
    assert _verdicts(report)["p99 < 10ms"] in ("INVALID", "FAIL")
    assert _verdicts(report)["p99 < 10ms"] != "PASS"
    result.stdout.fnmatch_lines(["*latency sample(s), fewer than the 100 that p99 needs*"])


def test_latency_of_error_responses_only_is_invalid(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    result, report = _run(
        pytester,
        echo,
        """
import os, pytest
from pytest_netperf import with_query

@pytest.mark.netperf("p90 < 50ms", "error_rate <= 100%")
def test_all_500(netperf):
    netperf.measure(with_query(os.environ["NETPERF_TEST_URL"], status=500), rate=100)
""",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-2000:]
    verdicts = _verdicts(report)
    assert verdicts["p90 < 50ms"] == "INVALID", verdicts
    assert verdicts["error_rate <= 100%"] == "PASS", verdicts
    result.stdout.fnmatch_lines(["*0 latency sample(s)*0 answered 2xx*no verdict without data*"])


def test_a_per_hop_budget_at_zero_hops_is_reported_invalid(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    result, report = _run(
        pytester,
        echo,
        """
import os, pytest
from pytest_netperf import with_query

@pytest.mark.netperf("p90_added <= 1us per hop")
def test_zero_hops(netperf):
    url = os.environ["NETPERF_TEST_URL"]
    netperf.compare(with_query(url, delay="5ms"), reference=url, rate=100, hops=0)
""",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-2000:]
    assert _verdicts(report) == {"p90_added <= 1us per hop": "INVALID"}
    result.stdout.fnmatch_lines(["*never judged*every measurement had hops=0*"])


def test_a_per_hop_budget_without_hops_is_an_error(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    result, _ = _run(
        pytester,
        echo,
        """
import os, pytest

@pytest.mark.netperf("p90_added <= 1us per hop")
def test_no_hops(netperf):
    url = os.environ["NETPERF_TEST_URL"]
    netperf.compare(url + "?delay=5ms", reference=url, rate=100)
""",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*'p90_added <= 1us per hop' is per hop: pass hops=N*"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("connections='many'", "*load option connections='many': expected a whole number >= 1*"),
        ("timeout=0", "*load option timeout=0: expected a finite number > 0*"),
        ("rate=-5", "*load option rate=-5: expected a finite number > 0*"),
        ("duration=float('nan')", "*load option duration=nan: expected a number > 0*"),
        ("arrival='bursty'", "*load option arrival='bursty': expected 'constant' or 'poisson'*"),
        ("rounds=1", "*rounds=1: expected a whole number >= 2*"),
        ("conections=4", "*unknown load option 'conections'*"),
    ],
)
def test_bad_load_options_name_the_option(
    pytester: pytest.Pytester, echo: LocalEchoServer, call: str, message: str
) -> None:
    result, _ = _run(
        pytester,
        echo,
        f"""
import os, pytest

@pytest.mark.netperf("p90 < 50ms")
def test_options(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], {call})
""",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([message])
