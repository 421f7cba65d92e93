"""Running a driver command inside a short-lived container on a topology's network
(:class:`ContainerRunner`, a :class:`~pytest_netperf.runtime.commands.CommandRunner`)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Optional

from docker import DockerClient
from docker.errors import APIError
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout

from pytest_netperf.errors import DriverError
from pytest_netperf.runtime.commands import CommandOutcome


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
