"""Read what one container spends: CPU time, memory and network counters, from its cgroup.

:func:`locate` finds a process's cgroup files from ``/proc/<pid>/cgroup`` and the mount
table, for cgroup v1 (``cpuacct``, ``memory`` controllers; the ``cgroupfs`` and ``systemd``
drivers alike) and v2 (``cpu.stat``, ``memory.current``), hybrid layouts included.
:func:`read_counters` reads them; network counters come from the process's own network
namespace (``/proc/<pid>/net/dev``). Where the host's ``/proc`` does not show the container's
processes (pytest in another PID namespace), :func:`counters_from_docker_stats` reads the same
counters from one Docker stats snapshot. Every read that fails raises :class:`CgroupError`
naming the path: a missing counter is never a zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_netperf.errors import CgroupError

__all__ = [
    "CgroupError",
    "CgroupFiles",
    "CgroupMount",
    "Counters",
    "cgroup_mounts",
    "counters_from_docker_stats",
    "locate",
    "memberships",
    "read_counters",
]


@dataclass(frozen=True)
class Counters:
    """Cumulative counters of one container at one moment."""

    cpu_ns: int
    #: Working set: memory usage minus the inactive file cache (what ``docker stats`` shows).
    mem_bytes: int
    rx_packets: int
    tx_packets: int
    rx_bytes: int
    tx_bytes: int
    #: Changes when the container's process was replaced (a restart resets the counters).
    identity: str


@dataclass(frozen=True)
class CgroupFiles:
    """Where one process's counters live."""

    version: int  # 1 or 2 (of the CPU controller; memory follows the same layout rules)
    cpu: Path  # cpuacct.usage (v1, ns) or cpu.stat (v2, usage_usec)
    memory_usage: Path  # memory.usage_in_bytes (v1) or memory.current (v2)
    memory_stat: Path
    net_dev: Path
    process_stat: Path

    @property
    def source(self) -> str:
        """``cgroup v1`` or ``cgroup v2``."""
        return f"cgroup v{self.version}"


@dataclass(frozen=True)
class CgroupMount:
    """One cgroup hierarchy's mount: its root, mount point, ``cgroup`` or ``cgroup2``, options."""

    root: str
    point: Path
    fstype: str
    options: frozenset[str]


def cgroup_mounts(mountinfo: Path) -> list[CgroupMount]:
    """Every cgroup mount of a ``mountinfo`` file; CgroupError when it cannot be read."""
    mounts = []
    for line in _read(mountinfo).splitlines():
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(rest) < 3:
            continue
        if rest[0] in ("cgroup", "cgroup2"):
            point = Path(fields[4].replace("\\040", " "))
            mounts.append(CgroupMount(fields[3], point, rest[0], frozenset(rest[2].split(","))))
    return mounts


def memberships(cgroup_file: Path) -> list[tuple[frozenset[str], str]]:
    """``(controllers, path)`` per hierarchy; v2 is the entry with no controllers."""
    out = []
    for line in _read(cgroup_file).splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            out.append((frozenset(c for c in parts[1].split(",") if c), parts[2]))
    return out


def _under(mount: CgroupMount, path: str) -> Path:
    """The folder of cgroup ``path`` below ``mount`` (whose own root may be a sub-path)."""
    relative = path
    if mount.root not in ("", "/") and (path == mount.root or path.startswith(mount.root.rstrip("/") + "/")):
        relative = path[len(mount.root) :]
    return mount.point / relative.lstrip("/")


def _v1_folder(mounts: list[CgroupMount], groups: list[tuple[frozenset[str], str]], controller: str) -> Path | None:
    for mount in mounts:
        if mount.fstype == "cgroup" and controller in mount.options:
            for controllers, path in groups:
                if controller in controllers:
                    return _under(mount, path)
    return None


def _v2_folder(mounts: list[CgroupMount], groups: list[tuple[frozenset[str], str]], needed: str) -> Path | None:
    unified = [path for controllers, path in groups if not controllers]
    for mount in mounts:
        if mount.fstype == "cgroup2" and unified:
            folder = _under(mount, unified[0])
            if (folder / needed).exists():
                return folder
    return None


def locate(pid: int, proc: Path = Path("/proc")) -> CgroupFiles:
    """The counter files of process ``pid``; CgroupError naming what is missing."""
    mounts = cgroup_mounts(proc / "self" / "mountinfo")
    groups = memberships(proc / str(pid) / "cgroup")
    cpu_v1, mem_v1 = _v1_folder(mounts, groups, "cpuacct"), _v1_folder(mounts, groups, "memory")
    if cpu_v1 is not None and mem_v1 is not None:
        version, cpu, memory_usage, memory = 1, cpu_v1 / "cpuacct.usage", mem_v1 / "memory.usage_in_bytes", mem_v1
    else:
        folder = _v2_folder(mounts, groups, "cpu.stat")
        if folder is None:
            where = ", ".join(f"{','.join(sorted(c)) or 'unified'}:{p}" for c, p in groups) or "none"
            raise CgroupError(
                f"no cpuacct+memory (v1) or cpu.stat (v2) cgroup found for pid {pid} "
                f"(its cgroups: {where}; cgroup mounts: {', '.join(str(m.point) for m in mounts) or 'none'})"
            )
        version, cpu, memory_usage, memory = 2, folder / "cpu.stat", folder / "memory.current", folder
    files = CgroupFiles(
        version=version,
        cpu=cpu,
        memory_usage=memory_usage,
        memory_stat=memory / "memory.stat",
        net_dev=proc / str(pid) / "net" / "dev",
        process_stat=proc / str(pid) / "stat",
    )
    for path in (files.cpu, files.memory_usage, files.memory_stat):
        if not path.exists():
            raise CgroupError(f"cgroup file {path} of pid {pid} does not exist")
    return files


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise CgroupError(f"cannot read {path}: {exc}") from None


def _integer(text: str, path: Path) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise CgroupError(f"{path}: expected a number, got {text.strip()[:40]!r}") from None


def _keyed(text: str, path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[key] = int(value)
    if not out:
        raise CgroupError(f"{path}: no counters in it")
    return out


def interface_counters(text: str, path: Path) -> dict[str, tuple[int, int, int, int]]:
    """``{interface: (rx_packets, tx_packets, rx_bytes, tx_bytes)}`` from a ``net/dev`` file."""
    out: dict[str, tuple[int, int, int, int]] = {}
    for line in text.splitlines():
        name, sep, values = line.partition(":")
        if not sep or "|" in line:
            continue
        numbers = values.split()
        if len(numbers) < 16:
            raise CgroupError(f"{path}: cannot read interface line {line.strip()[:60]!r}")
        out[name.strip()] = (int(numbers[1]), int(numbers[9]), int(numbers[0]), int(numbers[8]))
    if not out:
        raise CgroupError(f"{path}: no interfaces in it")
    return out


def net_counters(text: str, path: Path) -> tuple[int, int, int, int]:
    """``(rx_packets, tx_packets, rx_bytes, tx_bytes)`` summed over every interface but ``lo``."""
    totals = [0, 0, 0, 0]
    for name, counts in interface_counters(text, path).items():
        if name != "lo":
            totals = [a + b for a, b in zip(totals, counts, strict=True)]
    rx_p, tx_p, rx_b, tx_b = totals
    return rx_p, tx_p, rx_b, tx_b


def process_identity(stat_path: Path) -> str:
    """``pid:start time`` of a process (a replaced process has another); CgroupError when gone."""
    text = _read(stat_path)
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) < 20:
        raise CgroupError(f"{stat_path}: cannot read the process start time")
    return f"{stat_path.parent.name}:{fields[19]}"


def read_counters(files: CgroupFiles) -> Counters:
    """Read every counter of ``files`` now."""
    if files.version == 1:
        cpu_ns = _integer(_read(files.cpu), files.cpu)
    else:
        cpu_stat = _keyed(_read(files.cpu), files.cpu)
        if "usage_usec" not in cpu_stat:
            raise CgroupError(f"{files.cpu}: no usage_usec in it")
        cpu_ns = cpu_stat["usage_usec"] * 1000
    rx_p, tx_p, rx_b, tx_b = net_counters(_read(files.net_dev), files.net_dev)
    return Counters(
        cpu_ns=cpu_ns,
        mem_bytes=read_memory(files),
        rx_packets=rx_p,
        tx_packets=tx_p,
        rx_bytes=rx_b,
        tx_bytes=tx_b,
        identity=process_identity(files.process_stat),
    )


def read_memory(files: CgroupFiles) -> int:
    """The working set now: usage minus the inactive file cache (v1 names it
    ``total_inactive_file`` for the hierarchy, v2 ``inactive_file``)."""
    usage = _integer(_read(files.memory_usage), files.memory_usage)
    stat = _keyed(_read(files.memory_stat), files.memory_stat)
    inactive = stat.get("total_inactive_file", stat.get("inactive_file", 0))
    return max(0, usage - inactive)


def counters_from_docker_stats(stats: Mapping[str, Any], identity: str, what: str) -> Counters:
    """Counters from one Docker stats snapshot (``stats(stream=False, one_shot=True)``);
    ``identity`` is the container's start time; CgroupError naming ``what`` when a field is
    missing (a stopped container reports none)."""
    try:
        cpu_ns = int(stats["cpu_stats"]["cpu_usage"]["total_usage"])
        memory = stats["memory_stats"]
        usage = int(memory["usage"])
    except (KeyError, TypeError, ValueError):
        raise CgroupError(f"Docker stats of {what} carry no CPU or memory counters (is it running?)") from None
    inner = memory.get("stats") or {}
    inactive = int(inner.get("total_inactive_file", inner.get("inactive_file", 0)) or 0)
    networks = stats.get("networks") or {}
    return Counters(
        cpu_ns=cpu_ns,
        mem_bytes=max(0, usage - inactive),
        rx_packets=sum(int(n.get("rx_packets", 0)) for n in networks.values()),
        tx_packets=sum(int(n.get("tx_packets", 0)) for n in networks.values()),
        rx_bytes=sum(int(n.get("rx_bytes", 0)) for n in networks.values()),
        tx_bytes=sum(int(n.get("tx_bytes", 0)) for n in networks.values()),
        identity=identity,
    )
