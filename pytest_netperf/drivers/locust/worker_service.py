"""``netperf locust-worker``: a Locust worker that stays attached to a master across sessions.

A load machine runs this once. It starts ``python -m locust --worker`` (with the netperf
listener next to the locustfile) and starts it again whenever it exits: while the master
is not up yet (Locust gives up connecting after a few minutes), after the master quits at
the end of a pytest session (the master releases its workers), or after a crash. On
SIGTERM or SIGINT it stops the Locust worker (its whole process group: SIGTERM, a grace
period, SIGKILL) and exits 0, so nothing is left behind, also as PID 1 in a container.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from pytest_netperf import defaults
from pytest_netperf.drivers.locust import DEFAULT_USER_FILE, LISTENER_FILE
from pytest_netperf.runtime.process_guard import die_with_parent

#: The environment variable the image's default command reads the master address from.
MASTER_ENV = "NETPERF_LOCUST_MASTER"


@dataclass(frozen=True)
class WorkerConfig:
    """What ``netperf locust-worker`` was asked to do."""

    master_host: str
    master_port: int
    locustfile: Optional[Path] = None
    python: str = sys.executable
    restart_delay_s: float = defaults.LOCUST_WORKER_RESTART_DELAY_S
    #: Stop after this many Locust worker runs (0: never); for tests.
    max_runs: int = 0

    def argv(self) -> list[str]:
        """The Locust worker command line."""
        user_file = self.locustfile or DEFAULT_USER_FILE
        return [
            self.python,
            "-m",
            "locust",
            "-f",
            f"{user_file},{LISTENER_FILE}",
            "--worker",
            "--master-host",
            self.master_host,
            "--master-port",
            str(self.master_port),
            "--loglevel",
            "INFO",
        ]


def parse_master(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) -> (host, port); ValueError naming the problem."""
    host, sep, port = str(text).strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected BIND:PORT such as 0.0.0.0:{defaults.LOCUST_MASTER_PORT}, got {text!r}")
    return host, int(port)


class WorkerService:
    """Runs and restarts the Locust worker until :meth:`stop` (or a signal) ends it."""

    def __init__(self, config: WorkerConfig, say: Callable[[str], None] = print) -> None:
        self.config = config
        self.say = say
        self._stop = threading.Event()
        self._child: Optional[subprocess.Popen[bytes]] = None
        self.runs = 0

    def stop(self, *_args: object) -> None:
        """Ask the loop to end (safe from a signal handler)."""
        self._stop.set()

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT end the service cleanly."""
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)

    def run(self) -> int:
        """Start the worker again and again; return 0 once stopped."""
        master = f"{self.config.master_host}:{self.config.master_port}"
        self.say(f"netperf locust-worker: serving master {master} (SIGTERM stops)")
        try:
            while not self._stop.is_set():
                code = self._run_once()
                self.runs += 1
                if self._stop.is_set() or (self.config.max_runs and self.runs >= self.config.max_runs):
                    break
                self.say(
                    f"netperf locust-worker: Locust worker exited with code {code}; "
                    f"reconnecting to {master} in {self.config.restart_delay_s:g}s"
                )
                self._stop.wait(self.config.restart_delay_s)
        finally:
            self._terminate()
        self.say("netperf locust-worker: stopped")
        return 0

    def _run_once(self) -> Optional[int]:
        self._child = subprocess.Popen(
            self.config.argv(),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent(signal.SIGTERM),
        )
        while not self._stop.is_set():
            code = self._child.poll()
            if code is not None:
                return code
            self._stop.wait(0.2)
        return None

    def _terminate(self, grace_s: float = 5.0) -> None:
        child, self._child = self._child, None
        if child is None or child.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=5.0)


def worker_main(master: Optional[str], locustfile: Optional[str]) -> int:
    """The ``netperf locust-worker`` command; returns the exit code."""
    text = master or os.environ.get(MASTER_ENV, "")
    if not text:
        print(f"netperf locust-worker: give --master HOST:PORT (or set {MASTER_ENV})", file=sys.stderr)
        return 2
    try:
        host, port = parse_master(text)
    except ValueError as exc:
        print(f"netperf locust-worker: --master: {exc}", file=sys.stderr)
        return 2
    path = Path(locustfile).resolve() if locustfile else None
    if path is not None and not path.is_file():
        print(f"netperf locust-worker: locustfile {path} does not exist", file=sys.stderr)
        return 2
    service = WorkerService(WorkerConfig(host, port, path), say=lambda line: print(line, flush=True))
    service.install_signal_handlers()
    return service.run()
