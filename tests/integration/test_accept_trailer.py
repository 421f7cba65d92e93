"""A ``Netperf-Accept:`` trailer in the HEAD commit accepts a regression (issue #40): a
pytester folder made a git repository whose commit carries the trailer. Real git and the
real driver against a loopback echo server; no Docker. (The option and ``NETPERF_ACCEPT``:
``plugin/test_accept_regression.py``; the grammar: ``unit/test_acceptance.py``.)
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from docker_helpers import git
from pytester_helpers import json_report, netperf_args

from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer

FAST = netperf_args(3, 3, "0.3", "0.1", "--netperf-max-lag=100", "--netperf-json=out.json")

GATE = """
import os
import pytest

@pytest.mark.netperf("p50 < 1us", "p50 < 50ms")
def test_echo_latency(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], rate=200, connections=2)
"""


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    try:
        find_driver_binary()
    except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"netperf-driver is not installed: {exc}")
    with LocalEchoServer() as server:
        yield server.url


@pytest.fixture
def repo(pytester: pytest.Pytester, echo_url: str, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The gate in a git repository with one commit (its message: the test's to write)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    monkeypatch.setenv("NETPERF_TEST_URL", echo_url)
    monkeypatch.delenv("NETPERF_ACCEPT", raising=False)
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(test_gate=GATE)
    pytester.path.joinpath(".gitignore").write_text("out.json\n.netperf/\n__pycache__/\n")
    git(pytester.path, "init", "-q", "-b", "main")
    git(pytester.path, "add", "-A")
    return pytester


def _commit(repo: pytest.Pytester, message: str) -> str:
    git(repo.path, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo.path, "rev-parse", "--short", "HEAD").strip()


def test_a_trailer_of_the_head_commit_accepts_the_fail(repo: pytest.Pytester) -> None:
    commit = _commit(
        repo,
        "Serve TLS 1.3 only\n\nThe handshake costs more.\n\n"
        "Signed-off-by: CI <ci@example.com>\nNetperf-Accept: test_echo_latency: TLS 1.3 handshake\n",
    )
    result = repo.runpytest_subprocess(*FAST)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    source = f"trailer Netperf-Accept of commit {commit}"
    result.stdout.fnmatch_lines([f"*ACCEPTED 'p50 < 1us': FAIL accepted as an intended regression by {source}*"])
    rows = {row["budget"]: row for row in json_report(repo, "out.json")["rows"]}
    assert rows["p50 < 1us"]["verdict"] == "ACCEPTED"
    assert rows["p50 < 1us"]["notes"][0] == (
        f"FAIL accepted as an intended regression by {source} [test_echo_latency]: TLS 1.3 handshake"
    )


def test_without_the_trailer_the_fail_stays_and_a_bad_trailer_is_a_usage_error(repo: pytest.Pytester) -> None:
    _commit(repo, "Serve TLS 1.3 only\n\nNo trailer here: Netperf-Accept is named in the body only.\n")
    plain = repo.runpytest_subprocess(*FAST)
    assert plain.ret == pytest.ExitCode.TESTS_FAILED
    assert json_report(repo, "out.json")["rows"][0]["verdict"] == "FAIL"

    commit = _commit(repo, "Tighten\n\nNetperf-Accept: 'p50 <<< 1us': why\n")
    bad = repo.runpytest_subprocess(*FAST)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        [f"ERROR: pytest-netperf: trailer Netperf-Accept of commit {commit}: 'p50 <<< 1us' in * is not a budget*"]
    )
