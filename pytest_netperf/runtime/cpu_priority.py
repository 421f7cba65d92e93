"""A CPU weight for what a gate measures: the stack's containers and the load drivers run in a
cgroup of this session whose weight is a multiple of the default, so that other jobs'
processes and containers on the runner (scheduled by the same kernel) take less of their time.

Measured beside ``busy-neighbor --level busy`` (two workers 50% busy in ~100 ms bursts, in
the root cgroup), unchanged echo twins pinned to one core, a fixed rate: the per-round
P90 ratio of the two sides spread 30.1% at the default weight and 12.9% at 20x, and the gates
decided in 9 s instead of 23 s (``benchmarks/gate_power.py``; docs/budgets.md). Both sides get
the same weight, so a comparison stays fair; a hypervisor's steal is not the kernel's to
weigh and stays as it is.

The group is made under the root of the CPU hierarchy, or, where this process runs under a
CPU quota (a CI job's limit, ``benchmarks/slow_machine.py``), directly under the nearest of
its cgroups that carries one, so that the limit holds for the stack too.

How, per cgroup layout (``docker info``: CgroupDriver, CgroupVersion):

- **cgroupfs, v1**: the folder ``netperf-<session>`` in the ``cpu`` hierarchy with
  ``cpu.shares`` = factor x 1024; containers get it as ``cgroup_parent`` (Docker
  makes the same folder in every other hierarchy), and this process moves into its leaf
  ``driver`` (in the ``cpu`` hierarchy only), so the drivers it starts inherit it. A kernel
  with real-time group scheduling refuses SCHED_FIFO (``--netperf-realtime``) in a group
  without real-time runtime: the group and its leaf get a share of the parent's, and where
  none is free this process stays where it was.
- **cgroupfs, v2**: the same folder under the unified mount, ``cpu.weight`` = factor x 100
  (at most 10000), the ``cpu`` controller enabled for its children; the drivers stay where
  they were (cgroup v2 allows the ``cpu`` controller only while real-time processes are in
  the root group).
- **systemd** (the default on cgroup v2 hosts): not done; Docker's cgroups belong to systemd
  there, and the gate says the stack runs at the default weight.

:meth:`CpuPriority.close` moves this process back where it was and removes every folder it
or Docker made. Nothing here runs at import time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from pytest_netperf.errors import CgroupError
from pytest_netperf.runtime.cgroups import cgroup_mounts, memberships
from pytest_netperf.runtime.cpu_share import cgroup_chain, found_quotas

#: Default CPU weight of a cgroup: v1 ``cpu.shares``, v2 ``cpu.weight``.
V1_DEFAULT_SHARES = 1024
V2_DEFAULT_WEIGHT = 100
V1_MAX_SHARES = 262_144
V2_MAX_WEIGHT = 10_000
#: The leaf that this process (and so every driver it starts) joins.
DRIVER_LEAF = "driver"


@dataclass
class CpuPriority:
    """This session's weighted cgroup (see the module's docstring)."""

    #: ``cgroup_parent`` of the containers: ``/netperf-<session>``.
    parent: str
    factor: float
    version: int
    #: The group's folder in the CPU hierarchy (v1 ``cpu``, or the unified one).
    folder: Path
    #: Where this process was before it joined the leaf (that folder's ``cgroup.procs``);
    #: None when it did not join.
    home: Optional[Path]
    #: The mount points of every hierarchy Docker may have made the group's folder in.
    mounts: tuple[Path, ...] = field(default_factory=tuple)

    def docker_options(self) -> dict[str, Any]:
        """What ``containers.create`` needs to put a container in the group."""
        return {"cgroup_parent": self.parent}

    def compose_keys(self) -> dict[str, Any]:
        """The same for a service of a Compose override file."""
        return {"cgroup_parent": self.parent}

    def describe(self) -> str:
        """``the stack and the drivers at 20x the default CPU weight (cgroup /netperf-1a2b3c4d, v1)``."""
        who = "the stack and the drivers" if self.home is not None else "the stack (not the drivers)"
        return f"{who} at {self.factor:g}x the default CPU weight (cgroup {self.parent}, v{self.version})"

    def close(self, attempts: int = 20, pause_s: float = 0.1) -> list[str]:
        """Move this process back, remove the leaf and the group's folders; what could not be
        done (a folder still busy after ``attempts``), empty when all went."""
        problems: list[str] = []
        if self.home is not None:
            try:
                _write(self.home, str(os.getpid()))
            except OSError as exc:
                problems.append(f"cannot move this process back to {self.home.parent}: {exc.strerror or exc}")
        relative = self.parent.strip("/")
        folders = [self.folder / DRIVER_LEAF, self.folder]
        folders += [mount / relative for mount in self.mounts if mount / relative != self.folder]
        for folder in folders:
            for attempt in range(attempts):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if attempt == attempts - 1:
                        problems.append(f"cannot remove cgroup {folder}: {exc.strerror or exc}")
                    else:
                        time.sleep(pause_s)
        return problems


class PriorityUnavailable(Exception):
    """Why the weighted group cannot be had here (the gate goes on at the default weight)."""


def raise_priority(
    session_id: str, docker_info: Mapping[str, Any], factor: float, proc: Path = Path("/proc")
) -> CpuPriority:
    """Make the weighted group of ``session_id`` and move this process into its leaf.

    Raises PriorityUnavailable naming why (the systemd cgroup driver, no writable cgroup
    folder, no CPU controller) and leaves nothing behind then.
    """
    if factor <= 1:
        raise PriorityUnavailable(f"a CPU weight factor must be above 1, got {factor:g}")
    driver = str(docker_info.get("CgroupDriver") or "cgroupfs")
    if driver != "cgroupfs":
        raise PriorityUnavailable(
            f"Docker's cgroups are managed by {driver}, so the stack runs at the default CPU weight "
            "(the weighted group needs the cgroupfs driver)"
        )
    try:
        mounts = cgroup_mounts(proc / "self" / "mountinfo")
        groups = memberships(proc / "self" / "cgroup")
    except CgroupError as exc:
        raise PriorityUnavailable(str(exc)) from None
    v1_cpu = [m.point for m in mounts if m.fstype == "cgroup" and "cpu" in m.options]
    if v1_cpu:
        version, mount = 1, v1_cpu[0]
        own = next((path for controllers, path in groups if "cpu" in controllers), "/")
        weight_file, weight = "cpu.shares", min(V1_MAX_SHARES, round(V1_DEFAULT_SHARES * factor))
        others = tuple(m.point for m in mounts)  # every hierarchy, a hybrid layout's unified one too
    else:
        unified = [m.point for m in mounts if m.fstype == "cgroup2"]
        if not unified:
            raise PriorityUnavailable("no cgroup hierarchy with a CPU controller is mounted")
        version, mount = 2, unified[0]
        own = next((path for controllers, path in groups if not controllers), "/")
        weight_file, weight = "cpu.weight", min(V2_MAX_WEIGHT, round(V2_DEFAULT_WEIGHT * factor))
        others = (mount,)
    chain = cgroup_chain(proc)
    base = next((found for found, v in chain if found_quotas([(found, v)])), mount)
    folder = base / f"netperf-{session_id}"
    parent = "/" + str(folder.relative_to(mount))
    home = mount / own.strip("/") / "cgroup.procs"
    made = CpuPriority(parent, factor, version, folder, None, others)
    try:
        folder.mkdir(exist_ok=True)
        if version == 2:
            _write(folder / "cgroup.subtree_control", "+cpu")
        _write(folder / weight_file, str(weight))
        if version == 1:
            (folder / DRIVER_LEAF).mkdir(exist_ok=True)
            if _real_time_runtime(mount, folder):
                _write(folder / DRIVER_LEAF / "cgroup.procs", str(os.getpid()))
                made.home = home
    except OSError as exc:
        made.close()
        raise PriorityUnavailable(
            f"cannot make the weighted cgroup {folder}: {exc.strerror or exc} (not root, or a read-only cgroup "
            "file system: the stack runs at the default CPU weight)"
        ) from None
    return made


#: Real-time runtime (us per second and CPU) tried for the group, largest first: the driver
#: runs SCHED_FIFO only in open loop (``--netperf-realtime``), where it uses a few percent of a
#: core, and two sessions (xdist workers) fit beside each other in the root's 950,000.
RT_RUNTIMES_US = (400_000, 200_000, 100_000)


def _real_time_runtime(mount: Path, folder: Path) -> bool:
    """Give the v1 group ``folder`` and its leaf real-time runtime where the kernel schedules
    real-time tasks per group (``cpu.rt_runtime_us``); False when none is free."""
    if not (folder / "cpu.rt_runtime_us").exists():
        return True  # no real-time group scheduling: SCHED_FIFO works in any group
    for runtime in RT_RUNTIMES_US:
        try:
            _write(folder / "cpu.rt_runtime_us", str(runtime))
            _write(folder / DRIVER_LEAF / "cpu.rt_runtime_us", str(runtime))
            return True
        except OSError:
            continue
    return False


def _write(path: Path, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def remove_stale_groups(proc: Path = Path("/proc")) -> list[str]:
    """Remove the weighted groups of sessions that ended without closing theirs (killed): a
    ``netperf-*`` folder in any cgroup hierarchy that holds no process and no other folder
    (``rmdir`` refuses a group in use, so a running session's stays). The folders removed."""
    try:
        mounts = cgroup_mounts(proc / "self" / "mountinfo")
    except CgroupError:
        return []
    removed = []
    for mount in mounts:
        for group in sorted(mount.point.glob("netperf-*")):
            for folder in (group / DRIVER_LEAF, group):
                try:
                    folder.rmdir()
                except OSError:
                    continue
                if folder == group:
                    removed.append(str(group))
    return removed


def outside_cgroup_procs(proc: Path = Path("/proc")) -> Optional[Path]:
    """Where a process this one starts goes to be outside a weighted group this process sits
    in (a test starting a neighbour, the way another job's processes are): the
    ``cgroup.procs`` of the cgroup that holds the group; None when this process is in none."""
    chain = cgroup_chain(proc)
    if len(chain) >= 3 and chain[0][0].name == DRIVER_LEAF and chain[1][0].name.startswith("netperf-"):
        return chain[2][0] / "cgroup.procs"
    return None
