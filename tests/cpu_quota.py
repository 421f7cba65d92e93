"""A child cgroup with a CPU quota, for runs that must see a slower machine (cgroup v1 and v2).

:func:`cpu_quota` creates the cgroup below this process's own CPU cgroup, sets the quota
(v1: ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``; v2: ``cpu.max``), yields it and removes it
on exit, moving any process still inside back to the parent first, even when the body
raises. :func:`joined` is the command that puts a program in the cgroup before it starts.
Where no cgroup can be created (no CPU controller, read-only ``/sys/fs/cgroup``, not root),
:class:`QuotaUnavailable` says why, precisely, for a skip.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

PERIOD_US = 100_000


class QuotaUnavailable(Exception):
    """No cgroup with a CPU quota can be made here; the message says why."""


@dataclass(frozen=True)
class QuotaGroup:
    """A cgroup with a CPU quota: its folder, version and quota."""

    path: Path
    version: int
    quota_us: int
    period_us: int

    @property
    def procs(self) -> Path:
        """The file a process writes its pid to, to join."""
        return self.path / "cgroup.procs"

    def throttled(self) -> int:
        """How many periods the cgroup was throttled in (``nr_throttled`` of ``cpu.stat``)."""
        for line in (self.path / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "nr_throttled":
                return int(value)
        return 0


def _cpu_parent(proc: Path = Path("/proc/self")) -> tuple[Path, int]:
    """This process's CPU cgroup folder and its version (v1 ``cpu`` controller first, then v2)."""
    mounts = []
    for line in (proc / "mountinfo").read_text().splitlines():
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if len(fields) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
            mounts.append((rest[0], fields[3], Path(fields[4]), set(rest[2].split(","))))
    groups = []
    for line in (proc / "cgroup").read_text().splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            groups.append((set(filter(None, parts[1].split(","))), parts[2]))

    def under(root: str, point: Path, path: str) -> Path:
        if root not in ("", "/") and (path == root or path.startswith(root.rstrip("/") + "/")):
            path = path[len(root) :]
        return point / path.lstrip("/")

    for fstype, root, point, options in mounts:
        if fstype == "cgroup" and "cpu" in options:
            for controllers, path in groups:
                if "cpu" in controllers:
                    return under(root, point, path), 1
    for fstype, root, point, _ in mounts:
        if fstype == "cgroup2":
            for controllers, path in groups:
                if not controllers:
                    folder = under(root, point, path)
                    if "cpu" in (folder / "cgroup.controllers").read_text().split():
                        return folder, 2
    raise QuotaUnavailable(
        "no cgroup CPU controller: neither a cgroup v1 'cpu' hierarchy nor cgroup v2 with 'cpu' "
        "in cgroup.controllers is mounted for this process"
    )


def _create(parent: Path, version: int, quota_us: int, period_us: int) -> QuotaGroup:
    path = parent / f"netperf-quota-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        path.mkdir()
    except OSError as exc:
        raise QuotaUnavailable(f"cannot create a cgroup in {parent}: {exc.strerror or exc}") from None
    group = QuotaGroup(path, version, quota_us, period_us)
    try:
        if version == 1:
            (path / "cpu.cfs_period_us").write_text(str(period_us))
            (path / "cpu.cfs_quota_us").write_text(str(quota_us))
        else:
            if "cpu" not in (path / "cgroup.controllers").read_text().split():
                (parent / "cgroup.subtree_control").write_text("+cpu")
            (path / "cpu.max").write_text(f"{quota_us} {period_us}")
    except OSError as exc:
        _remove(group, parent)
        raise QuotaUnavailable(f"cannot set a CPU quota on {path} (cgroup v{version}): {exc.strerror or exc}") from None
    return group


def _remove(group: QuotaGroup, parent: Path) -> None:
    """Move what is still inside back to ``parent``, then remove the folder (retrying while
    exiting processes leave it)."""
    for _ in range(50):
        try:
            for pid in group.procs.read_text().split():
                with contextlib.suppress(OSError):
                    (parent / "cgroup.procs").write_text(pid)
            group.path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
    group.path.rmdir()  # the last try raises, naming the folder left behind


@contextlib.contextmanager
def cpu_quota(fraction: float, period_us: int = PERIOD_US) -> Iterator[QuotaGroup]:
    """A child cgroup limited to ``fraction`` of one CPU; removed on exit."""
    try:
        parent, version = _cpu_parent()
    except OSError as exc:
        raise QuotaUnavailable(f"cannot read this process's cgroups: {exc}") from None
    group = _create(parent, version, int(fraction * period_us), period_us)
    try:
        yield group
    finally:
        _remove(group, parent)


def joined(group: QuotaGroup, command: Sequence[str]) -> list[str]:
    """``command`` started by a Python that first moves itself into ``group`` (then execs it):
    nothing of the command runs outside the quota."""
    script = "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); os.execvp(sys.argv[2], sys.argv[2:])"
    return [sys.executable, "-c", script, str(group.procs), *command]
