"""Accepting a regression (issue #40) end to end: a gate that FAILs (an absolute p50 budget
the loopback echo server cannot meet) exits 1 without acceptance and 0 with
``--netperf-accept`` or ``NETPERF_ACCEPT``, its row ACCEPTED with the reason, counted in the
summary line, in the JSON report and as a warning; INVALID is never accepted; a malformed
value is a usage error naming where it was given. Real driver, rounds of 0.3 s. (The
``Netperf-Accept:`` trailer needs git: ``integration/test_accept_trailer.py``.)
"""

from __future__ import annotations

import json

import pytest
from pytester_helpers import json_report, netperf_args

from pytest_netperf.runtime.local import LocalEchoServer

FAST = netperf_args(3, 3, "0.3", "0.1", "--netperf-max-lag=100", "--netperf-json=out.json")

GATES = """
import os
import pytest

@pytest.mark.netperf("p50 < 1us", "p50 < 50ms")
def test_echo_latency(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], rate=200, connections=2)

@pytest.mark.netperf("p50 < 50ms")
def test_nothing_listens(netperf):
    netperf.measure("http://127.0.0.1:9/", rate=100)
"""
FAILING = "test_gates.py::test_echo_latency"


@pytest.fixture
def gates(pytester: pytest.Pytester, echo: LocalEchoServer, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("NETPERF_ACCEPT", raising=False)
    pytester.makepyfile(test_gates=GATES)
    return pytester


def _verdicts(pytester: pytest.Pytester) -> dict[str, str]:
    return {row["budget"]: row["verdict"] for row in json_report(pytester, "out.json")["rows"]}


def test_a_fail_without_acceptance_fails_and_says_how_to_accept(gates: pytest.Pytester) -> None:
    result = gates.runpytest_subprocess(*FAST, FAILING)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _verdicts(gates) == {"p50 < 1us": "FAIL", "p50 < 50ms": "PASS"}
    result.stdout.fnmatch_lines(["*--netperf-accept 'REASON' (NETPERF_ACCEPT in CI*", "*1 passed, 1 failed, 0 inconc*"])
    table = result.stdout.str().split("= netperf =")[-1]
    assert "ACCEPTED" not in table and "accepted" not in table


def test_the_option_accepts_the_fail_visibly(gates: pytest.Pytester) -> None:
    result = gates.runpytest_subprocess(*FAST, "--netperf-accept", "TLS 1.3 only, see #88", FAILING)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*NetperfAcceptedWarning: netperf: test_gates.py::test_echo_latency: ACCEPTED 'p50 < 1us': "
            "FAIL accepted as an intended regression by --netperf-accept: TLS 1.3 only, see #88*",
        ]
    )
    table = result.stdout.str().split("= netperf =")[-1]
    assert "ACCEPTED" in table
    assert "1 passed, 0 failed, 1 accepted, 0 inconclusive, 0 invalid, 0 new" in table
    assert "netperf: 1 budget ACCEPTED by --netperf-accept: TLS 1.3 only, see #88" in table
    rows = {row["budget"]: row for row in json_report(gates, "out.json")["rows"]}
    assert rows["p50 < 1us"]["verdict"] == "ACCEPTED"
    assert rows["p50 < 1us"]["notes"][0] == (
        "FAIL accepted as an intended regression by --netperf-accept: TLS 1.3 only, see #88"
    )
    assert rows["p50 < 50ms"]["verdict"] == "PASS"
    assert json_report(gates, "out.json")["summary"]["ACCEPTED"] == 1


def test_the_environment_variable_accepts_and_the_baseline_records_it(
    gates: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NETPERF_ACCEPT", "label netperf:accept-regression")
    result = gates.runpytest_subprocess(*FAST, "--netperf-update-baseline", FAILING)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert _verdicts(gates)["p50 < 1us"] == "ACCEPTED"
    result.stdout.fnmatch_lines(["*by NETPERF_ACCEPT: label netperf:accept-regression*"])
    (stored,) = [p for p in (gates.path / ".netperf").glob("*/*.json") if p.parent.name != ".last-run"]
    doc = json.loads(stored.read_text())
    assert doc["accepted_regression"] == (
        "budget 'p50 < 1us': FAIL accepted as an intended regression by NETPERF_ACCEPT: label netperf:accept-regression"
    )
    assert "not_a_baseline" not in doc


def test_a_scope_that_covers_nothing_and_an_invalid_measurement_stay_red(gates: pytest.Pytester) -> None:
    result = gates.runpytest_subprocess(*FAST, "--netperf-accept", "test_other: why")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["*netperf: --netperf-accept [[]test_other]: why: accepted nothing (no FAIL it covers)*"]
    )

    unscoped = gates.runpytest_subprocess(*FAST, "--netperf-accept", "why", "-k", "nothing_listens")
    assert unscoped.ret == pytest.ExitCode.TESTS_FAILED
    unscoped.stdout.fnmatch_lines(["*INVALID measurement (no verdict)*"])
    assert "ACCEPTED" not in unscoped.stdout.str()


@pytest.mark.parametrize(
    ("env", "args", "message"),
    [
        ("", ["--netperf-accept", "test_echo_latency:"], "--netperf-accept: no reason after the scope in *"),
        ("'p5 < 1ms': x", [], "NETPERF_ACCEPT: 'p5 < 1ms' in * is not a budget: unknown metric 'p5'*"),
        ("", ["--netperf-accept", ""], "--netperf-accept: empty; give the reason*"),
    ],
)
def test_a_malformed_acceptance_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, no_ci: None, env: str, args: list[str], message: str
) -> None:
    monkeypatch.setenv("NETPERF_ACCEPT", env)
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*args)
    result.stderr.fnmatch_lines([f"ERROR: pytest-netperf: {message}"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
