"""Connecting to the Docker daemon quickly, with a clear message when it is not there."""

from __future__ import annotations

import os

import docker
from docker import DockerClient
from docker.errors import DockerException

from pytest_netperf.errors import RuntimeUnavailable

#: Seconds allowed for the first contact with the daemon.
CONNECT_TIMEOUT_S = 4.0
#: Seconds allowed for ordinary API calls afterwards (image imports and builds pass their own).
CALL_TIMEOUT_S = 120.0


def docker_client(connect_timeout_s: float = CONNECT_TIMEOUT_S) -> DockerClient:
    """A connected client; raises RuntimeUnavailable within ~``connect_timeout_s`` otherwise."""
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=int(max(1, connect_timeout_s)))
        client.ping()
    except (DockerException, OSError) as exc:
        raise RuntimeUnavailable(
            f"Docker daemon not reachable at {where}: {_first_line(exc)}. "
            "Start it (e.g. `systemctl start docker` or `dockerd &`) or set DOCKER_HOST."
        ) from exc
    client.api.timeout = CALL_TIMEOUT_S
    return client


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
