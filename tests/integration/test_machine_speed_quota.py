"""A real CPU quota makes this machine measure slower: a stored wall-clock baseline is NEW, not FAIL.

Records a baseline as usual, then runs the same gate in a pytest subprocess placed in a
child cgroup limited to half a CPU (``cpu.cfs_quota_us``/``cpu.cfs_period_us`` on cgroup
v1, ``cpu.max`` on v2): the calibration of that process measures about 2x, so its
``rps``/``p90`` baseline budgets are NEW with the reason, not judged against figures of a
machine twice as fast. The cgroup is removed even when the test fails; without a cgroup
CPU controller this process may write to, the test skips saying why.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest
from cpu_quota import QuotaUnavailable, cpu_quota, joined
from pytester_helpers import json_report, netperf_args

from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer
from pytest_netperf.runtime.machine_speed import SPEED_THRESHOLD

ARGS = netperf_args(3, 3, "0.5", "0.2", "--netperf-max-lag=200", "--netperf-json=results.json")
GATE = """
import os
import pytest

@pytest.mark.netperf("rps >= 0.6x baseline", "p90 <= 1.5x baseline")
def test_echo(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], rate=200, connections=2)
"""


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalEchoServer]:
    try:
        find_driver_binary()
    except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"netperf-driver is not installed: {exc}")
    monkeypatch.delenv("CI", raising=False)
    with LocalEchoServer() as server:
        monkeypatch.setenv("NETPERF_TEST_URL", server.url)
        yield server


def _calibration(pytester: pytest.Pytester) -> dict:
    (pending,) = (pytester.path / ".netperf" / ".last-run").glob("*.json")
    return json.loads(pending.read_text())["fingerprint"]["calibration"]


def test_a_cpu_quota_makes_a_stored_wall_clock_baseline_new_not_fail(
    pytester: pytest.Pytester, echo: LocalEchoServer
) -> None:
    pytester.makepyfile(test_gate=GATE)
    recorded = pytester.runpytest_subprocess(*ARGS, "--netperf-update-baseline")
    assert recorded.ret == 0, recorded.stdout.str()
    full_speed = _calibration(pytester)

    try:
        with cpu_quota(0.5) as group:
            slowed = pytester.run(*joined(group, [sys.executable, "-m", "pytest", *ARGS]), timeout=120)
            throttled = group.throttled()
    except QuotaUnavailable as exc:
        pytest.skip(f"no cgroup with a CPU quota can be created here: {exc}")

    assert throttled > 0, "the quota never throttled the run: it did not run inside the cgroup"
    half_speed = _calibration(pytester)
    assert half_speed["quota_cpus"] == 0.5
    assert half_speed["ms"] / full_speed["ms"] > SPEED_THRESHOLD, (full_speed, half_speed)
    assert slowed.ret == 0, slowed.stdout.str()
    rows = {row["budget"]: row for row in json_report(pytester)["rows"]}
    for budget in ("rps >= 0.6x baseline", "p90 <= 1.5x baseline"):
        assert rows[budget]["verdict"] == "NEW", rows[budget]
        assert any("CPU quota none vs 0.5 CPUs here" in note for note in rows[budget]["notes"]), rows[budget]
    slowed.stdout.fnmatch_lines(["*measured *x faster (calibration * ms vs * ms here; CPU quota none vs 0.5*"])
