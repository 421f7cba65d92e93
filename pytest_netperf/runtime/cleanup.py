"""Removing what pytest-netperf created: everything, one session's, or crashed sessions'."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable

from docker import DockerClient
from docker.errors import APIError, NotFound
from docker.models.containers import Container
from docker.models.networks import Network

from pytest_netperf.runtime import labels as L
from pytest_netperf.runtime.client import docker_client


def clean_all(verbose: bool = False, client: DockerClient | None = None) -> int:
    """Remove every container and network carrying our labels; return how many."""
    return _remove_matching(client or docker_client(), L.ours_filter(), lambda _: True, verbose)


def clean_session(session_id: str, client: DockerClient | None = None) -> int:
    """Remove the containers and networks of one session; return how many."""
    return _remove_matching(client or docker_client(), L.ours_filter(session_id), lambda _: True, False)


def clean_network(network: str, client: DockerClient) -> int:
    """Remove one topology's containers (including driver containers) and its network."""
    return _remove_matching(client, {"label": [f"{L.NETWORK}={network}"]}, lambda _: True, False)


def clean_stale(client: DockerClient | None = None, verbose: bool = False) -> int:
    """Remove resources of sessions on this host whose process is gone; return how many."""
    return _remove_matching(client or docker_client(), L.ours_filter(), _is_stale, verbose)


def pid_alive(pid: int) -> bool:
    """True when a process with ``pid`` exists on this host."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_stale(resource_labels: dict[str, str]) -> bool:
    if resource_labels.get(L.HOST, socket.gethostname()) != socket.gethostname():
        return False  # another machine's session sharing this daemon: not ours to judge
    try:
        pid = int(resource_labels.get(L.PID, ""))
    except ValueError:
        return False
    return not pid_alive(pid)


def _remove_matching(
    client: DockerClient,
    filters: dict[str, list[str]],
    wanted: Callable[[dict[str, str]], bool],
    verbose: bool,
) -> int:
    removed = 0
    for container in client.containers.list(all=True, filters=filters, ignore_removed=True):
        if wanted(container.labels):
            removed += _remove_container(container, verbose)
    for network in client.networks.list(filters=filters):
        if wanted(network.attrs.get("Labels") or {}):
            removed += _remove_network(network, verbose)
    return removed


def _remove_container(container: Container, verbose: bool) -> int:
    try:
        container.remove(force=True, v=True)
    except NotFound:
        return 0
    except APIError as exc:
        if "already in progress" in str(exc):
            return 0
        raise
    if verbose:
        print(f"removed container {container.name}")
    return 1


def _remove_network(network: Network, verbose: bool, attempts: int = 20) -> int:
    for attempt in range(attempts):
        try:
            network.remove()
            break
        except NotFound:
            return 0
        except APIError as exc:  # endpoints still detaching from a container being removed
            if "active endpoints" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.1)
    if verbose:
        print(f"removed network {network.name}")
    return 1
