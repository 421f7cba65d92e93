"""A started Docker topology (RunningTopology): addresses, logs, probes, facts and endpoints; ``down()`` removes it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from docker import DockerClient
from docker.models.containers import Container

from pytest_netperf.errors import NetperfError
from pytest_netperf.revision.diff import CHANGES_FACT
from pytest_netperf.runtime.cleanup import clean_network
from pytest_netperf.runtime.costs import Member, SystemProbe
from pytest_netperf.runtime.counting_clone import NodeCounter
from pytest_netperf.runtime.endpoints import Endpoint, TopologyGuard
from pytest_netperf.runtime.resources import CoreSplit
from pytest_netperf.runtime.runners import ContainerRunner
from pytest_netperf.runtime.tls_nodes import trust_for
from pytest_netperf.runtime.wire import WireProbe, container_pid
from pytest_netperf.topology.model import HTTP_SCHEMES, Topology
from pytest_netperf.topology.resources import Resources

__all__ = [
    "HOST_NETWORK_ADDRESS",
    "RunningTopology",
    "TopologyStartError",
    "bridge_address",
    "images_fact",
    "resources_fact",
]

#: Where the host reaches a node on the host network.
HOST_NETWORK_ADDRESS = "127.0.0.1"


class TopologyStartError(NetperfError):
    """A topology could not be brought up; names the node, the probe and its last logs."""


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
        #: node -> the config files copied into its container (a counted clone gets them too)
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
        return HOST_NETWORK_ADDRESS if root.host_network else bridge_address(self._containers[root.name], self.network)

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
        """What the report prints with each row: ``images`` and (when any) ``resources`` and
        ``tls`` (``gw TLS on 8443: rsa-2048, session cache off, tickets off``)."""
        facts = {"images": images_fact(self.topology, self.node_images, self.requested_images)}
        resources = resources_fact(self.topology, self.limits, self.core_split)
        if resources:
            facts["resources"] = resources
        tls = "; ".join(f"{n.name} {n.tls.describe()}" for n in self.topology.nodes if n.tls is not None)
        if tls:
            facts["tls"] = tls
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
        http = target.scheme in HTTP_SCHEMES
        wire = self.wire_probe(target.node) if not http else None
        path = target.path if http else ""
        counter = self.counter(target.node, target.port) if http or target.scheme == "tcp" else None
        tls = trust_for(self.topology, target)  # an https target: trust the test CA that signed its certificate
        if not target.via_dns:
            url = f"{target.scheme}://{self.ip(target.node)}:{target.port}{path}"
            return Endpoint(
                url,
                None,
                "host",
                target.host_header,
                images,
                guard,
                facts,
                costs=costs,
                wire=wire,
                counter=counter,
                tls=tls,
            )
        if self._driver_image is None:
            raise TopologyStartError(
                f"target {target_name!r} needs the driver in a container, but no echo (driver) image is known"
            )
        runner = ContainerRunner(self._client, self._driver_image, self.network, self._labels)
        url = f"{target.scheme}://{self.topology.dns_name(target.node)}:{target.port}{path}"
        return Endpoint(
            url, runner, runner.where, target.host_header, images, guard, facts, costs=costs, wire=wire, counter=counter
        )

    def counter(self, node: str, port: int) -> NodeCounter | None:
        """Counted clones of the node that serves ``port`` in ``node``'s network namespace (the
        counting pass): ``node`` itself, or the pod member listening there (a sidecar's inbound
        port), cloned beside a plain clone of its pod root. None for a node on the host's
        network (a clone could not take its port)."""
        root = self.topology.pod_root(node)
        if root.host_network:
            return None
        members = self.topology.pod_members(node)
        serving = next((m for m in members if port in (m.port, *m.extra_ports)), self.topology.node(node))
        companion = None if serving.name == root.name else self._containers[root.name]
        return NodeCounter(
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


def bridge_address(container: Container, network: str) -> str:
    """The address of ``container`` on ``network`` (after a reload of its attributes)."""
    container.reload()
    return str(container.attrs["NetworkSettings"]["Networks"][network]["IPAddress"])
