"""A Locust master that lives for a pytest session (or a test): workers attach once.

:class:`LocustSession` starts ``locust --master`` with the netperf listener in session mode
(``--netperf-control``, a Unix socket in a private temporary folder), plus any local worker
processes, waits until every worker (local and remote) has attached, and then runs each
round by one request on that socket.  Remote machines run ``netperf locust-worker --master
HOST:PORT``.  :meth:`close` asks the master to quit (it releases its workers; a
``netperf locust-worker`` starts its worker again and waits for the next session), then
terminates every process group it started and removes the folder; the processes also die
with the test process (see :mod:`.processes`).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pytest_netperf import defaults
from pytest_netperf.drivers.locust import commands, diagnosis
from pytest_netperf.drivers.locust.processes import LocustProcess, ProcessGroups
from pytest_netperf.errors import DriverError

#: Seconds allowed for the master to start listening on its control socket.
MASTER_START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class SessionSpec:
    """What a session master is made of; a test needing another spec gets another master."""

    files: tuple[Path, ...]
    user_class: Optional[str] = None
    python: str = "python"
    local_workers: int = 0
    remote_workers: int = 0
    bind_host: str = "127.0.0.1"
    port: int = 0
    workers_timeout_s: float = defaults.LOCUST_WORKERS_TIMEOUT_S
    cpus: Optional[str] = None

    @property
    def expected_workers(self) -> int:
        """Workers every round needs (local and remote)."""
        return self.local_workers + self.remote_workers


class LocustSession:
    """The master (and local workers) of one session; use as a context manager or :meth:`close`."""

    def __init__(self, spec: SessionSpec) -> None:
        if spec.expected_workers < 1:
            raise DriverError("a Locust session needs at least one worker (local or remote)")
        self.spec = spec
        self._folder: Optional[Path] = None
        self._groups: Optional[ProcessGroups] = None
        self._master: Optional[LocustProcess] = None
        self._workers: list[LocustProcess] = []
        self._control: Optional[socket.socket] = None
        self._reader: Any = None
        self.port = spec.port
        self.rounds = 0

    # -- life cycle -----------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        """True between :meth:`start` and :meth:`close`."""
        return self._master is not None

    @property
    def address(self) -> str:
        """``host:port`` the workers attach to."""
        return f"{self.spec.bind_host}:{self.port}"

    def start(self) -> LocustSession:
        """Start the master and the local workers; wait until every worker has attached."""
        if self.started:
            return self
        self._folder = Path(tempfile.mkdtemp(prefix="netperf-locust-session-"))
        self._groups = ProcessGroups(self._folder, cpus=self.spec.cpus)
        try:
            self._start_processes()
            self._connect()
            self.wait_for_workers()
        except BaseException:
            self.close()
            raise
        return self

    def _start_processes(self) -> None:
        assert self._groups is not None
        assert self._folder is not None
        spec = self.spec
        self.port = spec.port or commands.free_port(spec.bind_host)
        env = commands.locust_env()
        argv = commands.session_master_argv(
            spec.python,
            spec.files,
            spec.bind_host,
            self.port,
            self._folder / "control.sock",
            commands.free_port("127.0.0.1"),
            spec.user_class,
        )
        self._master = self._groups.start("master", argv, env)
        connect_host = "127.0.0.1" if spec.bind_host in ("0.0.0.0", "") else spec.bind_host
        topology = commands.Topology(python=spec.python, files=spec.files, master_host=connect_host)
        self._workers = [
            self._groups.start(f"worker {i + 1}", commands.worker_argv(topology, self.port), env)
            for i in range(spec.local_workers)
        ]

    def _connect(self) -> None:
        assert self._folder is not None
        assert self._master is not None
        path = self._folder / "control.sock"
        deadline = time.monotonic() + MASTER_START_TIMEOUT_S
        while True:
            self._check_alive()
            if path.exists():
                control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    control.connect(str(path))
                except OSError:
                    control.close()
                else:
                    self._control, self._reader = control, control.makefile("rb")
                    return
            if time.monotonic() > deadline:
                raise DriverError(
                    f"the Locust master did not start within {MASTER_START_TIMEOUT_S:.0f}s; last output:\n"
                    f"{diagnosis.last_lines(self._master.stderr_text())}"
                )
            time.sleep(0.05)

    def close(self) -> None:
        """Release the workers, stop every process started, remove the folder (idempotent)."""
        if self._control is not None:
            with contextlib.suppress(OSError, DriverError, ValueError):
                self._request({"cmd": "quit"}, timeout_s=5.0)
            with contextlib.suppress(OSError):
                self._reader.close()
                self._control.close()
        self._control = self._reader = None
        if self._groups is not None:
            self._groups.wait_all(3.0)
            self._groups.terminate_all()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
        self._groups, self._folder, self._master, self._workers = None, None, None, []

    def pids(self) -> list[int]:
        """Process ids of the master and the local workers (empty once closed)."""
        return [process.pid for process in ([self._master] if self._master else []) + self._workers]

    def __enter__(self) -> LocustSession:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- requests -------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """The master's view of its workers: ``{"workers": [{"id", "state"}], "ready": n}``."""
        return self._request({"cmd": "status"}, timeout_s=10.0)

    def wait_for_workers(self) -> int:
        """Wait until every expected worker is attached; DriverError naming how many came."""
        wanted = self.spec.expected_workers
        deadline = time.monotonic() + self.spec.workers_timeout_s
        attached = 0
        while time.monotonic() < deadline:
            attached = len([w for w in self.status()["workers"] if w["state"] != "missing"])
            if attached >= wanted:
                return attached
            time.sleep(0.2)
        raise DriverError(
            f"only {attached} of {wanted} Locust workers attached to the master at {self.address} "
            f"within {self.spec.workers_timeout_s:g}s"
            + (
                f"; start them with `netperf locust-worker --master <this host>:{self.port}` and open TCP port "
                f"{self.port} between the machines"
                if self.spec.remote_workers
                else ""
            )
        )

    def run_round(self, host: str, users: int, options: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Run one round; return the listener's document (``workers_missing`` names absentees)."""
        if not self.started:
            self.start()
        self.wait_for_workers()
        answer = self._request(
            {"cmd": "round", "host": host, "users": users, "workers": self.spec.expected_workers, "options": options},
            timeout_s=timeout_s,
        )
        self.rounds += 1
        if "error" in answer:
            raise DriverError(f"Locust master at {self.address}: {answer['error']}")
        return answer

    def _request(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if self._control is None:
            raise DriverError("the Locust session is not started")
        self._check_alive()
        self._control.settimeout(timeout_s)
        try:
            self._control.sendall((json.dumps(request) + "\n").encode())
            line = self._reader.readline()
        except (OSError, ValueError) as exc:
            self._check_alive()
            raise DriverError(f"no answer from the Locust master within {timeout_s:.0f}s ({exc})") from exc
        if not line:
            self._check_alive()
            raise DriverError("the Locust master closed its control connection")
        return dict(json.loads(line))

    def _check_alive(self) -> None:
        """DriverError when the master or a local worker has exited."""
        for process in ([self._master] if self._master else []) + self._workers:
            code = process.poll()
            if code is not None:
                stderr = process.stderr_text()
                cause = (
                    diagnosis.import_failure(stderr, str(self.spec.files[0]))
                    or diagnosis.listener_refusal(stderr)
                    or diagnosis.last_lines(stderr)
                )
                raise DriverError(f"Locust {process.name} exited with code {code}:\n{cause}")


class SessionPool:
    """The one session master of a pytest session (per process), replaced when a test needs
    another (a different locustfile, user class or worker count); :meth:`close` at the end."""

    def __init__(self) -> None:
        self._session: Optional[LocustSession] = None

    def session_for(self, spec: SessionSpec) -> LocustSession:
        """The session for ``spec`` (not started yet when new: its first round starts it)."""
        if self._session is not None and self._session.spec == spec:
            return self._session
        self.close()
        self._session = LocustSession(spec)
        return self._session

    @property
    def current(self) -> Optional[LocustSession]:
        """The session handed out last (None before the first or after :meth:`close`)."""
        return self._session

    def close(self) -> None:
        """Close the current session, if any."""
        session, self._session = self._session, None
        if session is not None:
            session.close()
