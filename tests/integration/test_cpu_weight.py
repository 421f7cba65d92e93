"""The session's weighted cgroup on real containers (runtime/cpu_priority.py): the stack's
containers and the pytest process (so its drivers) are in it during the session, its weight
is set, and nothing of it is left when the session ends; ``--netperf-cpu-weight 1`` makes
none. Needs root and Docker's cgroupfs driver (skips, saying which, elsewhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from docker_helpers import skip_without_images
from pytester_helpers import netperf_args

from pytest_netperf.engine.client import docker_client

pytestmark = pytest.mark.docker

GATE = """
import json, pathlib
import pytest
from pytest_netperf.topology import builders

@pytest.mark.netperf("errors == 0")
def test_echo(netperf, netperf_topology):
    topology = netperf_topology(builders.echo_topology())
    echo = topology.endpoint("direct")
    netperf.measure(echo, rate=200)
    lines = [line.split(":", 2) for line in open("/proc/self/cgroup").read().splitlines()]
    mine = [path for _, controllers, path in lines if "cpu" in controllers.split(",") or not controllers]
    containers = [c.attrs["HostConfig"]["CgroupParent"] for c in topology._containers.values()]
    pathlib.Path("seen.json").write_text(json.dumps({"mine": mine, "parents": containers}))
"""
RUN = netperf_args(2, 2, "0.3", "0.1", "-m", "netperf")


@pytest.fixture(autouse=True)
def cgroupfs_and_images() -> None:
    skip_without_images("echo")
    driver = docker_client().info().get("CgroupDriver")
    if driver != "cgroupfs":
        pytest.skip(f"Docker's cgroup driver is {driver}: the weighted cgroup needs cgroupfs")


def _cpu_mount() -> Path:
    v1 = Path("/sys/fs/cgroup/cpu")
    return v1 if (v1 / "cpu.shares").exists() else Path("/sys/fs/cgroup")


def test_the_stack_and_the_drivers_run_weighted_and_the_group_goes_with_the_session(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_gate=GATE)
    result = pytester.runpytest_subprocess(*RUN, "-s")
    assert result.ret == 0, result.stdout.str()[-3000:]
    seen = json.loads((pytester.path / "seen.json").read_text())
    leaf = next(path for path in seen["mine"] if "/netperf-" in path)
    group = leaf.rsplit("/", 1)[0]
    assert leaf.endswith("/driver"), seen
    assert set(seen["parents"]) == {group}, seen
    result.stdout.fnmatch_lines(["*the stack and the drivers at 20x the default CPU weight (cgroup /netperf-*"])
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        assert not (hierarchy / group.strip("/")).exists(), f"{hierarchy / group.strip('/')} left behind"
    assert not (_cpu_mount() / group.strip("/")).exists()


def test_a_weight_of_one_makes_no_group(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_gate=GATE)
    result = pytester.runpytest_subprocess(*RUN, "-s", "--netperf-cpu-weight=1")
    assert result.ret == 0, result.stdout.str()[-3000:]
    seen = json.loads((pytester.path / "seen.json").read_text())
    # it stays where it started: this process's cgroup (a weighted one of its own when this
    # suite's Docker fixture has run), not one the run made
    assert seen["mine"] == _cpu_cgroups(), seen
    assert set(seen["parents"]) == {""}, seen  # Docker's default parent
    assert "default CPU weight" not in result.stdout.str()


def _cpu_cgroups() -> list[str]:
    """This process's cgroups of the CPU controller (v1) and the unified one (v2)."""
    lines = [line.split(":", 2) for line in Path("/proc/self/cgroup").read_text().splitlines()]
    return [path for _, controllers, path in lines if "cpu" in controllers.split(",") or not controllers]
