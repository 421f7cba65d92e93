"""The runner's state beside every verdict, end to end: a real measured run against the loopback
echo server shows how busy the machine was in the terminal table's notes, a failing gate's
text, the JSON report (per row, per measurement, per round) and the Markdown report.
Each run is 2 rounds of 0.3 s."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pytester_helpers import json_report, netperf_args

from pytest_netperf.runtime.local import LocalEchoServer

pytestmark = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="the runner's state is read from /proc")

FAST = netperf_args(2, 2, "0.3", "0.1", "--netperf-max-lag=100")
RUNNER_LINE = "runner: * cores, steal *%, load *, other processes * cores (max *) during the rounds*"
#: The echo server is a plain URL: its CPU is not read, so the note counts it among the others.
PLAIN = "; with a plain URL target (2 of 2 rounds) a server on this machine counts among them"

GATE = """
import os
import pytest


@pytest.mark.netperf("p50 < 50ms")
def test_fine(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], rate=100, connections=2)


@pytest.mark.netperf("p50 < 1ns")
def test_too_tight(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], rate=100, connections=2)
"""


def test_the_runner_state_is_beside_every_verdict(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    pytester.makepyfile(test_gate=GATE)
    result = pytester.runpytest_subprocess(*FAST, "--netperf-json=out.json", "--netperf-markdown=out.md")
    assert result.ret == 1, result.stdout.str()
    # the failing gate's text, then a footnote of the table for each row
    result.stdout.fnmatch_lines(["*FAIL: 'p50 < 1ns'*", f"  {RUNNER_LINE}", "*what to do:*"])
    table = " ".join(result.stdout.str().split("= netperf =")[-1].split())  # footnotes wrap
    footnotes = re.findall(r"\[\d+\] (?:[^[]*; )?runner: \d+ cores, steal [\d.]+%, load [\d.]+, other processes", table)
    assert len(footnotes) >= 1, table  # one per distinct text of the rows' notes, each ending with the runner

    doc = json_report(pytester, "out.json")
    assert [row["verdict"] for row in doc["rows"]] == ["PASS", "FAIL"]
    for row in doc["rows"]:
        runner = row["runner"]
        assert runner["rounds"] == 2 and runner["cores"] >= 1
        assert 0.0 <= runner["steal_share"] <= 1.0 and runner["load_avg_1m"] >= 0.0
        assert 0.0 <= runner["other_cores"] <= runner["other_cores_max"] <= runner["cores"]
        assert runner["test_cores"] > 0.0  # the driver's own CPU, read from the driver
        assert row["notes"][-1].startswith(f"runner: {runner['cores']} cores, steal ")
        assert row["notes"][-1].endswith(PLAIN) and runner["stack_rounds"] == 0
        (measurement,) = doc["results"][row["test_id"]]
        assert measurement["runner"] == runner
        rounds = measurement["series"]["candidate"]["rounds"]
        assert all(r["runner"]["span_s"] > 0.3 and r["runner"]["stack_cores"] is None for r in rounds)

    md = (pytester.path / "out.md").read_text()
    assert md.count("  - runner: ") == 2  # with each row's details
