"""Counts of 1,000 and more in every report (#27 item 2): a passing gate whose driver opens a
new connection per request (some 1,500 sockets a round) must print its terminal table and
write the JSON, Markdown and HTML reports. The table's wrapping once parsed "1,629" as a
number and crashed the summary before any report was written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer

try:
    find_driver_binary()
except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"netperf-driver is not installed: {exc}", allow_module_level=True)

GATE = """
import os
import pytest

@pytest.mark.netperf("sockets <= 1000000", "errors == 0")
def test_a_new_connection_per_request(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], rate=1500, new_connection_per_request=True)
"""
THOUSANDS = re.compile(r"\b\d{1,3}(,\d{3})+\b")


@pytest.fixture(scope="module")
def echo() -> Iterator[LocalEchoServer]:
    with LocalEchoServer() as server:
        yield server


def test_counts_above_a_thousand_reach_every_report(
    pytester: pytest.Pytester, echo: LocalEchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NETPERF_TEST_URL", echo.url)
    pytester.makepyfile(test_gate=GATE)
    result = pytester.runpytest_subprocess(
        "--netperf-rounds=2",
        "--netperf-max-rounds=2",
        "--netperf-duration=1",
        "--netperf-warmup=0.2",
        "--netperf-max-lag=100",
        "--netperf-json=out/results.json",
        "--netperf-markdown=out/comment.md",
        "--netperf-html=out/report.html",
        "-p",
        "no:cacheprovider",
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)
    table = [line for line in result.stdout.lines if "sockets <= 1000000" in line]
    assert table and THOUSANDS.search(table[0]), f"the measured count has thousands separators: {table}"
    doc = json.loads((pytester.path / "out" / "results.json").read_text())
    sockets = next(r for r in doc["rows"] if r["budget"] == "sockets <= 1000000")
    assert sockets["verdict"] == "PASS" and THOUSANDS.search(sockets["measured"])
    assert THOUSANDS.search((pytester.path / "out" / "comment.md").read_text())
    assert sockets["measured"] in (pytester.path / "out" / "report.html").read_text()
