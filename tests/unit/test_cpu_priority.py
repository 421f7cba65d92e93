"""The session's weighted cgroup on fake cgroup trees (runtime/cpu_priority.py): what it writes
for cgroup v1 and v2, when it declines, and what its note says."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_netperf.runtime.compose.project import override_document
from pytest_netperf.runtime.cpu_priority import (
    PriorityUnavailable,
    outside_cgroup_procs,
    raise_priority,
    remove_stale_groups,
)

CGROUPFS = {"CgroupDriver": "cgroupfs", "CgroupVersion": "1"}


def fake_proc(tmp_path: Path, mounts: dict[str, str], memberships: str) -> Path:
    """A /proc/self with a mountinfo of ``{folder name: 'cgroup OPTIONS' or 'cgroup2 OPTIONS'}``
    (each folder made under tmp_path) and a cgroup file."""
    proc = tmp_path / "proc" / "self"
    proc.mkdir(parents=True)
    lines = []
    for n, (name, kind) in enumerate(mounts.items()):
        (tmp_path / name).mkdir()
        fstype, options = kind.split()
        lines.append(f"{30 + n} 25 0:{26 + n} / {tmp_path / name} rw,nosuid - {fstype} {fstype} {options}")
    (proc / "mountinfo").write_text("\n".join(lines) + "\n")
    (proc / "cgroup").write_text(memberships)
    return tmp_path / "proc"


def test_v1_weights_the_group_gives_it_real_time_runtime_and_moves_this_process_in(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {"cpu": "cgroup rw,cpu", "memory": "cgroup rw,memory"}, "2:memory:/\n1:cpu:/\n")
    group = tmp_path / "cpu" / "netperf-s1"
    group.mkdir()
    (group / "cpu.rt_runtime_us").write_text("0")
    (group / "driver").mkdir()
    (group / "driver" / "cpu.rt_runtime_us").write_text("0")
    priority = raise_priority("s1", CGROUPFS, 20, proc)
    assert priority.docker_options() == {"cgroup_parent": "/netperf-s1"}
    assert priority.compose_keys() == {"cgroup_parent": "/netperf-s1"}
    assert (group / "cpu.shares").read_text() == "20480"
    assert (group / "cpu.rt_runtime_us").read_text() == "400000"
    assert (group / "driver" / "cgroup.procs").read_text() == str(os.getpid())
    assert priority.home == tmp_path / "cpu" / "cgroup.procs"
    assert priority.describe() == "the stack and the drivers at 20x the default CPU weight (cgroup /netperf-s1, v1)"
    problems = priority.close(attempts=1)
    assert (tmp_path / "cpu" / "cgroup.procs").read_text() == str(os.getpid())  # moved back
    # a fake tree's folders hold real files, so rmdir fails here: the problem names the folder
    assert any(str(group) in p for p in problems), problems


def test_v1_without_free_real_time_runtime_leaves_the_drivers_where_they_were(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {"cpu": "cgroup rw,cpu,cpuacct"}, "1:cpu,cpuacct:/ci\n")
    group = tmp_path / "cpu" / "netperf-s2"
    (group / "cpu.rt_runtime_us").mkdir(parents=True)  # a folder: every write to it fails
    priority = raise_priority("s2", CGROUPFS, 5, proc)
    assert (group / "cpu.shares").read_text() == "5120"
    assert priority.home is None and not (group / "driver" / "cgroup.procs").exists()
    assert priority.describe().startswith("the stack (not the drivers) at 5x")


def test_v2_weights_the_group_and_enables_its_cpu_controller(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {"unified": "cgroup2 rw,nsdelegate"}, "0::/user.slice/job\n")
    priority = raise_priority("s3", {"CgroupDriver": "cgroupfs", "CgroupVersion": "2"}, 200, proc)
    group = tmp_path / "unified" / "netperf-s3"
    assert priority.version == 2 and priority.home is None
    assert (group / "cpu.weight").read_text() == "10000"  # factor x 100, at most 10000
    assert (group / "cgroup.subtree_control").read_text() == "+cpu"


def test_the_systemd_driver_and_a_factor_of_one_are_declined_with_reasons(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {"cpu": "cgroup rw,cpu"}, "1:cpu:/\n")
    with pytest.raises(PriorityUnavailable, match="managed by systemd"):
        raise_priority("s4", {"CgroupDriver": "systemd"}, 20, proc)
    with pytest.raises(PriorityUnavailable, match="above 1"):
        raise_priority("s4", CGROUPFS, 1, proc)
    assert not (tmp_path / "cpu" / "netperf-s4").exists()


def test_stale_groups_are_removed_only_when_empty(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {"cpu": "cgroup rw,cpu", "memory": "cgroup rw,memory"}, "1:cpu:/\n")
    (tmp_path / "cpu" / "netperf-dead" / "driver").mkdir(parents=True)
    (tmp_path / "memory" / "netperf-dead").mkdir()
    (tmp_path / "cpu" / "netperf-live" / "driver").mkdir(parents=True)
    (tmp_path / "cpu" / "netperf-live" / "driver" / "cgroup.procs").write_text("1")  # in use
    removed = remove_stale_groups(proc)
    assert sorted(removed) == sorted(
        [str(tmp_path / "cpu" / "netperf-dead"), str(tmp_path / "memory" / "netperf-dead")]
    )
    assert (tmp_path / "cpu" / "netperf-live").exists()


def test_compose_services_join_the_group_unless_they_name_their_own() -> None:
    config = {"services": {"edge": {"image": "nginx:1.27"}, "app": {"image": "app:1", "cgroup_parent": "/team"}}}
    document = override_document(config, "p", {}, service_keys={"cgroup_parent": "/netperf-s5"})
    assert document["services"]["edge"]["cgroup_parent"] == "/netperf-s5"
    assert "cgroup_parent" not in document["services"]["app"]


def test_under_a_cpu_quota_the_group_is_made_below_the_cgroup_that_carries_it(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {"cpu": "cgroup rw,cpu"}, "1:cpu:/docker/slow-machine\n")
    limited = tmp_path / "cpu" / "docker"
    (limited / "slow-machine").mkdir(parents=True)
    (limited / "cpu.cfs_quota_us").write_text("100000\n")
    (limited / "cpu.cfs_period_us").write_text("100000\n")
    (limited / "slow-machine" / "cpu.cfs_quota_us").write_text("-1\n")
    (limited / "slow-machine" / "cpu.cfs_period_us").write_text("100000\n")
    priority = raise_priority("s6", CGROUPFS, 20, proc)
    assert priority.parent == "/docker/netperf-s6"
    assert (limited / "netperf-s6" / "cpu.shares").read_text() == "20480"
    assert priority.home == limited / "slow-machine" / "cgroup.procs"


def test_a_process_in_the_weighted_leaf_starts_outsiders_where_the_group_sits(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {"cpu": "cgroup rw,cpu"}, "1:cpu:/ci/netperf-s7/driver\n")
    (tmp_path / "cpu" / "ci" / "netperf-s7" / "driver").mkdir(parents=True)
    assert outside_cgroup_procs(proc) == tmp_path / "cpu" / "ci" / "cgroup.procs"
    elsewhere = fake_proc(tmp_path / "b", {"cpu": "cgroup rw,cpu"}, "1:cpu:/ci/job\n")
    (tmp_path / "b" / "cpu" / "ci" / "job").mkdir(parents=True)
    assert outside_cgroup_procs(elsewhere) is None
