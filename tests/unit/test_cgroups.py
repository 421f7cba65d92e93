"""Finding and reading a container's cgroup counters, on /proc and cgroup trees laid out as
Docker leaves them: v1 with the cgroupfs and systemd drivers, v2, and a hybrid host."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_netperf.errors import CgroupError
from pytest_netperf.runtime.cgroups import (
    counters_from_docker_stats,
    locate,
    net_counters,
    process_identity,
    read_counters,
    read_memory,
)

CID = "269d72bdf7f35caaaf9d408269f99431d028e21cce32f10020252110249cedcb"
NET_DEV = "\n".join(
    [
        "Inter-|   Receive                                                |  Transmit",
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls",
        "    lo: 900 9 0 0 0 0 0 0 900 9 0 0 0 0 0 0",
        "  eth0: 486000 5000 0 0 0 0 0 0 972000 4000 0 0 0 0 0 0",
        "  eth1: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0",
    ]
)
# /proc/<pid>/stat: the command may hold spaces and parentheses; field 22 is the start time
STAT = "4242 (nginx: master (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def fake_proc(tmp: Path, mountinfo: str, cgroup: str, pid: int = 4242) -> Path:
    proc = tmp / "proc"
    write(proc / "self" / "mountinfo", mountinfo)
    write(proc / str(pid) / "cgroup", cgroup)
    write(proc / str(pid) / "net" / "dev", NET_DEV)
    write(proc / str(pid) / "stat", STAT)
    return proc


def v1_host(tmp: Path, group: str) -> Path:
    root = tmp / "sys"
    mountinfo = "\n".join(
        [
            f"31 23 0:28 / {root} rw,relatime - tmpfs tmpfs rw,mode=755",
            f"32 31 0:29 / {root}/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct",
            f"34 31 0:31 / {root}/memory rw,relatime - cgroup cgroup rw,memory",
            f"35 31 0:32 / {root}/unified rw,relatime - cgroup2 cgroup2 rw",
        ]
    )
    cgroup = f"4:memory:{group}\n2:cpu,cpuacct:{group}\n0::{group}\n"
    write(root / "cpu,cpuacct" / group.lstrip("/") / "cpuacct.usage", "50913326\n")
    write(root / "memory" / group.lstrip("/") / "memory.usage_in_bytes", "10932224\n")
    write(
        root / "memory" / group.lstrip("/") / "memory.stat",
        "cache 8000000\ninactive_file 100\ntotal_inactive_file 7921664\ntotal_rss 3000000\n",
    )
    return fake_proc(tmp, mountinfo, cgroup)


def test_v1_cgroupfs_driver(tmp_path: Path) -> None:
    proc = v1_host(tmp_path, f"/docker/{CID}")
    files = locate(4242, proc)
    assert files.version == 1 and files.source == "cgroup v1"
    counters = read_counters(files)
    assert counters.cpu_ns == 50913326
    assert counters.mem_bytes == 10932224 - 7921664  # working set: usage minus inactive file cache
    assert (counters.rx_packets, counters.tx_packets) == (5010, 4020)  # lo left out
    assert (counters.rx_bytes, counters.tx_bytes) == (487000, 974000)
    assert counters.identity == "4242:987654"
    assert read_memory(files) == counters.mem_bytes


def test_v1_systemd_driver(tmp_path: Path) -> None:
    proc = v1_host(tmp_path, f"/system.slice/docker-{CID}.scope")
    assert read_counters(locate(4242, proc)).cpu_ns == 50913326


def test_v2_unified(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    group = f"/system.slice/docker-{CID}.scope"
    mountinfo = f"30 23 0:26 / {root} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
    folder = root / group.lstrip("/")
    write(folder / "cpu.stat", "usage_usec 50913\nuser_usec 40000\nsystem_usec 10913\n")
    write(folder / "memory.current", "10932224\n")
    write(folder / "memory.stat", "anon 3000000\nfile 8000000\ninactive_file 7921664\n")
    proc = fake_proc(tmp_path, mountinfo, f"0::{group}\n")
    files = locate(4242, proc)
    assert files.version == 2
    counters = read_counters(files)
    assert counters.cpu_ns == 50913000 and counters.mem_bytes == 10932224 - 7921664


def test_a_cgroup_namespace_root_below_the_mount_is_stripped(tmp_path: Path) -> None:
    """In a container with its own view (mount root /docker/x), paths are relative to it."""
    root = tmp_path / "sys"
    mountinfo = f"30 23 0:26 /docker/outer {root} rw - cgroup2 cgroup2 rw\n"
    write(root / "inner" / "cpu.stat", "usage_usec 7\n")
    write(root / "inner" / "memory.current", "100\n")
    write(root / "inner" / "memory.stat", "inactive_file 10\n")
    proc = fake_proc(tmp_path, mountinfo, "0::/docker/outer/inner\n")
    assert read_counters(locate(4242, proc)).cpu_ns == 7000


def test_no_cgroup_found_names_what_was_there(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, "31 23 0:28 / /x rw - tmpfs tmpfs rw\n", "0::/docker/abc\n")
    with pytest.raises(CgroupError, match=r"no cpuacct\+memory .*pid 4242.*unified:/docker/abc"):
        locate(4242, proc)


def test_a_missing_counter_file_names_the_path_and_is_never_zero(tmp_path: Path) -> None:
    proc = v1_host(tmp_path, f"/docker/{CID}")
    files = locate(4242, proc)
    files.cpu.unlink()
    with pytest.raises(CgroupError, match=r"cannot read .*cpuacct.usage"):
        read_counters(files)
    with pytest.raises(CgroupError, match="does not exist"):
        locate(4242, proc)


def test_garbage_in_a_counter_names_the_file(tmp_path: Path) -> None:
    proc = v1_host(tmp_path, f"/docker/{CID}")
    files = locate(4242, proc)
    files.cpu.write_text("max\n")
    with pytest.raises(CgroupError, match=r"cpuacct.usage: expected a number, got 'max'"):
        read_counters(files)


def test_a_gone_process_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CgroupError, match="cannot read"):
        process_identity(tmp_path / "proc" / "999" / "stat")


def test_net_dev_without_interfaces_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CgroupError, match="no interfaces"):
        net_counters("Inter-|   Receive\n face |bytes\n", tmp_path / "dev")


def test_docker_stats_snapshot() -> None:
    stats = {
        "cpu_stats": {"cpu_usage": {"total_usage": 123456}},
        "memory_stats": {"usage": 5000, "stats": {"inactive_file": 1000}},
        "networks": {"eth0": {"rx_packets": 3, "tx_packets": 4, "rx_bytes": 30, "tx_bytes": 40}},
    }
    counters = counters_from_docker_stats(stats, "2026-11-23T00:00:00Z", "container x")
    assert (counters.cpu_ns, counters.mem_bytes, counters.rx_packets, counters.tx_bytes) == (123456, 4000, 3, 40)
    with pytest.raises(CgroupError, match="container x carry no CPU or memory counters"):
        counters_from_docker_stats({"cpu_stats": {}, "memory_stats": {}}, "", "container x")
