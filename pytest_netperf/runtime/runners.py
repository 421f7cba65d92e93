"""Where a driver command runs: on the host (:class:`LocalRunner`) or inside a short-lived
container on a topology's network (:class:`ContainerRunner`); both satisfy :class:`CommandRunner`."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional, Protocol

from docker import DockerClient
from docker.errors import APIError
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout

from pytest_netperf.errors import DriverError, DriverNotFoundError
from pytest_netperf.runtime.process_guard import driver_preexec


class ContainerRunner:
    """A ``CommandRunner`` that runs argv in a fresh container from the echo (driver) image.

    The container joins ``network`` so Docker DNS names resolve; it carries the topology's
    labels, so an interrupted run is cleaned up with the topology. It runs with every
    capability dropped and ``no-new-privileges`` (the driver needs neither). With ``cpus``
    (a cpuset such as ``0-1``) the container runs on those cores only (``cpuset_cpus``).
    """

    def __init__(
        self,
        client: DockerClient,
        image: str,
        network: str,
        labels: Mapping[str, str],
        cpus: Optional[str] = None,
    ) -> None:
        self.client = client
        self.image = image
        self.network = network
        self.labels = dict(labels)
        #: The cores the driver container runs on (a cpuset), or None for Docker's default (all).
        self.cpus = cpus
        self.where = f"container on {network}"

    def pinned(self, cpus: Optional[str]) -> ContainerRunner:
        """A runner like this one whose containers run on cpuset ``cpus`` (None: unpinned)."""
        twin = ContainerRunner(self.client, self.image, self.network, self.labels, cpus)
        twin.where = self.where
        return twin

    def run(self, argv: list[str], timeout_s: float) -> CommandOutcome:
        """Run ``argv`` (argv[0] on the image's PATH) and wait at most ``timeout_s``."""
        try:
            container = self.client.containers.create(
                self.image,
                argv,
                network=self.network,
                labels=self.labels,
                detach=True,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                **({"cpuset_cpus": self.cpus} if self.cpus else {}),
            )
        except APIError as exc:
            raise DriverError(f"cannot start the driver {self.where}: {exc}") from exc
        try:
            container.start()
        except APIError as exc:  # created but not started (no such program): never left behind
            with contextlib.suppress(APIError):
                container.remove(force=True)
            raise DriverError(f"cannot start the driver {self.where}: {exc}") from exc
        try:
            try:
                status = container.wait(timeout=timeout_s)
            except (ReadTimeout, RequestsConnectionError) as exc:
                raise DriverError(f"driver {self.where} did not finish within {timeout_s:g}s") from exc
            stdout = container.logs(stdout=True, stderr=False).decode(errors="replace")
            stderr = container.logs(stdout=False, stderr=True).decode(errors="replace")
            return CommandOutcome(int(status.get("StatusCode", -1)), stdout, stderr)
        finally:
            container.remove(force=True)


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
    """Path of the driver: ``$NETPERF_DRIVER`` if set, else ``netperf-driver`` on PATH."""
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise DriverNotFoundError(f"{BINARY_ENV}={explicit!r} is not an executable file; {INSTALL_HINT}")
    found = shutil.which(BINARY_NAME)
    if found:
        return found
    raise DriverNotFoundError(f"{BINARY_NAME} is not on PATH; {INSTALL_HINT}")


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
            raise DriverNotFoundError(f"cannot run {command[0]}: {exc}; {INSTALL_HINT}") from exc
        return CommandOutcome(done.returncode, done.stdout, done.stderr)
