"""The Rust load driver (`netperf-driver http`): argv building, running, JSON parsing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Optional

from pytest_netperf.drivers.base import CommandOutcome, CommandRunner, LoadShape
from pytest_netperf.drivers.process_guard import driver_preexec
from pytest_netperf.errors import DriverError, DriverNotFoundError
from pytest_netperf.measure.results import RoundResult

#: Name of the binary on PATH (and argv[0] handed to runners).
BINARY_NAME = "netperf-driver"
#: Environment variable naming an explicit binary.
BINARY_ENV = "NETPERF_DRIVER"
#: Extra seconds a run may take beyond warmup + duration + timeout before it is killed.
RUN_GRACE_S = 30.0

_EXIT_MEANINGS = {
    1: "failed",
    2: "rejected its arguments",
    3: "could not reach the target",
    4: "was interrupted",
    5: "lost the target mid-round",
}
_INSTALL_HINT = (
    "install it with `pip install -e .` (builds and installs the binary) or "
    "`cargo build --release --manifest-path driver/Cargo.toml` and set NETPERF_DRIVER "
    "to driver/target/release/netperf-driver"
)


def find_driver_binary() -> str:
    """Path of the driver: ``$NETPERF_DRIVER`` if set, else ``netperf-driver`` on PATH."""
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise DriverNotFoundError(f"{BINARY_ENV}={explicit!r} is not an executable file; {_INSTALL_HINT}")
    found = shutil.which(BINARY_NAME)
    if found:
        return found
    raise DriverNotFoundError(f"{BINARY_NAME} is not on PATH; {_INSTALL_HINT}")


class LocalRunner:
    """Runs the driver as a local subprocess; argv[0] is replaced by the binary path.

    The driver gets SIGTERM (and stops its load within ~50 ms) when the thread that started
    it dies, so a SIGKILLed test run leaves no driver sending load behind (Linux). With
    ``cpus`` (a cpuset such as ``0-1``) it runs on those cores only, it and all its threads
    (see :func:`~pytest_netperf.drivers.process_guard.driver_preexec`).
    """

    where = "host"

    def __init__(self, binary: Optional[str] = None, cpus: Optional[str] = None) -> None:
        self._binary = binary
        #: The cores the driver runs on (a cpuset), or None for the cores of this process.
        self.cpus = cpus

    @property
    def binary(self) -> str:
        """The resolved binary (found lazily, so a container runner never needs one)."""
        if self._binary is None:
            self._binary = find_driver_binary()
        return self._binary

    def run(self, argv: list[str], timeout_s: float) -> CommandOutcome:
        """Run ``argv`` with the local binary and wait at most ``timeout_s``."""
        command = [self.binary, *argv[1:]]
        try:
            preexec = driver_preexec(self.cpus)
        except ValueError as exc:
            raise DriverError(f"{BINARY_NAME} on {self.where}: {exc}") from exc
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
                preexec_fn=preexec,
            )
        except subprocess.TimeoutExpired as exc:
            raise DriverError(f"{BINARY_NAME} on {self.where} did not finish within {timeout_s:g}s") from exc
        except OSError as exc:
            raise DriverNotFoundError(f"cannot run {command[0]}: {exc}; {_INSTALL_HINT}") from exc
        return CommandOutcome(done.returncode, done.stdout, done.stderr)


def _seconds(value: float) -> str:
    """A duration flag value the driver parses exactly (``1.5s``, ``0.0005s``)."""
    text = f"{float(value):.9f}".rstrip("0").rstrip(".")
    return f"{text or '0'}s"


class RustDriver:
    """Measures one round with ``netperf-driver http … --json``."""

    name = "rust"

    def __init__(self, binary: Optional[str] = None, runner: Optional[CommandRunner] = None) -> None:
        self.runner: CommandRunner = runner if runner is not None else LocalRunner(binary)

    @property
    def cpus(self) -> Optional[str]:
        """The cores the driver is pinned to (its runner's cpuset), or None when it is not pinned."""
        cpus = getattr(self.runner, "cpus", None)
        return str(cpus) if cpus else None

    def argv(self, url: str, shape: LoadShape) -> list[str]:
        """The command line for ``shape`` (argv[0] is the bare binary name)."""
        args = [
            BINARY_NAME,
            "http",
            url,
            "--connections",
            str(int(shape.connections)),
            "--duration",
            _seconds(shape.duration_s),
            "--warmup",
            _seconds(shape.warmup_s),
            "--timeout",
            _seconds(shape.timeout_s),
            "--interval",
            _seconds(shape.interval_s),
            "--method",
            shape.method,
        ]
        if shape.rate:
            args += ["--rate", repr(float(shape.rate)), "--arrival", shape.arrival]
        if shape.threads:
            args += ["--threads", str(int(shape.threads))]
        for key, value in shape.headers:
            args += ["--header", f"{key}: {value}"]
        if shape.body_size:
            args += ["--body-size", str(int(shape.body_size))]
        if shape.new_connection_per_request:
            args.append("--new-connection-per-request")
        if shape.payload is not None:
            args += ["--payload", str(int(shape.payload))]
        for key, value in sorted(shape.extra.items()):
            flag = "--" + key.replace("_", "-")
            if value is True:
                args.append(flag)
            elif value not in (None, False):
                args += [flag, str(value)]
        return args

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        """Measure ``url``; raises :class:`DriverError` when the driver could not measure."""
        argv = self.argv(url, shape) + ["--json"]
        budget = shape.warmup_s + shape.duration_s + shape.timeout_s + RUN_GRACE_S
        outcome = self.runner.run(argv, budget)
        if outcome.returncode != 0:
            raise DriverError(self._failure(outcome))
        try:
            doc = json.loads(outcome.stdout)
            result = RoundResult.from_driver_json(doc)
        except (ValueError, KeyError, TypeError) as exc:
            raise DriverError(f"{BINARY_NAME} on {self.runner.where} printed unusable JSON: {exc}") from exc
        return result

    def version(self) -> str:
        """The driver's version string, e.g. ``0.1.0``."""
        outcome = self.runner.run([BINARY_NAME, "--version"], 30.0)
        if outcome.returncode != 0:
            raise DriverError(self._failure(outcome))
        words = outcome.stdout.split()
        return words[-1] if words else ""

    def _failure(self, outcome: CommandOutcome) -> str:
        lines = [ln.strip() for ln in outcome.stderr.splitlines() if ln.strip()]
        detail = lines[-1] if lines else "(no message)"
        meaning = _EXIT_MEANINGS.get(outcome.returncode, "failed")
        return f"{BINARY_NAME} on {self.runner.where} {meaning} (exit {outcome.returncode}): {detail}"
