"""Each row's facts end to end: a test measures target objects carrying ``facts`` with the
real driver against a real loopback echo server; the reports carry those facts and the
gate's own ``driver cores``. ``--netperf-driver-cpus`` is validated at configure time.

The driver is pinned to one core and the echo server to another where the machine has
two (the split ``auto`` makes on 4+ cores). Each run is 2 rounds of 0.3 s per series.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pytester_helpers import json_report, netperf_args

from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer
from pytest_netperf.runtime.resources import usable_cores
from pytest_netperf.settings import resolve_driver_cpus

FAST = netperf_args(2, 2, "0.3", "0.1", "--netperf-max-lag=100")
DRIVER_CORE = usable_cores()[0]
ECHO_CORE = usable_cores()[-1]
HEAD = {"images": "edge=pytest-netperf/echo:local (for echo:head)", "resources": "edge cpus 1"}
BASE = {"images": "edge=pytest-netperf/echo:local (for echo:base)", "resources": "edge cpus 1"}
#: A comparison of two paths alternates under the default design, and each row says so.
ROUNDS = {"rounds": "alternating (one side at a time, ABBA order)"}

GATE = f"""
import os
import pytest

from pytest_netperf.runtime.endpoints import Endpoint


def Stack(url, facts):
    '''A target as a runtime hands it over: where to send load, and facts for the report.'''
    return Endpoint(url, None, "host", facts=facts)


@pytest.mark.netperf("rps >= 0.5x reference", "p50 < 50ms")
def test_stacks(netperf):
    url = os.environ["NETPERF_TEST_URL"]
    netperf.compare(Stack(url, {HEAD!r}), Stack(url, {BASE!r}), rate=100, connections=2)
"""


@pytest.fixture(scope="module")
def echo_server() -> Iterator[LocalEchoServer]:
    try:
        find_driver_binary()
    except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"netperf-driver is not installed: {exc}")
    cpus = str(ECHO_CORE) if hasattr(os, "sched_setaffinity") else None
    with LocalEchoServer(cpus=cpus) as server:
        yield server


@pytest.fixture
def echo(echo_server: LocalEchoServer, monkeypatch: pytest.MonkeyPatch) -> LocalEchoServer:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("NETPERF_TEST_URL", echo_server.url)
    return echo_server


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning needs Linux")
def test_reports_carry_the_target_facts_and_the_driver_cores(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    assert os.sched_getaffinity(echo.pid) == {ECHO_CORE}
    pytester.makepyfile(test_gate=GATE)
    result = pytester.runpytest_subprocess(
        *FAST, f"--netperf-driver-cpus={DRIVER_CORE}", "--netperf-json=out.json", "--netperf-markdown=out.md", "-v"
    )
    assert result.ret == 0, result.stdout.str()
    cores = {"driver cores": str(DRIVER_CORE)}

    doc = json_report(pytester, "out.json")
    assert [r["budget"] for r in doc["rows"]] == ["rps >= 0.5x reference", "p50 < 50ms"]
    request = {"request": doc["rows"][0]["facts"]["candidate"]["request"]}
    assert request["request"].startswith(f"GET {echo.url}, poisson arrivals; 100 rps open "), request  # (#27)
    for row in doc["rows"]:
        assert row["facts"] == {
            "candidate": {**HEAD, **cores, **ROUNDS, **request},
            "reference": {**BASE, **cores, **ROUNDS, **request},
        }
    (measurement,) = doc["results"]["test_gate.py::test_stacks"]
    assert measurement["series"]["candidate"]["facts"] == {**HEAD, **cores}
    assert measurement["series"]["reference"]["facts"] == {**BASE, **cores}

    md = (pytester.path / "out.md").read_text().splitlines()
    candidate_line = (
        "  - candidate: images: edge=pytest-netperf/echo:local (for echo:head); resources: edge cpus 1; "
        f"driver cores: {DRIVER_CORE}; rounds: {ROUNDS['rounds']}; request: {request['request']}"
    )
    reference_line = candidate_line.replace("candidate", "reference").replace("echo:head", "echo:base")
    assert md.count(candidate_line) == 2 and md.count(reference_line) == 2  # with each row's details
    where = next(i for i, line in enumerate(md) if line.startswith("  - driver rust on host"))
    assert md.index(candidate_line) == where + 1  # next to the row's other facts

    result.stdout.fnmatch_lines(
        [
            "facts:",
            "  test_gate.py::test_stacks: candidate: images: *echo:head*",
            "  test_gate.py::test_stacks: reference: images: *echo:base*",
        ]
    )


def test_default_run_keeps_the_terminal_table_and_pins_as_auto_says(
    pytester: pytest.Pytester, echo: LocalEchoServer
) -> None:
    pytester.makepyfile(test_gate=GATE)
    result = pytester.runpytest_subprocess(*FAST, "--netperf-json=out.json")
    assert result.ret == 0, result.stdout.str()
    assert "facts:" not in result.stdout.str()  # facts are for -v; the default table is as it was
    auto = resolve_driver_cpus("auto")
    cores = {"driver cores": auto} if auto else {}
    row = json_report(pytester, "out.json")["rows"][0]
    request = {"request": row["facts"]["candidate"]["request"]}
    assert row["facts"] == {
        "candidate": {**HEAD, **cores, **ROUNDS, **request},
        "reference": {**BASE, **cores, **ROUNDS, **request},
    }


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (
            ["--netperf-driver-cpus", "nonsense"],
            None,
            "--netperf-driver-cpus must be auto, all or a cpuset such as 0-1 or 0,2 (got 'nonsense')",
        ),
        (
            ["--netperf-driver-cpus=0-"],
            None,
            "--netperf-driver-cpus must be auto, all or a cpuset such as 0-1 or 0,2 (got '0-')",
        ),
        (
            [],
            "netperf_driver_cpus = 0,4096",
            "ini netperf_driver_cpus '0,4096': core(s) 4096 not available to this process (usable: *)",
        ),
    ],
)
def test_bad_driver_cpus_is_a_usage_error_naming_option_and_value(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], ini: str | None, message: str
) -> None:
    monkeypatch.delenv("CI", raising=False)
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*args)
    result.stderr.fnmatch_lines([f"ERROR: pytest-netperf: {message}"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
