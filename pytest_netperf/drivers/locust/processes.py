"""Start Locust processes in their own process groups and make sure none outlives a round.

Each process gets a new session (so it and anything it forks share one process group),
writes stdout/stderr to files (no pipe can fill up and block it), and is terminated when
the :class:`ProcessGroups` context exits, whether the round succeeded, failed or was
interrupted: SIGTERM to its group and to any descendant that left the group (found with
psutil), a grace period, then SIGKILL.  A process that exits early is not reaped before
then, so its id keeps naming its group and cannot be reused meanwhile.  On Linux each
process also asks the kernel for SIGTERM when the thread that started it dies, so even a
test run killed without running ``finally`` blocks leaves no Locust process behind.  With
``cpus`` every process (and whatever it forks) runs on those cores only: the load driver's
share, away from the system under test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Mapping, Optional, Sequence

import psutil

from pytest_netperf.runtime.process_guard import driver_preexec


@dataclass
class LocustProcess:
    """One started process and where its output goes."""

    name: str
    popen: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path

    @property
    def pid(self) -> int:
        """Process id (also the id of its process group)."""
        return self.popen.pid

    def poll(self) -> Optional[int]:
        """Exit code (negative: killed by that signal), or None while it runs.

        Where the platform can, the exited process is left unreaped (see the module docstring).
        """
        if self.popen.returncode is not None or not hasattr(os, "waitid"):
            return self.popen.poll()
        state = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if state is None:
            return None
        return state.si_status if state.si_code == os.CLD_EXITED else -state.si_status

    def stderr_text(self) -> str:
        """Everything written to stderr so far."""
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def signal_group(self, signum: int) -> None:
        """Signal the process group, as long as this process is unreaped (its id is ours)."""
        if self.popen.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)

    def strays(self) -> list[psutil.Process]:
        """Live descendants outside this process's group (``signal_group`` misses them)."""
        if self.popen.returncode is not None:
            return []
        try:
            descendants = psutil.Process(self.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        strays = []
        for descendant in descendants:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if os.getpgid(descendant.pid) != self.pid:
                    strays.append(descendant)
        return strays


class ProcessGroups:
    """A set of started processes that are all gone when the context exits.

    ``cpus`` (a cpuset such as ``0-1``) pins every process started to those cores; a core
    this process may not use is a ValueError at :meth:`start`.
    """

    def __init__(self, log_dir: Path, grace_s: float = 3.0, cpus: Optional[str] = None) -> None:
        self._log_dir = Path(log_dir)
        self._grace_s = grace_s
        self.cpus = cpus
        self.processes: list[LocustProcess] = []

    def start(self, name: str, argv: Sequence[str], env: Optional[Mapping[str, str]] = None) -> LocustProcess:
        """Start ``argv`` in a new session, output to ``<log_dir>/<name>.{out,err}``."""
        slug = name.replace(" ", "-")
        stdout_path = self._log_dir / f"{slug}.out"
        stderr_path = self._log_dir / f"{slug}.err"
        preexec = driver_preexec(self.cpus, signal.SIGTERM)
        with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
            popen = self._spawn(argv, env, out, err, preexec)
        process = LocustProcess(name, popen, stdout_path, stderr_path)
        self.processes.append(process)
        return process

    @staticmethod
    def _spawn(
        argv: Sequence[str],
        env: Optional[Mapping[str, str]],
        out: IO[bytes],
        err: IO[bytes],
        preexec: Callable[[], None],
    ) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=dict(env) if env is not None else None,
            start_new_session=True,
            preexec_fn=preexec,
        )

    def wait_all(self, timeout_s: float) -> bool:
        """Wait until every process exited or ``timeout_s`` passed; True when all exited."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(process.poll() is not None for process in self.processes):
                return True
            time.sleep(0.05)
        return all(process.poll() is not None for process in self.processes)

    def terminate_all(self) -> None:
        """SIGTERM every group and stray, wait the grace period, SIGKILL what is left, reap all."""
        strays = [stray for process in self.processes for stray in process.strays()]
        self._signal_all(signal.SIGTERM, strays)
        deadline = time.monotonic() + self._grace_s
        self.wait_all(self._grace_s)
        _, strays = psutil.wait_procs(strays, timeout=max(0.0, deadline - time.monotonic()))
        self._signal_all(signal.SIGKILL, strays)
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL cannot be ignored
                process.popen.wait(timeout=5.0)

    def _signal_all(self, signum: int, strays: list[psutil.Process]) -> None:
        for process in self.processes:
            process.signal_group(signum)
        for stray in strays:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                stray.send_signal(signum)

    def __enter__(self) -> ProcessGroups:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.terminate_all()
