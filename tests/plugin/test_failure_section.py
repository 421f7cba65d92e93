"""What a failing netperf test prints: its failure section is the message, not the plugin.

A gate that FAILs, a test whose target is unreachable (INVALID), a marked test without the
fixture and a bad load option each get a short section with no plugin source or exception
chain; progress lines go live to the terminal (with -v), never into the failure section,
and under CI they are throttled. Real driver, real loopback echo server, rounds of 0.3 s.
"""

from __future__ import annotations

import re

import pytest
from pytester_helpers import netperf_args

from pytest_netperf.runtime.local import LocalEchoServer

FAST = netperf_args(3, 3, "0.3", "0.1", "--netperf-max-lag=100", "-p", "no:randomly")

GATES = """
import os
import pytest
from pytest_netperf.measure.targets import with_query

URL = os.environ["NETPERF_TEST_URL"]

@pytest.mark.netperf("p50 <= 1.5x reference", "p50 < 50ms")
def test_slow_candidate(netperf):
    netperf.compare(with_query(URL, delay="3ms"), reference=URL, rate=200, connections=2)

@pytest.mark.netperf("p50 < 50ms")
def test_nothing_listens(netperf):
    netperf.measure("http://127.0.0.1:9/", rate=100)

@pytest.mark.netperf("p50 < 50ms")
def test_forgot_the_fixture():
    pass

@pytest.mark.netperf("p50 < 50ms")
def test_bad_load_option(netperf):
    netperf.measure(URL, rate=100, bogus=3)
"""

PLUGIN_SOURCE = ("def pytest_runtest_call", "self =", "hooks.py", "session.py", "gate.py", "yield", "During handling")
RATIO_AND_INTERVAL = r"\d+\.\d{3}x \[\d+\.\d{3}x, \d+\.\d{3}x\]"


def failure_sections(lines: list[str]) -> dict[str, list[str]]:
    """Test name -> the lines of its section under FAILURES (header excluded)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_failures = False
    for line in lines:
        if re.fullmatch(r"=+ FAILURES =+", line):
            in_failures = True
            continue
        if not in_failures:
            continue
        header = re.fullmatch(r"_+ (\S+) _+", line)
        if header:
            current = sections.setdefault(header.group(1), [])
        elif line.startswith("====="):
            break
        elif current is not None:
            current.append(line)
    return sections


def test_a_failing_gate_prints_its_budgets_not_the_plugin(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    pytester.makepyfile(test_gates=GATES)
    result = pytester.runpytest_subprocess(*FAST, "-v")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    sections = failure_sections(result.stdout.lines)
    assert set(sections) == {
        "test_slow_candidate",
        "test_nothing_listens",
        "test_forgot_the_fixture",
        "test_bad_load_option",
    }
    for name, section in sections.items():
        text = "\n".join(section)
        assert not [s for s in PLUGIN_SOURCE if s in text], f"{name}:\n{text}"

    gate = sections["test_slow_candidate"]
    assert len(gate) <= 25, "\n".join(gate)
    assert gate[0] == "netperf gate failed: 1 of 2 budgets"
    budget = re.fullmatch(
        rf"  FAIL: 'p50 <= 1\.5x reference': {RATIO_AND_INTERVAL} vs the same-run reference (\S+), n=3", gate[1]
    )
    assert budget, "\n".join(gate)
    assert budget.group(1) == echo.url
    assert "what to do:" in gate and not any("Captured" in line for line in gate)

    (invalid,) = [line for line in sections["test_nothing_listens"] if line]
    assert invalid.startswith("INVALID measurement (no verdict): candidate http://127.0.0.1:9/")
    assert sections["test_forgot_the_fixture"][0].startswith("test_gates.py::test_forgot_the_fixture has the netperf")
    bad_option = "\n".join(sections["test_bad_load_option"])
    assert "netperf.measure(URL, rate=100, bogus=3)" in bad_option  # the test's own line stays
    assert "LoadOptionError: unknown load option 'bogus'" in bad_option

    # progress: live on the terminal (before the verdict line), with the round cap and time
    progress = [line for line in result.stdout.lines if line.startswith("netperf: test_gates.py::test_slow_candidate")]
    assert progress[0].startswith("netperf: test_gates.py::test_slow_candidate [default] round 1/3 reference (")
    assert all(line.endswith("s elapsed)") for line in progress)
    assert len(progress) == 6  # 3 rounds, 2 series
    first_verdict = next(i for i, line in enumerate(result.stdout.lines) if "test_slow_candidate FAILED" in line)
    assert result.stdout.lines.index(progress[-1]) < first_verdict


def test_under_ci_progress_is_throttled(
    pytester: pytest.Pytester, echo: LocalEchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_gates=GATES)
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest_subprocess(*FAST, "-v", "-k", "slow_candidate")
    progress = [line for line in result.stdout.lines if line.startswith("netperf: test_gates.py::")]
    assert len(progress) == 1, progress  # the first line; the next would be due 30 s later
    verbose = pytester.runpytest_subprocess(*FAST, "-vv", "-k", "slow_candidate")
    assert len([line for line in verbose.stdout.lines if line.startswith("netperf: test_gates.py::")]) == 6
