"""Where a driver command runs on the host: the :class:`CommandRunner` protocol every runner
satisfies, its :class:`CommandOutcome`, and :class:`LocalRunner` (a subprocess). No Docker
here: the Locust worker image imports the package without the Docker SDK.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import Optional, Protocol

from pytest_netperf.errors import DriverError, DriverNotFoundError
from pytest_netperf.runtime.process_guard import driver_preexec

#: Name of the binary on PATH (and argv[0] handed to runners).
BINARY_NAME = "netperf-driver"
#: Environment variable naming an explicit binary.
BINARY_ENV = "NETPERF_DRIVER"
INSTALL_HINT = (
    "install it with `pip install -e .` (builds and installs the binary) or "
    "`cargo build --release --manifest-path driver/Cargo.toml` and set NETPERF_DRIVER "
    "to driver/target/release/netperf-driver"
)


@dataclass
class CommandOutcome:
    """What running the driver command produced."""

    returncode: int
    stdout: str
    stderr: str


class CommandRunner(Protocol):
    """Runs a driver command somewhere: on the host, or in a container on a topology network."""

    #: Human description of where the command runs, for reports (e.g. ``host``).
    where: str

    def run(self, argv: list[str], timeout_s: float) -> CommandOutcome:
        """Run ``argv`` (argv[0] is the driver binary name) and wait at most ``timeout_s``."""
        ...


def find_driver_binary() -> str:
    """Path of the driver: ``$NETPERF_DRIVER`` if set, else ``netperf-driver`` on PATH, else
    the one next to the running interpreter (a venv's ``bin`` used by its full path, not on PATH)."""
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise DriverNotFoundError(f"{BINARY_ENV}={explicit!r} is not an executable file; {INSTALL_HINT}")
    found = shutil.which(BINARY_NAME)
    if found:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), BINARY_NAME)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    where = os.path.dirname(sys.executable)
    raise DriverNotFoundError(f"{BINARY_NAME} is not on PATH nor next to the interpreter in {where}; {INSTALL_HINT}")


class LocalRunner:
    """Runs the driver as a local subprocess; argv[0] is replaced by the binary path.

    The driver gets SIGTERM (and stops its load within ~50 ms) when the thread that started
    it dies, so a SIGKILLed test run leaves no driver sending load behind (Linux). With
    ``cpus`` (a cpuset such as ``0-1``) it runs on those cores only, it and all its threads
    (see :func:`~pytest_netperf.runtime.process_guard.driver_preexec`).
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
            process = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=preexec,
                start_new_session=True,  # its own process group: a timeout ends whatever it started
            )
        except OSError as exc:
            raise DriverNotFoundError(f"cannot run {command[0]}: {exc}; {INSTALL_HINT}") from exc
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise DriverError(f"{BINARY_NAME} on {self.where} did not finish within {timeout_s:g}s") from exc
        finally:
            if process.returncode is None:  # timed out or interrupted: the group goes, then the leader is reaped
                _kill_group(process)
        return CommandOutcome(process.returncode, stdout, stderr)


def _kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL ``process``'s process group (it leads one of its own) and reap the leader."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    try:
        process.communicate(timeout=5.0)
    except subprocess.TimeoutExpired:  # a process of another group still holds its pipes
        process.wait()
