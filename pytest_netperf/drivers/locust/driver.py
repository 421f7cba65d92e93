"""The Locust driver: scenario-style user flows and multi-process or multi-machine load.

Runs Locust headless as subprocesses — one process, or a master plus N local workers (and
optionally remote workers that connect to the master) — with the netperf listener loaded
next to the user's locustfile or the default GET user.  The listener records every
request in an HdrHistogram (ns), excludes the warmup, merges the workers losslessly and
writes a JSON document that becomes the same :class:`RoundResult` the Rust driver returns.

Precision differs from the Rust driver: latency is always measured from the actual send
(rate-driven rounds pace users, an approximation of open loop; no intended-time
correction, so ``schedule_lag`` is ``None``), and each Locust process is single-threaded,
so a busy or starved process marks the round saturated.  See docs/locust.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional, Union

from pytest_netperf import defaults
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust import DEFAULT_USER_CLASS, DEFAULT_USER_FILE, LISTENER_FILE, commands, diagnosis
from pytest_netperf.drivers.locust.processes import LocustProcess, ProcessGroups
from pytest_netperf.drivers.locust.result_builder import RunContext, build_round_result
from pytest_netperf.drivers.locust.session import LocustSession, SessionSpec
from pytest_netperf.errors import DriverError, DriverNotFoundError
from pytest_netperf.results.model import RoundResult

#: Seconds allowed on top of warmup + duration for start-up, spawning and reporting.
STARTUP_ALLOWANCE_S = 30.0
#: Locust version per interpreter, found once per session.
_VERSIONS: dict[str, str] = {}


class LocustNotInstalled(DriverNotFoundError, DriverError):
    """Locust cannot be imported by the interpreter that should run it."""


class LocustDriver:
    """Measure one round with Locust; see the module docstring.

    ``workers`` local worker processes (0 = one plain process); ``remote_workers`` more
    workers the master waits for (started by hand on other machines, see docs/locust.md);
    ``master_port`` 0 picks a free port (remote workers need a fixed one); ``python`` is
    the interpreter that runs Locust; ``max_loop_lag_ms`` bounds the event-loop lag p99 of
    every Locust process (above it the round is saturated, like the Rust driver's --max-lag).

    With ``session`` (a :class:`LocustSession`, see :meth:`session_spec`) every round runs
    on that long-lived master and its attached workers instead of processes started per
    round; the caller closes the session.
    """

    name = "locust"
    #: Not pinned per round: a distributed session pins its master and local workers itself.
    cpus: Optional[str] = None

    def __init__(
        self,
        locustfile: Union[str, Path, None] = None,
        user_class: Optional[str] = None,
        workers: int = 0,
        master_host: str = "127.0.0.1",
        expect_workers_timeout_s: float = 20.0,
        remote_workers: int = 0,
        master_port: int = 0,
        python: str = sys.executable,
        max_loop_lag_ms: float = defaults.LOCUST_MAX_LOOP_LAG_MS,
        session: Optional[LocustSession] = None,
    ) -> None:
        if workers < 0 or remote_workers < 0:
            raise DriverError("workers and remote_workers must be >= 0")
        self.locustfile = Path(locustfile).resolve() if locustfile is not None else None
        self.user_class = user_class
        self.workers = int(workers)
        self.remote_workers = int(remote_workers)
        self.master_host = master_host
        self.master_port = int(master_port)
        self.expect_workers_timeout_s = float(expect_workers_timeout_s)
        self.python = python
        self.max_loop_lag_ms = float(max_loop_lag_ms)
        self.session = session
        #: Process ids of the Locust processes of the latest round (all reaped when run returns).
        self.last_pids: list[int] = []

    # -- public ----------------------------------------------------------------------------
    def version(self) -> str:
        """The installed Locust version (raises :class:`LocustNotInstalled`)."""
        if self.python not in _VERSIONS:
            probe = "import importlib.metadata as m, locust; print(m.version('locust'))"
            try:
                done = subprocess.run([self.python, "-c", probe], capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise LocustNotInstalled(f"cannot run {self.python} to find Locust: {exc}") from exc
            if done.returncode != 0:
                raise LocustNotInstalled(
                    f"Locust is not installed for {self.python} ({diagnosis.last_lines(done.stderr, 1)}); "
                    f"install it with `{self.python} -m pip install 'locust>=2.20'`"
                )
            _VERSIONS[self.python] = done.stdout.strip()
        return _VERSIONS[self.python]

    @property
    def distributed(self) -> bool:
        """True when a master and workers run instead of one process."""
        return self.workers + self.remote_workers > 0

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        """Measure ``url`` under ``shape``; raise DriverError when nothing could be measured."""
        _check_shape(shape)
        version = self.version()
        topology = self._topology()
        context = self._context(url, shape)
        if self.session is not None:
            return build_round_result(self._run_in_session(self.session, url, shape), context, version)
        with tempfile.TemporaryDirectory(prefix="netperf-locust-") as tmp:
            groups = ProcessGroups(Path(tmp))
            try:
                with groups:
                    document = self._run_processes(groups, Path(tmp), topology, url, shape)
            finally:
                self.last_pids = [process.pid for process in groups.processes]
        return build_round_result(document, context, version)

    def session_spec(self, cpus: Optional[str] = None) -> SessionSpec:
        """The master this driver's rounds need (its files, user class, workers, address)."""
        topology = self._topology()
        return SessionSpec(
            files=topology.files,
            user_class=self.user_class if self.locustfile is not None else None,
            python=self.python,
            local_workers=self.workers,
            remote_workers=self.remote_workers,
            bind_host=topology.bind_host,
            port=self.master_port,
            workers_timeout_s=self.expect_workers_timeout_s,
            cpus=cpus,
        )

    def _run_in_session(self, session: LocustSession, url: str, shape: LoadShape) -> dict[str, Any]:
        workers = session.spec.expected_workers
        if shape.connections < workers:
            raise DriverError(
                f"{shape.connections} Locust user(s) cannot keep {workers} workers busy: every worker must serve "
                "the round, so give at least one user (connection) per worker"
            )
        default_user = self.locustfile is None
        return session.run_round(
            commands.target_host(url, default_user),
            shape.connections,
            commands.round_options(shape, url, default_user),
            timeout_s=shape.warmup_s + shape.duration_s + commands.REPORT_TIMEOUT_S + STARTUP_ALLOWANCE_S + 60.0,
        )

    def worker_command(
        self, master_host: str, master_port: int, locustfile: Union[str, Path, None] = None
    ) -> list[str]:
        """The command a remote machine runs to join this driver's master (docs/locust.md)."""
        user_file = Path(locustfile) if locustfile is not None else (self.locustfile or DEFAULT_USER_FILE)
        return commands.remote_worker_argv(user_file, master_host, master_port)

    # -- set-up ----------------------------------------------------------------------------
    def _topology(self) -> commands.Topology:
        if self.locustfile is None:
            if self.user_class not in (None, DEFAULT_USER_CLASS):
                raise DriverError(
                    f"user class {self.user_class!r} not found: "
                    f"without a locustfile the only class is {DEFAULT_USER_CLASS}"
                )
            files = (DEFAULT_USER_FILE, LISTENER_FILE)
        elif not self.locustfile.is_file():
            raise DriverError(f"locustfile {self.locustfile} does not exist")
        else:
            files = (self.locustfile, LISTENER_FILE)
        return commands.Topology(
            python=self.python,
            files=files,
            local_workers=self.workers,
            remote_workers=self.remote_workers,
            master_host=self.master_host,
            expect_workers_timeout_s=self.expect_workers_timeout_s,
        )

    def _context(self, url: str, shape: LoadShape) -> RunContext:
        return RunContext(
            url=url,
            users=shape.connections,
            workers=self.workers + self.remote_workers,
            rate=shape.rate or None,
            arrival=shape.arrival,
            warmup_s=shape.warmup_s,
            duration_s=shape.duration_s,
            interval_s=shape.interval_s,
            timeout_s=shape.timeout_s,
            locustfile=str(self.locustfile) if self.locustfile else None,
            user_class=self.user_class if self.locustfile else DEFAULT_USER_CLASS,
            request={"method": shape.method, "headers": dict(shape.headers), "body_size": shape.body_size},
            notes=_notes(shape, has_locustfile=self.locustfile is not None),
            max_loop_lag_ns=self.max_loop_lag_ms * 1e6,
        )

    def _time_limit(self, shape: LoadShape) -> float:
        waiting = self.expect_workers_timeout_s if self.distributed else 0.0
        return waiting + shape.warmup_s + shape.duration_s + commands.REPORT_TIMEOUT_S + STARTUP_ALLOWANCE_S

    def _main_argv(self, topology: commands.Topology, url: str, shape: LoadShape, output: Path, port: int) -> list[str]:
        return commands.main_argv(
            topology,
            url,
            shape,
            output,
            port,
            run_time_s=self._time_limit(shape),
            default_user=self.locustfile is None,
            user_class=self.user_class,
        )

    # -- running ---------------------------------------------------------------------------
    def _run_processes(
        self, groups: ProcessGroups, tmp: Path, topology: commands.Topology, url: str, shape: LoadShape
    ) -> dict[str, Any]:
        """Start the single process (or master and workers), wait, read the listener's document."""
        output = tmp / "result.json"
        port = self.master_port or commands.free_port(topology.bind_host)
        env = commands.locust_env()
        main_name = "master" if topology.distributed else "locust"
        main = groups.start(main_name, self._main_argv(topology, url, shape, output, port), env)
        workers = [
            groups.start(f"worker {i + 1}", commands.worker_argv(topology, port), env) for i in range(self.workers)
        ]
        _wait(main, workers, self._time_limit(shape))
        groups.wait_all(5.0)
        if not output.exists():
            raise DriverError(self._explain_failure(main, topology))
        return dict(json.loads(output.read_text(encoding="utf-8")))

    def _explain_failure(self, main: LocustProcess, topology: commands.Topology) -> str:
        stderr = main.stderr_text()
        user_file = str(topology.files[0])
        missing = diagnosis.unknown_user_classes(stderr)
        if missing is not None:
            found = self._list_user_classes(topology)
            return (
                f"user class {', '.join(missing)} not found in {user_file}; "
                f"classes found: {', '.join(found) if found else 'none'}"
            )
        refusal = diagnosis.listener_refusal(stderr)
        if refusal is not None:
            return f"{user_file}: {refusal}"
        if diagnosis.no_user_class(stderr):
            return f"no Locust User class found in {user_file}"
        failure = diagnosis.import_failure(stderr, user_file)
        if failure is not None:
            return f"locustfile {user_file} failed to import: {failure}"
        connected = diagnosis.gave_up_on_workers(stderr)
        if connected is not None:
            expected = topology.local_workers + topology.remote_workers
            return (
                f"only {connected} of {expected} Locust workers connected to the master at "
                f"{topology.bind_host} within {topology.expect_workers_timeout_s:g}s"
            )
        return f"Locust exited with code {main.poll()} without a measurement:\n{diagnosis.last_lines(stderr)}"

    def _list_user_classes(self, topology: commands.Topology) -> list[str]:
        argv = commands.list_argv(self.python, topology.files)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60, start_new_session=True)
        except (OSError, subprocess.TimeoutExpired):
            return []
        return diagnosis.listed_user_classes(done.stdout + done.stderr)


def _check_shape(shape: LoadShape) -> None:
    if shape.new_connection_per_request:
        raise DriverError("the locust driver cannot open a new connection per request; use the rust driver")
    if shape.tls is not None and shape.tls.resumption:
        raise DriverError(
            "the locust driver cannot resume TLS sessions (Python's ssl module starts every "
            "connection with a full handshake); use the rust driver or leave resumption unset"
        )
    if shape.http2:
        raise DriverError(
            "the locust driver speaks HTTP/1.1 only; HTTP/2 (http='2') and gRPC (grpc=) need the rust driver"
        )
    if shape.arrival not in defaults.ARRIVALS:
        raise DriverError(f"arrival {shape.arrival!r} is not supported (choose from {', '.join(defaults.ARRIVALS)})")
    if shape.connections < 1:
        raise DriverError("the locust driver needs at least one user (shape.connections >= 1)")
    if shape.duration_s <= 0:
        raise DriverError("shape.duration_s must be positive")


def _notes(shape: LoadShape, has_locustfile: bool) -> tuple[str, ...]:
    """What this round's numbers mean, for the report."""
    notes = ["latency measured by locust from the actual send (request event, float ms -> ns)"]
    if shape.rate:
        notes.append(
            "rate-driven round: users paced at rate/users iterations/s each (approximate open loop); "
            "no intended-time correction, schedule_lag not measured"
        )
    if shape.threads:
        notes.append("shape.threads ignored: each locust process is single-threaded; use workers")
    if has_locustfile:
        notes.append("method, headers, body_size and tls apply to the default user only")
    notes.append(
        "sockets and bytes_sent counted on every gevent TCP socket of the users (any client type); "
        "bytes_received = response bodies"
    )
    return tuple(notes)


def _wait(main: LocustProcess, workers: list[LocustProcess], limit_s: float) -> None:
    """Wait for the master (or single process); stop early when a worker dies with an error."""
    deadline = time.monotonic() + limit_s
    while main.poll() is None:
        for worker in workers:
            code = worker.poll()
            if code not in (None, 0):
                stderr = worker.stderr_text()
                cause = diagnosis.import_failure(stderr, None) or diagnosis.last_lines(stderr)
                raise DriverError(f"Locust {worker.name} exited with code {code} before the round ended:\n{cause}")
        if time.monotonic() > deadline:
            last = diagnosis.last_lines(main.stderr_text())
            raise DriverError(f"Locust did not finish within {limit_s:.0f}s; last output:\n{last}")
        time.sleep(0.05)


__all__ = ["LocustDriver", "LocustNotInstalled"]
