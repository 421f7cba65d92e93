"""A URL target under ``--netperf-base`` has no base revision to measure (issue #41): its budget
against the base says it was judged against the stored baseline instead, never silently.

Real git (a repository with one commit), the real driver and echo server on loopback; no Docker.
"""

from __future__ import annotations

import shutil
from typing import Iterator

import pytest
from docker_helpers import git
from pytester_helpers import json_report, netperf_args

from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer

if shutil.which("git") is None:  # pragma: no cover - depends on the machine
    pytest.skip("git is not installed", allow_module_level=True)
try:
    find_driver_binary()
except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"netperf-driver is not installed: {exc}", allow_module_level=True)

GATE = """
import os
import pytest

@pytest.mark.netperf("p90 <= 10x base")
def test_url(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], rate=100)
"""


@pytest.fixture(scope="module")
def echo() -> Iterator[LocalEchoServer]:
    with LocalEchoServer() as server:
        yield server


def test_a_url_target_under_base_says_what_judged_it(
    pytester: pytest.Pytester, echo: LocalEchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NETPERF_TEST_URL", echo.url)
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_gate=GATE)
    git(pytester.path, "init", "-q", "-b", "main")
    git(pytester.path, "add", "test_gate.py")
    git(pytester.path, "commit", "-q", "-m", "the gate")
    args = netperf_args(2, 2, "0.5", "0.2", "--netperf-max-lag=100", "--netperf-json=out.json")
    result = pytester.runpytest_subprocess(*args, "--netperf-base=main")
    (row,) = json_report(pytester, "out.json")["rows"]
    text = " ".join(row.get("notes", [])) + result.stdout.str()
    assert "--netperf-base main:" in text and "has no base revision to measure" in text, text[-3000:]
