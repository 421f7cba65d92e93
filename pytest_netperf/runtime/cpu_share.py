"""What share of a CPU this thread gets: its wait behind other tasks, its cgroups' CPU quota.

For the machine-speed calibration, which wants the machine's speed, not the neighbours' of
the moment.

- **Run-queue wait.** The kernel counts, per thread, the time it was runnable but not
  running: ``run_delay``, the second field of ``/proc/<pid>/task/<tid>/schedstat`` (kernels
  with schedstats, as Debian, Ubuntu and RHEL build them). Other tasks on the same cores
  cause it, and so does the throttling of a CPU quota. Steal (a hypervisor running other
  guests) is not in it.
- **CPU quota.** The quota of this process's CPU cgroup and of its visible ancestors
  (v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, v2 ``cpu.max``), in CPUs: the smallest
  along the chain, None when unlimited. A quota of an ancestor hidden by a cgroup namespace
  cannot be read.

Every read tolerates absence (no schedstat, no cgroup, another OS): None.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Optional


def thread_schedstat(proc: Path = Path("/proc")) -> Optional[Path]:
    """The schedstat file of the calling thread, or None when the kernel has none."""
    path = proc / "self" / "task" / str(threading.get_native_id()) / "schedstat"
    return path if path.exists() else None


def run_delay_s(schedstat: Optional[Path]) -> Optional[float]:
    """Seconds the thread has waited on a run queue so far (cumulative), or None."""
    if schedstat is None:
        return None
    try:
        return int(schedstat.read_text().split()[1]) * 1e-9
    except (OSError, IndexError, ValueError):
        return None


def cpu_quota(proc: Path = Path("/proc")) -> Optional[float]:
    """The CPU quota of this process, in CPUs (0.5: half of one): the smallest of its CPU
    cgroup and its visible ancestors; None when none is set or none can be read."""
    found = found_quotas(cgroup_chain(proc))
    return min(found) if found else None


def found_quotas(chain: list[tuple[Path, int]]) -> list[float]:
    """The quotas (in CPUs) set along ``chain`` of (folder, cgroup version)."""
    out = []
    for folder, version in chain:
        try:
            if version == 1:
                quota = int((folder / "cpu.cfs_quota_us").read_text())
                period = int((folder / "cpu.cfs_period_us").read_text())
            else:
                text = (folder / "cpu.max").read_text().split()
                if not text or text[0] == "max":
                    continue
                quota, period = int(text[0]), int(text[1]) if len(text) > 1 else 100_000
        except (OSError, ValueError, IndexError):
            continue
        if quota > 0 and period > 0:
            out.append(quota / period)
    return out


def cgroup_chain(proc: Path = Path("/proc")) -> list[tuple[Path, int]]:
    """(folder, version) of this process's CPU cgroup and of its ancestors up to the mount:
    the v1 ``cpu`` hierarchy, else v2; empty when neither is found."""
    try:
        mountinfo = (proc / "self" / "mountinfo").read_text()
        memberships = (proc / "self" / "cgroup").read_text()
    except OSError:
        return []
    groups = []
    for line in memberships.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            groups.append((set(filter(None, parts[1].split(","))), parts[2]))
    mounts = []
    for line in mountinfo.splitlines():
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if len(fields) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
            mounts.append((rest[0], fields[3], Path(fields[4].replace("\\040", " ")), set(rest[2].split(","))))
    wanted = [(1, m, p) for m in mounts if m[0] == "cgroup" and "cpu" in m[3] for c, p in groups if "cpu" in c]
    wanted += [(2, m, p) for m in mounts if m[0] == "cgroup2" for c, p in groups if not c]
    for version, (_, root, point, _), path in wanted:
        if root not in ("", "/") and (path == root or path.startswith(root.rstrip("/") + "/")):
            path = path[len(root) :]
        folder = point / path.lstrip("/")
        if folder.is_dir():
            return [(f, version) for f in [folder, *folder.parents] if f == point or point in f.parents]
    return []
