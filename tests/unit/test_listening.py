"""Listening ports from /proc/<pid>/net/tcp{,6}, and the watch that ends a hopeless readiness wait."""

from __future__ import annotations

from pathlib import Path

from pytest_netperf.runtime.listening import ListenWatch, listening_ports, parse_listening

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0
   1: 0100007F:2382 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0
   2: 0200000A:1F90 0300000A:C350 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0
"""
TCP6 = """  sl  local_address                         remote_address                        st ...
   0: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 0 0 0 0 0 0 4 1 0
"""


def proc_tree(tmp_path: Path, pid: int, cgroup: str) -> Path:
    net = tmp_path / str(pid) / "net"
    net.mkdir(parents=True)
    (net / "tcp").write_text(TCP)
    (net / "tcp6").write_text(TCP6)
    (tmp_path / str(pid) / "cgroup").write_text(cgroup)
    return tmp_path


def test_listen_rows_only_ipv4_and_ipv6() -> None:
    assert parse_listening(TCP) == {8080}  # 127.0.0.1:9090 is loopback; the st 01 row is established
    assert parse_listening(TCP6) == {80}
    assert parse_listening("header only\n") == set()
    mapped_loopback = "0000000000000000FFFF00000100007F:0035"
    assert parse_listening(f"h\n 0: {mapped_loopback} 0:0 0A\n 1: {'0' * 24}01000000:0036 0:0 0A\n") == set()


def test_ports_are_read_only_for_a_process_of_that_container(tmp_path: Path) -> None:
    proc = proc_tree(tmp_path, 4242, "12:cpu,cpuacct:/docker/abc123def\n")
    assert listening_ports(4242, "abc123def", proc) == {80, 8080}
    assert listening_ports(4242, "other", proc) is None, "a pid of another container (or a remote engine)"
    assert listening_ports(999, "abc123def", proc) is None
    assert listening_ports(0, "abc123def", proc) is None


def test_the_watch_gives_up_once_other_ports_stay_the_same() -> None:
    now = [0.0]
    seen: list[set[int] | None] = [None, {9901}, {9901, 8080}, {9901, 8080}, {9901, 8080}, {9901, 8080}]
    reads = iter(seen)
    watch = ListenWatch(lambda: next(reads), port=80, settle_s=5.0, clock=lambda: now[0])
    problems = []
    for t in (0.0, 1.0, 2.0, 4.0, 6.9, 7.0):
        now[0] = t
        problems.append(watch.problem())
    assert problems[:5] == [None] * 5, "starting up: the set of ports still changes, or not settled for 5 s"
    assert problems[5] == "nothing listens on port 80: the container listens on 8080, 9901 only (unchanged for 5s)"
    assert watch.gave_up_on == {8080, 9901}


def test_the_watch_never_gives_up_on_a_port_that_listens_or_without_proc() -> None:
    now = [0.0]
    for ports in ({80, 8080}, None, set()):
        watch = ListenWatch(lambda ports=ports: ports, port=80, settle_s=1.0, clock=lambda: now[0])
        for t in range(10):
            now[0] = float(t)
            assert watch.problem() is None
