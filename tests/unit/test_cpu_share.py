"""The share of a CPU a thread gets, read from fake /proc and /sys/fs/cgroup trees (v1 and v2)."""

from __future__ import annotations

from pathlib import Path

from pytest_netperf.runtime.cpu_share import cgroup_chain, cpu_quota, run_delay_s


def fake_proc(tmp_path: Path, mountinfo: str, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text(mountinfo)
    (proc / "self" / "cgroup").write_text(cgroup)
    return proc


def write(folder: Path, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(text + "\n")


def test_v1_quota_is_the_smallest_along_the_chain(tmp_path: Path) -> None:
    root = tmp_path / "cgroup" / "cpu"
    mountinfo = (
        f"30 25 0:26 / {root} rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
        f"31 25 0:27 / {tmp_path}/cgroup/memory rw,relatime shared:10 - cgroup cgroup rw,memory\n"
    )
    proc = fake_proc(tmp_path, mountinfo, "4:memory:/ci/job\n1:cpu:/ci/job\n0::/\n")
    write(root, cpu__cfs_quota_us="-1", cpu__cfs_period_us="100000")
    write(root / "ci", cpu__cfs_quota_us="150000", cpu__cfs_period_us="100000")
    write(root / "ci" / "job", cpu__cfs_quota_us="50000", cpu__cfs_period_us="100000")
    assert cgroup_chain(proc) == [(root / "ci" / "job", 1), (root / "ci", 1), (root, 1)]
    assert cpu_quota(proc) == 0.5


def test_v2_quota_from_cpu_max_in_a_namespace(tmp_path: Path) -> None:
    # a container's cgroup namespace: the mount's root is the container's own cgroup
    mount = tmp_path / "sys" / "fs" / "cgroup"
    mountinfo = f"40 30 0:30 /kubepods/pod1 {mount} rw - cgroup2 cgroup2 rw,nsdelegate\n"
    proc = fake_proc(tmp_path, mountinfo, "0::/kubepods/pod1/app\n")
    write(mount, cpu__max="200000 100000")
    write(mount / "app", cpu__max="max 100000")
    assert cgroup_chain(proc) == [(mount / "app", 2), (mount, 2)]
    assert cpu_quota(proc) == 2.0


def test_no_quota_or_no_cgroup_is_none(tmp_path: Path) -> None:
    mount = tmp_path / "cgroup2"
    proc = fake_proc(tmp_path, f"40 30 0:30 / {mount} rw - cgroup2 cgroup2 rw\n", "0::/user.slice\n")
    write(mount / "user.slice", cpu__max="max 100000")
    assert cpu_quota(proc) is None
    assert cpu_quota(tmp_path / "no-proc") is None
    assert cgroup_chain(fake_proc(tmp_path / "other", "", "")) == []


def test_run_delay_is_the_second_schedstat_field(tmp_path: Path) -> None:
    schedstat = tmp_path / "schedstat"
    schedstat.write_text("592183 67040000 12\n")
    assert run_delay_s(schedstat) == 0.06704
    assert run_delay_s(None) is None
    schedstat.write_text("garbage\n")
    assert run_delay_s(schedstat) is None
