"""The Docker runtime: brings a Topology up as one bridge network plus labelled containers.

Each container is created with the isolation of :mod:`~pytest_netperf.runtime.isolation` and
started in waves (:func:`start_waves`); :class:`DockerRuntime.up` returns a
:class:`~pytest_netperf.runtime.running.RunningTopology` once every node answers.

File-backed nodes (``config=``) get the team's files bind-mounted read-only; relative paths
resolve against the runtime's base directory (the pytest rootdir in the fixtures), and
every path is checked before anything starts. A node's ``image=`` goes through the image
mapping (``--netperf-image nginx:1.27=pytest-netperf/nginx:local``). Each node runs with its
``resources`` and, where :func:`default_split` splits the cores, on the system-under-test
cores; endpoints carry both, and the image each node really ran, in ``Endpoint.facts``.
"""

from __future__ import annotations

import io
import itertools
import os
import re
import ssl
import tarfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from docker import DockerClient
from docker.models.containers import Container
from docker.types import Mount as DockerMount

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import NetperfError
from pytest_netperf.images.resolve import resolve_image, resolve_reference
from pytest_netperf.runtime.cleanup import clean_network
from pytest_netperf.runtime.cpu_priority import CpuPriority
from pytest_netperf.runtime.host_ports import port_free
from pytest_netperf.runtime.isolation import INTERNAL_NETWORKS, hardening_options
from pytest_netperf.runtime.readiness import HttpReadiness, NodeNotReady, tls_context
from pytest_netperf.runtime.resources import CoreSplit, default_split
from pytest_netperf.runtime.running import HOST_NETWORK_ADDRESS, RunningTopology, TopologyStartError, bridge_address
from pytest_netperf.runtime.test_ca import SessionCA
from pytest_netperf.runtime.tls_nodes import with_certificates
from pytest_netperf.topology.model import Node, Topology
from pytest_netperf.topology.render.containers import ContainerSpec, container_specs
from pytest_netperf.topology.render.files import check_configs
from pytest_netperf.topology.resources import Resources
from pytest_netperf.topology.tls import TlsTermination

__all__ = ["LOG_TAIL_LINES", "DockerRuntime", "node_limits", "start_waves"]

#: Containers started at the same time within one wave.
MAX_PARALLEL_STARTS = 4
#: Log lines of a failing node attached to the error.
LOG_TAIL_LINES = 30
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]+")


class DockerRuntime:
    """Brings topologies up in Docker; every resource is labelled with ``session_id``.

    ``overrides`` are the role and image mappings (``--netperf-image``); ``base_dir`` is where
    relative ``config=`` paths resolve (default: the working directory); ``core_split``
    ("auto": :func:`default_split`) puts nodes without a cpuset on the system-under-test cores;
    ``priority`` (:mod:`.cpu_priority`) is the weighted cgroup every container is created in.
    Nodes with a TLS listener (``params["tls"]``) get certificates of one test CA per runtime
    (:attr:`test_ca`), removed by :meth:`down_all`.
    """

    def __init__(
        self,
        session_id: str,
        images: Mapping[str, str],
        client: DockerClient | None = None,
        ready_timeout_s: float = 30.0,
        poll_interval_s: float = 0.05,
        overrides: Mapping[str, str] | None = None,
        base_dir: str | os.PathLike[str] | None = None,
        core_split: CoreSplit | Literal["auto"] | None = "auto",
        priority: CpuPriority | None = None,
    ) -> None:
        self.session_id = session_id
        self.images = dict(images)
        self.overrides = dict(overrides or {})
        self.base_dir = base_dir
        self.core_split: CoreSplit | None = default_split() if core_split == "auto" else core_split
        self.priority = priority
        self.client = client or docker_client()
        self.ready_timeout_s = ready_timeout_s
        self.poll_interval_s = poll_interval_s
        self.startup_times: dict[str, float] = {}
        self.running: list[RunningTopology] = []
        self._serial = itertools.count(1)
        self._test_ca: SessionCA | None = None

    @property
    def test_ca(self) -> SessionCA:
        """The runtime's test CA (made on first use): it signs the TLS listeners' certificates."""
        if self._test_ca is None:
            self._test_ca = SessionCA()
        return self._test_ca

    def network_name(self, topology: Topology) -> str:
        """Unique per session, xdist worker and bring-up: ``netperf-<sid>-<worker>-<topo>-<n>``."""
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        raw = f"netperf-{self.session_id}-{worker}-{topology.name}-{next(self._serial)}"
        return _NAME_UNSAFE.sub("-", raw)

    def image_for(self, role: str) -> str:
        """The image for ``role``; ImageMissingError (naming the fix) when there is none."""
        if role not in self.images:
            self.images[role] = resolve_image(role, self.overrides, self.client)
        return self.images[role]

    def node_image(self, spec: ContainerSpec) -> str:
        """The image ``spec``'s node runs: its ``image=`` through the image mapping, else its role's.

        Raises ImageMissingError (NodeImageMissingError for ``image=``) naming the node, the
        image and the fixes.
        """
        if spec.image is None:
            return self.image_for(spec.role)
        return resolve_reference(spec.image, self.overrides, self.client, f"node {spec.node!r}", spec.role)

    def up(self, topology: Topology, base_dir: str | os.PathLike[str] | None = None) -> RunningTopology:
        """Start ``topology``, wait until every node answers, return it running.

        ``base_dir`` (default: the runtime's) resolves relative ``config=`` paths. Config
        paths and images are checked before anything starts; on any later failure everything
        already started is removed before the error propagates.
        """
        started = time.monotonic()
        base = base_dir if base_dir is not None else self.base_dir
        topology.validate()
        topology = with_certificates(topology, lambda: self.test_ca)
        _check_host_ports(topology)
        check_configs(topology, base)
        specs = container_specs(topology, base)
        images = {spec.node: self.node_image(spec) for spec in specs}
        limits = {
            node.name: found for node in topology.nodes if (found := node_limits(node, self.core_split)) is not None
        }
        driver_image = self.images.get("echo") or _maybe(lambda: self.image_for("echo"))
        network = self.network_name(topology)
        labels = L.resource_labels(self.session_id, topology.name, network)
        containers: dict[str, Container] = {}
        try:
            network_id = self._create_network(network, labels)
            for wave in start_waves(topology, specs):
                self._start_wave(topology, wave, images, limits, network, labels, containers)
            self._wait_ready(topology, specs, containers, network)
        except BaseException as failure:
            try:
                clean_network(network, self.client)
            except Exception as cleanup_failure:  # keep the original error in front
                add_note = getattr(failure, "add_note", None)  # Python 3.11+
                if add_note is not None:
                    add_note(f"cleanup after the failure also failed: {cleanup_failure}")
            raise
        running = RunningTopology(
            topology,
            network,
            self.client,
            containers,
            labels,
            driver_image,
            time.monotonic() - started,
            network_id,
            node_images=images,
            requested_images={spec.node: spec.image for spec in specs},
            limits=limits,
            core_split=self.core_split,
            copied_files={spec.node: tuple(spec.files) for spec in specs},
        )
        self.startup_times[topology.name] = running.startup_s
        self.running.append(running)
        return running

    def _create_network(self, network: str, labels: dict[str, str]) -> str:
        created = self.client.networks.create(
            network, driver="bridge", labels=labels, check_duplicate=True, internal=INTERNAL_NETWORKS
        )
        return str(created.id)

    def down_all(self) -> None:
        """Tear down every topology this runtime started and still runs; remove the test CA's files."""
        while self.running:
            self.running.pop().down()
        self.close_test_ca()

    def close_test_ca(self) -> None:
        """Remove the test CA's files (a signal handler may call it: nothing but file removal)."""
        authority, self._test_ca = self._test_ca, None
        if authority is not None:
            authority.close()

    def _start_wave(
        self,
        topology: Topology,
        wave: list[ContainerSpec],
        images: dict[str, str],
        limits: Mapping[str, Resources],
        network: str,
        labels: dict[str, str],
        containers: dict[str, Container],
    ) -> None:
        """Start the containers of one wave concurrently; raise the first failure after all return."""
        with ThreadPoolExecutor(max_workers=min(len(wave), MAX_PARALLEL_STARTS)) as pool:
            futures = {
                spec.node: pool.submit(
                    self._start, topology, spec, images[spec.node], limits.get(spec.node), network, labels, containers
                )
                for spec in wave
            }
        failures = [error for future in futures.values() if (error := future.exception()) is not None]
        for node, future in futures.items():
            if not future.exception():
                containers[node] = future.result()
        if failures:
            raise failures[0]

    def _start(
        self,
        topology: Topology,
        spec: ContainerSpec,
        image: str,
        limits: Resources | None,
        network: str,
        labels: dict[str, str],
        containers: dict[str, Container],
    ) -> Container:
        """Create the container, copy its config files in, start it (readiness comes later)."""
        node = topology.node(spec.node)
        options: dict[str, Any] = {"labels": {**labels, L.NODE: node.name}, **hardening_options(spec.role)}
        if limits is not None:
            options.update(limits.docker_options())
        if self.priority is not None:
            options.update(self.priority.docker_options())
        if spec.mounts:
            options["mounts"] = [
                DockerMount(m.target, m.source, type="bind", read_only=m.read_only) for m in spec.mounts
            ]
        if node.pod_of is not None:  # a sidecar joins its pod root's network namespace
            options["network_mode"] = f"container:{containers[topology.pod_root(node.name).name].id}"
        elif node.host_network:
            options["network_mode"] = "host"
        else:
            endpoint = self.client.api.create_endpoint_config(aliases=[node.name, *node.aliases])
            options.update(network=network, hostname=node.name, networking_config={network: endpoint})
        container = self.client.containers.create(
            image, spec.command, name=f"{network}-{node.name}", environment=dict(spec.environment), **options
        )
        if spec.files:
            container.put_archive("/", _tar(spec.files))  # raises APIError when it fails
        container.start()
        return container

    def _wait_ready(
        self, topology: Topology, specs: list[ContainerSpec], containers: dict[str, Container], network: str
    ) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        addresses: dict[str, str] = {}
        for spec in specs:
            root = topology.pod_root(spec.node).name
            if root not in addresses:
                host = topology.node(root).host_network
                addresses[root] = HOST_NETWORK_ADDRESS if host else bridge_address(containers[root], network)
            probes = [(spec.port, spec.health_path), *((port, None) for port in spec.tcp_ports)]
            if spec.tls is not None:  # the TLS listener: a full HTTPS request, trusting the test CA
                probes.append((spec.tls.port, spec.health_path))
            for port, path in probes:
                tls = spec.tls if spec.tls is not None and port == spec.tls.port and spec.tls.certificate else None
                probe = HttpReadiness(
                    addresses[root],
                    port,
                    path,
                    max(0.5, deadline - time.monotonic()),
                    self.poll_interval_s,
                    tls=_probe_context(tls) if tls is not None else None,
                    server_name=spec.node if tls is not None else None,
                )
                try:
                    probe.wait_until_ready(containers[spec.node])
                except NodeNotReady as exc:
                    image = (containers[spec.node].attrs.get("Config") or {}).get("Image", "?")
                    raise TopologyStartError(
                        f"topology {topology.name!r}: node {spec.node!r} ({spec.role}) not ready "
                        f"(image {image}): {exc}\n"
                        f"--- last {LOG_TAIL_LINES} log lines of {spec.node} ---\n"
                        f"{_log_tail(containers[spec.node])}"
                    ) from exc


def _probe_context(tls: TlsTermination) -> ssl.SSLContext:
    """The readiness probe's TLS context for a listener: trusting its certificate's CA, with a
    client certificate of that CA when the listener is mutual."""
    assert tls.certificate is not None
    client = tls.certificate.client_files if tls.mutual else None
    return tls_context(tls.certificate.ca_file, client)


def _check_host_ports(topology: Topology) -> None:
    """A node on the host network needs its ports free on the host: another listener there
    would answer its readiness probe and take its load. TopologyStartError naming both."""
    for node in topology.nodes:
        if not topology.pod_root(node.name).host_network:
            continue
        busy = [port for port in node.ports if not port_free(port)]
        if busy:
            raise TopologyStartError(
                f"topology {topology.name!r}: node {node.name!r} runs on the host network and needs port(s) "
                f"{', '.join(map(str, busy))}, but something on the host already uses them; "
                "choose free ports (pytest_netperf.runtime.host_ports.free_host_ports)"
            )


def node_limits(node: Node, split: CoreSplit | None) -> Resources | None:
    """The limits ``node`` runs with: its ``resources``, on ``split.sut`` when it sets no cpuset.

    None when nothing is limited (no resources and no split).
    """
    limits = node.resources or Resources()
    if split is not None and limits.cpuset is None:
        limits = limits.merged(Resources(cpuset=split.sut))
    return None if limits.empty else limits


def start_waves(topology: Topology, specs: list[ContainerSpec]) -> list[list[ContainerSpec]]:
    """Group specs (in start order) into waves that may start concurrently.

    A node waits for its pod root (it joins that namespace) and for upstreams that come
    earlier in the start order (nginx resolves upstream names when it loads its config).
    """
    position = {spec.node: index for index, spec in enumerate(specs)}
    wave_of: dict[str, int] = {}
    for spec in specs:
        node = topology.node(spec.node)
        needs = [
            n
            for n in (*node.upstreams, node.pod_of)
            if n is not None and n in wave_of and position[n] < position[spec.node]
        ]
        wave_of[spec.node] = 1 + max((wave_of[n] for n in needs), default=-1)
    waves: list[list[ContainerSpec]] = [[] for _ in range(max(wave_of.values(), default=-1) + 1)]
    for spec in specs:
        waves[wave_of[spec.node]].append(spec)
    return waves


def _tar(files: Mapping[str, str]) -> bytes:
    """An archive of ``files`` (absolute path -> text, mode 0644) to extract at ``/``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _log_tail(container: Container) -> str:
    try:
        text = container.logs(tail=LOG_TAIL_LINES).decode(errors="replace")
    except Exception as exc:  # container already gone
        return f"(logs unavailable: {exc})"
    return text.rstrip("\n") or "(no output)"


def _maybe(make: Callable[[], str]) -> str | None:
    try:
        return make()
    except NetperfError:
        return None
