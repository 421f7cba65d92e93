"""The Docker runtime: realize a Topology as one bridge network plus labelled containers.

Containers run with every capability dropped (each role gets back only what it needs,
:data:`ROLE_CAPABILITIES`) and ``no-new-privileges``; the network is ``internal`` (no
route out of the host; the host itself still reaches the containers' addresses). An
:class:`Endpoint` carries a guard that tells the gate, before each round, whether its
address still belongs to this session's running topology.

File-backed nodes (``config=``) get the team's files bind-mounted read-only; relative paths
resolve against the runtime's base directory (the pytest rootdir in the fixtures), and
every path is checked before anything starts. A node's ``image=`` goes through the image
mapping (``--netperf-image nginx:1.27=pytest-netperf/nginx:local``). Each node runs with its
``resources`` and, where :func:`default_split` splits the cores, on the system-under-test
cores; endpoints carry both, and the image each node really ran, in ``Endpoint.facts``.
"""

from __future__ import annotations

import io
import ipaddress
import itertools
import os
import re
import tarfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import urlsplit

from docker import DockerClient
from docker.errors import APIError, NotFound
from docker.models.containers import Container
from docker.types import Mount as DockerMount

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import NetperfError
from pytest_netperf.images.resolve import resolve_image, resolve_reference
from pytest_netperf.revision.diff import CHANGES_FACT
from pytest_netperf.runtime.cleanup import clean_network
from pytest_netperf.runtime.commands import CommandRunner
from pytest_netperf.runtime.costs import Member, SystemProbe
from pytest_netperf.runtime.host_ports import port_free
from pytest_netperf.runtime.readiness import HttpReadiness, NodeNotReady
from pytest_netperf.runtime.resources import CoreSplit, default_split
from pytest_netperf.runtime.runners import ContainerRunner
from pytest_netperf.runtime.traced_clone import NodeTracer
from pytest_netperf.runtime.wire import WireProbe, container_pid
from pytest_netperf.topology.model import Node, Topology
from pytest_netperf.topology.render.containers import ContainerSpec, container_specs
from pytest_netperf.topology.render.files import check_configs
from pytest_netperf.topology.resources import Resources

__all__ = [
    "DOCKER_DEFAULT_CAPABILITIES",
    "ROLE_CAPABILITIES",
    "DockerRuntime",
    "Endpoint",
    "RunningTopology",
    "TopologyGuard",
    "TopologyStartError",
    "docker_client",
    "hardening_options",
    "images_fact",
    "node_limits",
    "resources_fact",
]

#: Containers started at the same time within one wave.
MAX_PARALLEL_STARTS = 4
#: Where the host reaches a node on the host network.
HOST_NETWORK_ADDRESS = "127.0.0.1"
#: Log lines of a failing node attached to the error.
LOG_TAIL_LINES = 30
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]+")
#: Capabilities each role gets back after ``cap_drop=["ALL"]`` (found by trying each role
#: with less: nginx's master runs as root and starts its workers as ``nobody``, which
#: needs SETUID/SETGID, and it chowns its temp directories to them, which needs CHOWN.
#: The echo server, HAProxy (no ``user`` directive) and Envoy need none. Binding ports
#: below 1024 needs nothing either: Docker 20.10+ sets ip_unprivileged_port_start=0 in
#: each container's network namespace. Kong (official image, not available offline) is
#: given nginx's set: it is OpenResty and may start as root the same way.
#: A ``"container"`` node (the team's own image, e.g. its app) gets Docker's default set
#: (:data:`DOCKER_DEFAULT_CAPABILITIES`): the plugin cannot know what that image's
#: entrypoint needs (dropping to a user, chowning a volume), and Compose runs the same image
#: with exactly this set, so a node and a Compose service of one image behave the same.
#: ``no-new-privileges`` and the internal network still apply.
DOCKER_DEFAULT_CAPABILITIES: tuple[str, ...] = (
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "NET_RAW",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
)
ROLE_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "echo": (),
    "nginx": ("CHOWN", "SETGID", "SETUID"),
    "haproxy": (),
    "envoy": (),
    "kong": ("CHOWN", "SETGID", "SETUID"),
    "container": DOCKER_DEFAULT_CAPABILITIES,
}
#: Whether topology networks are ``internal`` (no route off the host). Verified on Docker
#: 20.10 / cgroup v1: the host still reaches containers on an internal bridge (host to
#: bridge traffic does not pass the FORWARD chain Docker's isolation rules live in).
INTERNAL_NETWORKS = True


def hardening_options(role: str | None) -> dict[str, Any]:
    """``containers.create`` options: drop every capability but the role's, no new privileges."""
    return {
        "cap_drop": ["ALL"],
        "cap_add": list(ROLE_CAPABILITIES.get(role or "", ())),
        "security_opt": ["no-new-privileges"],
    }


class TopologyStartError(NetperfError):
    """A topology could not be brought up; names the node, the probe and its last logs."""


@dataclass(frozen=True)
class TopologyGuard:
    """Checks that a target's address still belongs to this session's running topology.

    Two Docker API calls: inspect the network (by the id it was created with: a network
    re-created under the same name does not pass) and inspect the target's container.
    """

    client: DockerClient = field(repr=False, compare=False)
    topology: str
    network: str
    network_id: str
    #: session, pid and host labels the network and container must still carry
    labels: Mapping[str, str] = field(compare=False)
    node: str
    container_id: str
    #: the pod root's container: it holds the address (itself unless the node is a sidecar)
    root_container_id: str
    #: names that resolve to the pod root on the network (node name and aliases)
    names: tuple[str, ...] = ()
    #: the pod root runs on the host network: reached at 127.0.0.1, no bridge address to check
    host_network: bool = False

    def check(self, url: str) -> str | None:
        """None when load to ``url`` reaches this topology; otherwise why it would not."""
        host = urlsplit(url).hostname or ""
        if self.host_network:
            return self._container_problem()
        try:
            network = self.client.api.inspect_network(self.network_id)
        except NotFound:
            return (
                f"network {self.network} of topology {self.topology!r} no longer exists "
                "(removed behind the session's back, e.g. by `netperf clean --all` or `docker network rm`)"
            )
        except APIError as exc:
            return f"cannot inspect network {self.network}: {exc}"
        problem = self._label_problem(f"network {self.network}", network.get("Labels"))
        if problem:
            return problem
        attached = (network.get("Containers") or {}).get(self.root_container_id)
        address = str((attached or {}).get("IPv4Address", "")).split("/")[0]
        if not attached or not address:
            return f"the container holding {self.node!r}'s address is no longer attached to network {self.network}"
        if _is_ip(host):
            if host != address:
                return f"{host} is no longer {self.node!r}'s address on {self.network} (now {address})"
        elif host not in self.names:
            return f"{host!r} is not a name of {self.node!r} on network {self.network}"
        return self._container_problem()

    def _container_problem(self) -> str | None:
        try:
            container = self.client.api.inspect_container(self.container_id)
        except NotFound:
            return f"container of node {self.node!r} no longer exists"
        except APIError as exc:
            return f"cannot inspect the container of node {self.node!r}: {exc}"
        state = container.get("State") or {}
        if not state.get("Running") or state.get("Paused") or state.get("Restarting"):
            return f"container of node {self.node!r} is not running (status {state.get('Status', '?')})"
        return self._label_problem(f"container of node {self.node!r}", (container.get("Config") or {}).get("Labels"))

    def _label_problem(self, what: str, found: Mapping[str, str] | None) -> str | None:
        found = found or {}
        for key in (L.SESSION, L.PID, L.HOST, L.NETWORK):
            if found.get(key) != self.labels.get(key):
                return (
                    f"{what} no longer carries this session's labels "
                    f"({key}={found.get(key)!r}, expected {self.labels.get(key)!r})"
                )
        return None


@dataclass(frozen=True)
class Endpoint:
    """Where a driver should send load for one target, and where the driver must run."""

    url: str
    runner: CommandRunner | None  # None: run the driver on the host
    where: str  # "host" or "container on <network>"
    host_header: str | None = None
    #: image -> image id of every container of the topology (for the baseline fingerprint)
    images: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    #: what :meth:`guard` asks (None: a plain endpoint nothing can vanish under)
    liveness: TopologyGuard | None = field(default=None, hash=False, compare=False, repr=False)
    #: facts the report prints with each row, e.g. ``{"images": "edge=pytest-netperf/nginx:local
    #: (for nginx:1.27)", "resources": "edge cpus 1"}``
    facts: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    #: the same target at the base revision (``--netperf-base``), measured beside this one
    base: Endpoint | None = field(default=None, hash=False, compare=False, repr=False)
    #: why there is no ``base`` twin under ``--netperf-base`` (the stack is not at the base revision)
    base_note: str = field(default="", hash=False, compare=False)
    #: why the base twin could not be stood up (its stack failed to start, with its log): the
    #: budgets against the base are INVALID, never PASS
    base_error: str = field(default="", hash=False, compare=False)
    #: reads what the containers of the system under test spend in each round (cgroups)
    costs: SystemProbe | None = field(default=None, hash=False, compare=False, repr=False)
    #: counts packets on the server's interface around each L4 round (None for HTTP targets)
    wire: WireProbe | None = field(default=None, hash=False, compare=False, repr=False)
    #: runs the node the URL enters under valgrind or strace (the cost pass); None: cannot
    tracer: NodeTracer | None = field(default=None, hash=False, compare=False, repr=False)

    def guard(self) -> str | None:
        """None while ``url`` still reaches this session's running topology, else the reason.

        The gate calls it before every round and sends no load when it returns a reason:
        a removed network's old bridge addresses would route off the host.
        """
        return None if self.liveness is None else self.liveness.check(self.url)

    def map_urls(self, change: Callable[[str], str]) -> Endpoint:
        """A copy whose URL, and its base twin's, went through ``change`` (``with_query``): head
        and base are always measured with the same request."""
        base = None if self.base is None else self.base.map_urls(change)
        return replace(self, url=change(self.url), base=base)


class RunningTopology:
    """A started topology: addresses, logs, endpoints; ``down()`` (or ``with``) removes it."""

    def __init__(
        self,
        topology: Topology,
        network: str,
        client: DockerClient,
        containers: dict[str, Container],
        labels: dict[str, str],
        driver_image: str | None,
        startup_s: float,
        network_id: str = "",
        node_images: Mapping[str, str] | None = None,
        requested_images: Mapping[str, str | None] | None = None,
        limits: Mapping[str, Resources] | None = None,
        core_split: CoreSplit | None = None,
        copied_files: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        self.topology = topology
        #: node -> the config files copied into its container (a traced clone gets them too)
        self.copied_files: dict[str, tuple[str, ...]] = dict(copied_files or {})
        self.network = network
        self.network_id = network_id or network
        self.startup_s = startup_s
        #: node -> the image its container really ran
        self.node_images: dict[str, str] = dict(node_images or {})
        #: node -> the image reference it asked for (``image=``), None for the role's image
        self.requested_images: dict[str, str | None] = dict(requested_images or {})
        #: node -> the limits its container ran with (nodes without limits are absent)
        self.limits: dict[str, Resources] = dict(limits or {})
        #: the driver/system-under-test core split the nodes ran under (None: no split)
        self.core_split = core_split
        self._client = client
        self._containers = containers
        self._labels = labels
        self._driver_image = driver_image
        self._is_up = True
        #: the twin stood up from the base revision's files (``--netperf-base``), see :meth:`attach_base`
        self.base: RunningTopology | None = None
        self.base_changes = ""
        self.base_note = ""
        self.base_error = ""
        self._probe: SystemProbe | None = None

    def cost_probe(self) -> SystemProbe:
        """Reads what this topology's containers spend per round, by node name (one per topology)."""
        if self._probe is None:
            members = [Member(node, str(c.id), str(c.name)) for node, c in self._containers.items()]
            self._probe = SystemProbe(self._client, members)
        return self._probe

    def ip(self, node: str) -> str:
        """The bridge address of ``node`` (a sidecar shares its pod root's address; a node on
        the host network is at 127.0.0.1)."""
        root = self.topology.pod_root(node)
        return HOST_NETWORK_ADDRESS if root.host_network else _ip(self._containers[root.name], self.network)

    def logs(self, node: str) -> str:
        """stdout and stderr of ``node``'s container so far, in the order written."""
        return self._containers[node].logs().decode(errors="replace")

    def image_digests(self) -> dict[str, str]:
        """Image name -> image id of every container of this topology."""
        out: dict[str, str] = {}
        for container in self._containers.values():
            name = (container.attrs.get("Config") or {}).get("Image") or container.attrs.get("Image", "")
            out[str(name)] = str(container.attrs.get("Image", ""))
        return out

    def container(self, node: str) -> Container:
        """The container of ``node`` (for tests that need to poke it); KeyError naming the nodes."""
        if node not in self._containers:
            known = ", ".join(self._containers)
            raise KeyError(f"topology {self.topology.name!r} has no node {node!r} (nodes: {known})")
        return self._containers[node]

    def facts(self) -> dict[str, str]:
        """What the report prints with each row: ``images`` and (when any) ``resources``."""
        facts = {"images": images_fact(self.topology, self.node_images, self.requested_images)}
        resources = resources_fact(self.topology, self.limits, self.core_split)
        if resources:
            facts["resources"] = resources
        return facts

    def attach_base(self, base: RunningTopology | None, changes: str = "", note: str = "", error: str = "") -> None:
        """Pair this topology with its twin stood up from the base revision's files
        (``--netperf-base``), ``changes`` naming the files that differ; or, without a twin,
        ``note`` saying why (its budgets against the base are then NEW) or ``error`` saying
        why the twin failed to start (they are then INVALID)."""
        self.base, self.base_changes, self.base_note, self.base_error = base, changes, note, error

    def endpoint(self, target_name: str) -> Endpoint:
        """The URL for target ``target_name`` and the runner the driver must use for it (with its
        base revision's twin under ``--netperf-base``)."""
        endpoint = self._own_endpoint(target_name)
        if self.base is not None:
            facts = {**endpoint.facts, CHANGES_FACT: self.base_changes}
            return replace(endpoint, base=self.base.endpoint(target_name), facts=facts)
        return replace(endpoint, base_note=self.base_note, base_error=self.base_error)

    def _own_endpoint(self, target_name: str) -> Endpoint:
        target = self.topology.target(target_name)
        images = self.image_digests()
        guard = self.guard_for(target.node)
        facts = self.facts()
        costs = self.cost_probe()
        wire = self.wire_probe(target.node) if target.scheme != "http" else None
        path = target.path if target.scheme == "http" else ""
        tracer = self.tracer(target.node, target.port) if target.scheme in ("http", "tcp") else None
        if not target.via_dns:
            url = f"{target.scheme}://{self.ip(target.node)}:{target.port}{path}"
            return Endpoint(
                url, None, "host", target.host_header, images, guard, facts, costs=costs, wire=wire, tracer=tracer
            )
        if self._driver_image is None:
            raise TopologyStartError(
                f"target {target_name!r} needs the driver in a container, but no echo (driver) image is known"
            )
        runner = ContainerRunner(self._client, self._driver_image, self.network, self._labels)
        url = f"{target.scheme}://{self.topology.dns_name(target.node)}:{target.port}{path}"
        return Endpoint(
            url, runner, runner.where, target.host_header, images, guard, facts, costs=costs, wire=wire, tracer=tracer
        )

    def tracer(self, node: str, port: int) -> NodeTracer | None:
        """Traced clones of the node that serves ``port`` in ``node``'s network namespace (the
        cost pass): ``node`` itself, or the pod member listening there (a sidecar's inbound
        port), cloned beside a plain clone of its pod root. None for a node on the host's
        network (a clone could not take its port)."""
        root = self.topology.pod_root(node)
        if root.host_network:
            return None
        members = self.topology.pod_members(node)
        serving = next((m for m in members if port in (m.port, *m.extra_ports)), self.topology.node(node))
        companion = None if serving.name == root.name else self._containers[root.name]
        return NodeTracer(
            self._client,
            self._containers[serving.name],
            serving.name,
            self.network,
            port,
            self.copied_files.get(serving.name, ()),
            companion=companion,
            companion_files=self.copied_files.get(root.name, ()),
        )

    def wire_probe(self, node: str) -> WireProbe:
        """Counts packets on ``node``'s interface: ``eth0`` on the bridge, ``lo`` on the host network."""
        root = self.topology.pod_root(node)
        interface = "lo" if root.host_network else "eth0"
        container = self._containers[root.name]
        return WireProbe(container_pid(self._client, str(container.id)), interface, f"{interface} of {root.name}")

    def guard_for(self, node: str) -> TopologyGuard:
        """The liveness check of ``node``'s address (see :meth:`Endpoint.guard`)."""
        root = self.topology.pod_root(node)
        return TopologyGuard(
            client=self._client,
            topology=self.topology.name,
            network=self.network,
            network_id=self.network_id,
            labels=dict(self._labels),
            node=node,
            container_id=str(self._containers[node].id),
            root_container_id=str(self._containers[root.name].id),
            names=(root.name, *root.aliases),
            host_network=root.host_network,
        )

    def down(self) -> None:
        """Remove every container of this topology (driver containers too) and its network."""
        if self._is_up:
            clean_network(self.network, self._client)
            self._is_up = False

    def __enter__(self) -> RunningTopology:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.down()


class DockerRuntime:
    """Brings topologies up in Docker; every resource is labelled with ``session_id``.

    ``overrides`` are the role and image mappings (``--netperf-image``); ``base_dir`` is where
    relative ``config=`` paths resolve (default: the working directory); ``core_split``
    ("auto": :func:`default_split`) puts nodes without a cpuset on the system-under-test cores.
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
    ) -> None:
        self.session_id = session_id
        self.images = dict(images)
        self.overrides = dict(overrides or {})
        self.base_dir = base_dir
        self.core_split: CoreSplit | None = default_split() if core_split == "auto" else core_split
        self.client = client or docker_client()
        self.ready_timeout_s = ready_timeout_s
        self.poll_interval_s = poll_interval_s
        self.startup_times: dict[str, float] = {}
        self.running: list[RunningTopology] = []
        self._serial = itertools.count(1)

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
        """Tear down every topology this runtime started and still runs."""
        while self.running:
            self.running.pop().down()

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
                addresses[root] = HOST_NETWORK_ADDRESS if host else _ip(containers[root], network)
            probes = [(spec.port, spec.health_path), *((port, None) for port in spec.tcp_ports)]
            for port, path in probes:
                probe = HttpReadiness(
                    addresses[root], port, path, max(0.5, deadline - time.monotonic()), self.poll_interval_s
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


def images_fact(
    topology: Topology, node_images: Mapping[str, str], requested: Mapping[str, str | None] | None = None
) -> str:
    """``edge=pytest-netperf/nginx:local (for nginx:1.27), app=pytest-netperf/echo:local``."""
    parts = []
    for node in topology.nodes:
        if node.name not in node_images:
            continue
        ran, asked = node_images[node.name], (requested or {}).get(node.name)
        parts.append(f"{node.name}={ran}" + (f" (for {asked})" if asked and asked != ran else ""))
    return ", ".join(parts)


def resources_fact(topology: Topology, limits: Mapping[str, Resources], split: CoreSplit | None = None) -> str:
    """``edge cpus 1, cpuset 2-3; app memory 256m; driver cores 0, system under test cores 1-3``.

    Nodes without limits are left out; empty when nothing is limited and there is no split.
    """
    parts = [f"{node.name} {limits[node.name].describe()}" for node in topology.nodes if node.name in limits]
    if split is not None:
        parts.append(split.describe())
    return "; ".join(parts)


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


def _ip(container: Container, network: str) -> str:
    container.reload()
    return str(container.attrs["NetworkSettings"]["Networks"][network]["IPAddress"])


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


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
