"""Removing what pytest-netperf created: everything, one session's, or crashed sessions'.

Containers, networks, volumes and images that carry our session labels (Compose stacks
label their named volumes and the images they build, too), removed in that order: a
network, volume or image in use by a container cannot go before the container.

The rule for "crashed" (:func:`staleness`): the labels name this host and a process id
that no longer exists here. Resources of running sessions, of other hosts sharing the
daemon, or without a readable pid are never judged stale; only ``everything=True``
(``netperf clean --all``) removes them.
"""

from __future__ import annotations

import functools
import os
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from docker import DockerClient
from docker.errors import APIError, NotFound
from docker.models.containers import Container
from docker.models.images import Image
from docker.models.networks import Network
from docker.models.volumes import Volume

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.engine.session_folders import remove_session_folders

Say = Callable[[str], None]


@dataclass(frozen=True)
class Resource:
    """One labelled container, network, volume or image, and why it is (or is not) removed."""

    kind: str  # "container" | "network" | "volume" | "image"
    name: str
    labels: Mapping[str, str] = field(hash=False, compare=False)
    why: str = ""

    @property
    def session(self) -> str:
        """The session id label ("?" when absent)."""
        return self.labels.get(L.SESSION, "?")

    @property
    def pid(self) -> str:
        """The pid label ("?" when absent)."""
        return self.labels.get(L.PID, "?")

    def describe(self) -> str:
        """``container NAME (session S, pid P: why)``."""
        return f"{self.kind} {self.name} (session {self.session}, pid {self.pid}: {self.why})"


@dataclass
class CleanupResult:
    """What a cleanup removed (or, in a dry run, would remove) and what it kept."""

    removed: list[Resource] = field(default_factory=list)
    kept: list[Resource] = field(default_factory=list)
    dry_run: bool = False

    def __len__(self) -> int:
        return len(self.removed)

    def sessions(self, resources: Iterable[Resource] | None = None) -> list[str]:
        """``"<session> (pid <pid>)"`` for each distinct session among ``resources`` (default: removed)."""
        seen: dict[str, str] = {}
        for resource in self.removed if resources is None else resources:
            seen.setdefault(resource.session, f"{resource.session} (pid {resource.pid})")
        return list(seen.values())

    def kept_lines(self) -> list[str]:
        """One line per session whose resources were kept: ``kept session S (pid P): N ...; why``."""
        groups: dict[str, list[Resource]] = {}
        for resource in self.kept:
            groups.setdefault(resource.session, []).append(resource)
        return [
            f"kept session {session} (pid {group[0].pid}): {count_text(group)}; {group[0].why}"
            for session, group in groups.items()
        ]

    def summary(self) -> str:
        """One line: the count and the sessions removed (or that would be)."""
        verb = "would remove" if self.dry_run else "removed"
        if not self.removed:
            return f"{verb} nothing"
        return f"{verb} {count_text(self.removed)} of session(s) {', '.join(self.sessions())}"


def count_text(resources: Iterable[Resource]) -> str:
    """``3 container(s)/network(s)``, plus ``, 1 volume(s)`` and ``, 2 image(s)`` when there are any."""
    kinds = [resource.kind for resource in resources]
    text = f"{sum(kind in ('container', 'network') for kind in kinds)} container(s)/network(s)"
    for kind in ("volume", "image"):
        if kind in kinds:
            text += f", {kinds.count(kind)} {kind}(s)"
    return text


def staleness(resource_labels: Mapping[str, str], hostname: str | None = None) -> tuple[bool, str]:
    """(stale?, why) for a resource's labels: stale = this host's session whose process is gone."""
    here = hostname or socket.gethostname()
    host = resource_labels.get(L.HOST, here)
    if host != here:
        return False, f"session of host {host}, whose processes cannot be checked from here"
    try:
        pid = int(resource_labels.get(L.PID, ""))
    except ValueError:
        return False, "no pid label, so no way to tell whether its session still runs"
    if pid_alive(pid):
        return False, f"process {pid} still runs"
    return True, f"process {pid} is gone"


def clean(
    client: DockerClient | None = None,
    *,
    everything: bool = False,
    dry_run: bool = False,
    say: Say | None = None,
) -> CleanupResult:
    """Remove resources of crashed sessions (all of ours with ``everything``); ``dry_run`` only lists.

    ``say`` receives one line per resource removed (or that would be removed).
    """

    def wanted(labels: Mapping[str, str]) -> tuple[bool, str]:
        if everything:
            return True, "--all"
        return staleness(labels)

    result = _remove_matching(client or docker_client(), L.ours_filter(), wanted, dry_run, say)
    if not dry_run:
        for session in {resource.session for resource in result.removed}:
            remove_session_folders(session)
    return result


def clean_session(session_id: str, client: DockerClient | None = None) -> int:
    """Remove the containers, networks, volumes and images of one session (and its working
    folders, :func:`~pytest_netperf.engine.session_folders.session_folder`); return how many Docker resources went."""
    try:
        return len(_remove_matching(client or docker_client(), L.ours_filter(session_id), _always("session end")))
    finally:
        remove_session_folders(session_id)


def clean_network(network: str, client: DockerClient) -> int:
    """Remove one topology's (or Compose project's) containers, driver containers included, its
    networks, volumes and the images it built."""
    return len(_remove_matching(client, {"label": [f"{L.NETWORK}={network}"]}, _always("topology down")))


def clean_stale(client: DockerClient | None = None, verbose: bool = False) -> int:
    """Remove resources of sessions on this host whose process is gone; return how many."""
    return len(remove_stale(client, say=print if verbose else None))


def remove_stale(client: DockerClient | None = None, say: Say | None = None) -> CleanupResult:
    """Like :func:`clean_stale`, returning what was removed (sessions and pids) and what was kept."""
    return clean(client, say=say)


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
    return staleness(resource_labels)[0]


def _always(why: str) -> Callable[[Mapping[str, str]], tuple[bool, str]]:
    return lambda _labels: (True, why)


def _remove_matching(
    client: DockerClient,
    filters: dict[str, list[str]],
    wanted: Callable[[Mapping[str, str]], tuple[bool, str]],
    dry_run: bool = False,
    say: Say | None = None,
) -> CleanupResult:
    """Containers first (a network, volume or image in use cannot go), then networks, volumes, images."""
    result = CleanupResult(dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    found: list[tuple[Resource, Callable[[], bool]]] = []
    for container in client.containers.list(all=True, filters=filters, ignore_removed=True):
        resource = Resource("container", str(container.name), dict(container.labels or {}))
        found.append((resource, functools.partial(_remove_container, container)))
    for network in client.networks.list(filters=filters):
        resource = Resource("network", str(network.name), dict(network.attrs.get("Labels") or {}))
        found.append((resource, functools.partial(_remove_network, network)))
    for volume in client.volumes.list(filters=filters):
        resource = Resource("volume", str(volume.name), dict(volume.attrs.get("Labels") or {}))
        found.append((resource, functools.partial(_remove_volume, volume)))
    for image in client.images.list(filters=filters):
        resource = Resource("image", _image_name(image), dict(image.labels or {}))
        found.append((resource, functools.partial(_remove_image, client, image)))
    for resource, remove_it in found:
        remove, why = wanted(resource.labels)
        resource = Resource(resource.kind, resource.name, resource.labels, why)
        if not remove:
            result.kept.append(resource)
            continue
        if not dry_run and not remove_it():
            continue  # someone else removed it first
        result.removed.append(resource)
        if say is not None:
            say(f"{verb} {resource.describe()}")
    return result


def _remove_container(container: Container) -> bool:
    try:
        container.remove(force=True, v=True)
    except NotFound:
        return False
    except APIError as exc:
        if "already in progress" in str(exc):
            return False
        raise
    return True


def _remove_network(network: Network, attempts: int = 20) -> bool:
    for attempt in range(attempts):
        try:
            network.remove()
            return True
        except NotFound:
            return False
        except APIError as exc:  # endpoints still detaching from a container being removed
            if "active endpoints" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.1)
    return False


def _remove_volume(volume: Volume, attempts: int = 20) -> bool:
    for attempt in range(attempts):
        try:
            volume.remove(force=True)
            return True
        except NotFound:
            return False
        except APIError as exc:  # still held by a container being removed
            if "in use" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.1)
    return False


def _remove_image(client: DockerClient, image: Image) -> bool:
    try:
        client.images.remove(image.id, force=True)
    except NotFound:
        return False
    except APIError as exc:
        if exc.status_code == 409:  # a child image or another session's container still uses it
            return False
        raise
    return True


def _image_name(image: Image) -> str:
    return str(image.tags[0]) if image.tags else str(image.short_id)
