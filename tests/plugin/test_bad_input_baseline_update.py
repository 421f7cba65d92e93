"""An update run never stores a broken run's rounds unless told to, and a stored baseline that
cannot be compared is an error naming it, never a crash (issue #41). Real driver, loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from pytester_helpers import netperf_args

from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer

try:
    find_driver_binary()
except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"netperf-driver is not installed: {exc}", allow_module_level=True)

FAST = netperf_args(2, 2, "0.5", "0.2", "--netperf-max-lag=100")

GATE = """
import os
import pytest

@pytest.mark.netperf("p90 <= 1.2x baseline", "errors == 0")
def test_gate(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"] + os.environ.get("NETPERF_TEST_QUERY", ""), rate=100)
"""


@pytest.fixture(scope="module")
def echo() -> Iterator[LocalEchoServer]:
    with LocalEchoServer() as server:
        yield server


def _stored(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*/*.json") if p.parent.name != ".last-run")


def test_an_all_500_run_is_not_stored_and_a_stored_one_is_a_clear_error(
    pytester: pytest.Pytester, echo: LocalEchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_gate=GATE)
    monkeypatch.setenv("NETPERF_TEST_URL", echo.url)
    monkeypatch.setenv("NETPERF_TEST_QUERY", "?status=500")

    refused = pytester.runpytest_subprocess(*FAST, "--netperf-update-baseline")
    refused.stdout.fnmatch_lines(["*--netperf-update-baseline: the baseline was not written*errors == 0*FAIL*"])
    refused.stdout.fnmatch_lines(["*--netperf-accept-failed-baseline*"])
    assert not _stored(pytester.path / ".netperf")

    forced = pytester.runpytest_subprocess(*FAST, "--netperf-update-baseline", "--netperf-accept-failed-baseline")
    assert len(_stored(pytester.path / ".netperf")) == 1, forced.stdout.str()[-2000:]

    monkeypatch.delenv("NETPERF_TEST_QUERY")
    healthy = pytester.runpytest_subprocess(*FAST)
    text = healthy.stdout.str()
    assert "ValueError" not in text and "Traceback" not in text, text[-3000:]
    healthy.stdout.fnmatch_lines(["*.json: series 'candidate' p90: the stored rounds must be positive*"])
    assert healthy.ret != 0
