"""How busy the whole machine is: the kernel's CPU time counters and its load average.

Pure parsing of ``/proc/stat`` (:func:`parse_proc_stat`), ``/proc/loadavg``
(:func:`parse_loadavg`) and the root cgroup's CPU usage (:func:`parse_cgroup_usage`) from their
text, a reader that takes the paths as parameters (:func:`read_sample`, so tests hand it fake
files), and the difference of two samples (:func:`machine_load`).

``/proc/stat`` puts soft-interrupt time (most packet work) in its own column, but a cgroup's
CPU usage and a process's rusage charge the soft interrupts run in a task's context to that
task: on this project's VM a loopback HTTP load measured 1.99 cores in the root cgroup against
1.60 of process time plus 0.39 of interrupts in ``/proc/stat``. What the test's own stack and
driver used (their cgroups, their rusage) is only comparable with the root cgroup's usage,
which is read where it can be (:data:`ROOT_CGROUP_USAGE`). The kernel's threads
and the container runtime's processes (:data:`CONTAINER_RUNTIME_PROCESSES`) are read apart
(:func:`read_system_ticks`): they do work for the stack under test that no container's cgroup
holds. An nginx that logs every request to stdout kept ``dockerd`` at 0.25 cores during
closed-loop rounds; a balancer that opens a connection per request moved packet work to
``ksoftirqd`` (an idle runner measured 0.5-0.85 cores of "other processes" without them).

The counters are machine-wide and the same under cgroup v1 and v2; inside a container they
are the host's unless the runtime virtualises ``/proc``. A kernel that does not count steal
(bare metal, kernels before 2.6.11) shows none: steal is 0. Nothing here imports pytest or
reads anything at import time.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

PROC_STAT = Path("/proc/stat")
PROC_LOADAVG = Path("/proc/loadavg")
#: The root cgroup's cumulative CPU usage of all tasks: cgroup v1 ``cpuacct.usage``
#: (nanoseconds; the controller mounted alone or with ``cpu``), cgroup v2 ``cpu.stat``
#: (``usage_usec``; the root's file exists from Linux 5.8).
ROOT_CGROUP_USAGE: tuple[Path, ...] = (
    Path("/sys/fs/cgroup/cpuacct/cpuacct.usage"),
    Path("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage"),
    Path("/sys/fs/cgroup/cpu.stat"),
)
PROC = Path("/proc")
#: The container runtime's processes by their ``comm`` (at most 15 characters: ``containerd-shim``
#: is also ``containerd-shim-runc-v2``): Docker's and containerd's daemons and shims, the
#: userland port proxy, runc, and Podman's conmon.
CONTAINER_RUNTIME_PROCESSES = frozenset(
    {"dockerd", "containerd", "containerd-shim", "docker-proxy", "runc", "conmon", "podman"}
)

#: The columns of the ``cpu`` line of ``/proc/stat``, in order (kernel clock ticks). Older
#: kernels stop early (no ``steal``, ``guest``): a missing column counts 0. ``guest`` and
#: ``guest_nice`` are already inside ``user`` and ``nice``, so they are never added.
_COLUMNS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass(frozen=True)
class CpuTicks:
    """The machine's cumulative CPU time by kind, summed over its CPUs, in kernel clock ticks."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int
    #: CPUs the kernel lists (``cpuN`` lines).
    cores: int

    @property
    def processes(self) -> int:
        """Time the CPUs ran processes and kernel threads: user, nice and system."""
        return self.user + self.nice + self.system

    @property
    def interrupts(self) -> int:
        """Time in hard and soft interrupts (where the kernel accounts it apart: most packet work)."""
        return self.irq + self.softirq

    @property
    def busy(self) -> int:
        """Everything but idle and iowait: processes, interrupts and steal."""
        return self.processes + self.interrupts + self.steal

    @property
    def total(self) -> int:
        """All the CPU time the counters account for."""
        return self.busy + self.idle + self.iowait


@dataclass(frozen=True)
class MachineSample:
    """One reading of the machine's counters."""

    #: ``time.monotonic()`` when read.
    at: float
    #: Unix seconds when read.
    wall: float
    cpu: CpuTicks
    #: The one-minute load average (None where ``/proc/loadavg`` could not be read).
    load_1m: Optional[float]
    #: The root cgroup's cumulative task CPU time in nanoseconds (None where it cannot be read).
    task_ns: Optional[int] = None
    #: User and system clock ticks of each kernel thread and container runtime process by PID
    #: (None where ``/proc`` cannot be listed).
    system_ticks: Optional[Mapping[int, int]] = None


@dataclass(frozen=True)
class MachineLoad:
    """The machine between two samples; CPU time in cores (CPU seconds per second)."""

    #: Unix seconds of the first sample.
    started_at: float
    span_s: float
    cores: int
    #: Processes and kernel threads: user, nice and system.
    process_cores: float
    #: Hard and soft interrupts.
    interrupt_cores: float
    #: Share of all CPU time the hypervisor gave to other guests (0.0 without steal).
    steal_share: float
    #: The one-minute load average at the second sample.
    load_1m: Optional[float]
    #: All tasks' CPU in the cgroups' accounting (soft interrupts run in a task's context
    #: included); None where the root cgroup's usage could not be read in both samples.
    task_cores: Optional[float] = None
    #: The kernel's threads and the container runtime's processes; None where they could not
    #: be read in both samples.
    system_cores: Optional[float] = None

    @property
    def busy_cores(self) -> float:
        """Processes, interrupts and steal together."""
        return self.process_cores + self.interrupt_cores + self.steal_share * self.cores


def parse_proc_stat(text: str) -> CpuTicks:
    """The aggregate ``cpu`` line of ``/proc/stat`` and the number of ``cpuN`` lines;
    ValueError when there is no ``cpu`` line or a column is not a number."""
    values: Optional[list[int]] = None
    cores = 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name == "cpu":
            values = [int(v) for v in rest.split()]
        elif name.startswith("cpu") and name[3:].isdigit():
            cores += 1
    if values is None or len(values) < 4:
        raise ValueError("no 'cpu' line with at least four columns in /proc/stat")
    padded = (values + [0] * len(_COLUMNS))[: len(_COLUMNS)]
    return CpuTicks(**dict(zip(_COLUMNS, padded, strict=True)), cores=max(cores, 1))


def parse_loadavg(text: str) -> float:
    """The one-minute load average, the first field of ``/proc/loadavg``; ValueError otherwise."""
    fields = text.split()
    if not fields:
        raise ValueError("empty /proc/loadavg")
    return float(fields[0])


def parse_cgroup_usage(text: str) -> int:
    """Nanoseconds of a cgroup's CPU usage from the text of v1 ``cpuacct.usage`` (one number
    of nanoseconds) or v2 ``cpu.stat`` (its ``usage_usec`` line); ValueError otherwise."""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "usage_usec":
            return int(value) * 1000
    fields = text.split()
    if len(fields) == 1:
        return int(fields[0])
    raise ValueError("neither a cpuacct.usage number nor a cpu.stat usage_usec line")


def read_task_ns(paths: tuple[Path, ...] = ROOT_CGROUP_USAGE) -> Optional[int]:
    """The root cgroup's task CPU time from the first of ``paths`` that reads; None if none does."""
    for path in paths:
        try:
            return parse_cgroup_usage(path.read_text(encoding="ascii", errors="replace"))
        except (OSError, ValueError):
            continue
    return None


@functools.cache
def clock_ticks_per_s() -> int:
    """Clock ticks per second of ``/proc/PID/stat`` (USER_HZ; 100 where sysconf cannot say)."""
    try:
        return int(os.sysconf("SC_CLK_TCK")) or 100
    except (ValueError, OSError):
        return 100


#: ``PF_KTHREAD`` in the flags of ``/proc/PID/stat``: the process is a kernel thread.
KERNEL_THREAD_FLAG = 0x00200000


def parse_pid_stat(text: str) -> tuple[str, bool, int]:
    """A process's ``comm``, whether it is a kernel thread, and its user plus system clock
    ticks, from the text of ``/proc/PID/stat``; ValueError (or IndexError) when it does not parse."""
    start, end = text.index("("), text.rindex(")")
    fields = text[end + 2 :].split()
    return text[start + 1 : end], bool(int(fields[6]) & KERNEL_THREAD_FLAG), int(fields[11]) + int(fields[12])


def read_system_ticks(
    proc: Path = PROC, names: frozenset[str] = CONTAINER_RUNTIME_PROCESSES
) -> Optional[dict[int, int]]:
    """Clock ticks of the kernel's threads and of the processes named in ``names``, by PID,
    now; None where ``proc`` cannot be listed. A process that ends while it is read is left out."""
    try:
        pids = [int(entry) for entry in os.listdir(proc) if entry.isdigit()]
    except OSError:
        return None
    ticks: dict[int, int] = {}
    for pid in pids:
        try:
            stat = (proc / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
            comm, kernel_thread, used = parse_pid_stat(stat)
        except (OSError, ValueError, IndexError):
            continue
        if kernel_thread or comm in names:
            ticks[pid] = used
    return ticks


def read_sample(
    stat_path: Path = PROC_STAT,
    loadavg_path: Path = PROC_LOADAVG,
    clock: Callable[[], float] = time.monotonic,
    wall_clock: Callable[[], float] = time.time,
    usage_paths: tuple[Path, ...] = ROOT_CGROUP_USAGE,
    proc: Path = PROC,
) -> Optional[MachineSample]:
    """The machine's counters now; None where ``/proc/stat`` cannot be read or parsed (not
    Linux). A load average or root cgroup usage that cannot be read is None on its own."""
    try:
        cpu = parse_proc_stat(stat_path.read_text(encoding="ascii", errors="replace"))
    except (OSError, ValueError):
        return None
    try:
        load: Optional[float] = parse_loadavg(loadavg_path.read_text(encoding="ascii", errors="replace"))
    except (OSError, ValueError):
        load = None
    return MachineSample(
        at=clock(),
        wall=wall_clock(),
        cpu=cpu,
        load_1m=load,
        task_ns=read_task_ns(usage_paths),
        system_ticks=read_system_ticks(proc),
    )


def machine_load(before: MachineSample, after: MachineSample) -> Optional[MachineLoad]:
    """What the machine did between two samples; None when no time passed on the counters
    (or they went backwards: a CPU taken offline mid-round)."""
    span = after.at - before.at
    total = after.cpu.total - before.cpu.total
    if span <= 0 or total <= 0:
        return None
    cores = after.cpu.cores

    def in_cores(ticks: int) -> float:
        return max(0, ticks) / total * cores

    task_cores = None
    if before.task_ns is not None and after.task_ns is not None and after.task_ns >= before.task_ns:
        task_cores = (after.task_ns - before.task_ns) / 1e9 / span
    system_cores = None
    if before.system_ticks is not None and after.system_ticks is not None:
        # a process started meanwhile counts from zero; one that ended is not counted
        ticks = sum(max(0, used - before.system_ticks.get(pid, 0)) for pid, used in after.system_ticks.items())
        system_cores = ticks / clock_ticks_per_s() / span

    return MachineLoad(
        started_at=before.wall,
        span_s=span,
        cores=cores,
        process_cores=in_cores(after.cpu.processes - before.cpu.processes),
        interrupt_cores=in_cores(after.cpu.interrupts - before.cpu.interrupts),
        steal_share=max(0, after.cpu.steal - before.cpu.steal) / total,
        load_1m=after.load_1m,
        task_cores=task_cores,
        system_cores=system_cores,
    )
