"""Run a command on an emulated slower machine: the command and every container share a CPU quota.

``python benchmarks/slow_machine.py --cpus 1 -- python -m pytest -m netperf examples/`` runs
the command in a cgroup below Docker's container parent and puts a CFS quota of ``--cpus``
CPUs on that parent, so the command, the processes it starts (the Rust driver, iperf3) and
every container Docker runs share ``--cpus`` CPUs. On a 2-core machine ``--cpus 1`` is a
machine with half the CPU: closed-loop throughput halves and the machine-speed calibration
measures it 2x slower (:func:`pytest_netperf.runtime.machine_speed.quota_slowdown`). One
thread is not slowed while the others wait, so it is a machine of half the cores' time, not
one whose every core runs at half the clock.

The quota and the cgroup are removed when the command ends, fails or is interrupted.
Needs root and Docker's ``cgroupfs`` cgroup driver (v1: ``<cpu mount>/docker``; v2:
``/sys/fs/cgroup/docker``); with the ``systemd`` driver the containers' parent is
``system.slice``, which holds the machine's services too, and the script refuses.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

CHILD = "netperf-slow-machine"
PERIOD_US = 100_000
#: Real-time runtime per second for the command's cgroup (the root's default is 950,000).
RT_RUNTIME_US = 400_000


@dataclass(frozen=True)
class DockerParent:
    """Docker's parent cgroup of containers on the CPU controller."""

    folder: Path
    version: int

    def read_quota(self) -> str:
        name = "cpu.cfs_quota_us" if self.version == 1 else "cpu.max"
        return (self.folder / name).read_text().strip()

    def set_quota(self, cpus: float) -> None:
        quota = int(cpus * PERIOD_US)
        if self.version == 1:
            (self.folder / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.folder / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (self.folder / "cpu.max").write_text(f"{quota} {PERIOD_US}")

    def allow_realtime(self, child: Path) -> Optional[str]:
        """Give the parent and ``child`` real-time runtime (cgroup v1 with RT group scheduling:
        a SCHED_FIFO thread in a group without any is refused, and the driver's
        ``--realtime`` with it); returns the parent's former value to restore, None on v2."""
        name = "cpu.rt_runtime_us"
        if self.version != 1 or not (self.folder / name).exists():
            return None
        saved = (self.folder / name).read_text().strip()
        (self.folder / name).write_text(str(RT_RUNTIME_US))
        (child / name).write_text(str(RT_RUNTIME_US))
        return saved

    def restore(self, saved: str) -> None:
        if self.version == 1:
            (self.folder / "cpu.cfs_quota_us").write_text(saved)
        else:
            (self.folder / "cpu.max").write_text(saved)


def docker_parent() -> DockerParent:
    """The cgroup Docker puts containers in, or SystemExit saying why it cannot be used."""
    try:
        info = json.loads(
            subprocess.run(
                ["docker", "info", "--format", "{{json .}}"], capture_output=True, text=True, check=True, timeout=30
            ).stdout
        )
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as exc:
        raise SystemExit(f"slow_machine: `docker info` failed ({exc}); is the Docker daemon running?") from exc
    driver, version = info.get("CgroupDriver"), str(info.get("CgroupVersion") or "1")
    if driver != "cgroupfs":
        raise SystemExit(
            f"slow_machine: Docker uses the {driver!r} cgroup driver; its containers' parent holds the "
            "machine's services too, so a quota there would slow them as well (needs cgroupfs)"
        )
    if version == "2":
        folder, number = Path("/sys/fs/cgroup/docker"), 2
    else:
        folder, number = cpu_mount() / "docker", 1
    folder.mkdir(exist_ok=True)  # Docker makes it with its first container; it uses an existing one
    return DockerParent(folder, number)


def cpu_mount() -> Path:
    """Where the cgroup v1 ``cpu`` controller is mounted."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        head, _, tail = line.partition(" - ")
        rest = tail.split()
        if len(rest) >= 3 and rest[0] == "cgroup" and "cpu" in rest[2].split(","):
            return Path(head.split()[4])
    raise SystemExit("slow_machine: no cgroup v1 cpu controller is mounted")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpus", type=float, default=None, help="CPUs for everything (default: half the cores)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command: slow_machine.py [--cpus N] -- COMMAND ...")
    cores = os.cpu_count() or 1
    cpus = args.cpus if args.cpus is not None else cores / 2
    if not 0.05 <= cpus <= cores:
        parser.error(f"--cpus {cpus:g}: expected 0.05 to {cores} (this machine's cores)")
    if os.geteuid() != 0:
        raise SystemExit("slow_machine: needs root (it writes Docker's cgroup)")
    parent = docker_parent()
    saved = parent.read_quota()
    child = parent.folder / CHILD
    child.mkdir(exist_ok=True)
    procs = child / "cgroup.procs"
    print(f"slow_machine: {cpus:g} of {cores} CPUs for the command and every container ({parent.folder})", flush=True)
    parent.set_quota(cpus)
    saved_rt = parent.allow_realtime(child)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        process = subprocess.Popen(command, preexec_fn=lambda: procs.write_text(str(os.getpid())))
        try:
            return process.wait()
        except KeyboardInterrupt:
            process.send_signal(signal.SIGINT)
            return process.wait()
    finally:
        parent.restore(saved)
        for pid in procs.read_text().split():  # strays of the command go back to the root
            with contextlib.suppress(OSError):
                (parent.folder.parent / "cgroup.procs").write_text(pid)
        if saved_rt is not None:
            with contextlib.suppress(OSError):
                (child / "cpu.rt_runtime_us").write_text("0")
                (parent.folder / "cpu.rt_runtime_us").write_text(saved_rt)
        try:
            child.rmdir()
        except OSError as exc:
            print(f"slow_machine: could not remove {child}: {exc}", file=sys.stderr)
        print(f"slow_machine: quota of {parent.folder} restored ({saved})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
