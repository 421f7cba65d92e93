"""The topology model: plain, immutable data describing nodes and load targets.

A node is either *rendered* (the built-in renderers write its config from the model) or
*file-backed*: ``config=`` names a file or folder of the team's repository that is mounted
read-only into the container, and the image's own default command reads it. A node of
kind ``"container"`` is a generic container from ``image=`` (e.g. the team's app).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_netperf.topology.resources import Resources
from pytest_netperf.topology.tls import TLS_KINDS, TlsTermination, tls_of

NodeKind = Literal["echo", "nginx", "kong", "envoy", "haproxy", "iperf3", "container"]
NODE_KINDS: tuple[str, ...] = ("echo", "nginx", "kong", "envoy", "haproxy", "iperf3", "container")
#: Kinds whose config the built-in renderers can write (and whose images have a default config path).
CONFIGURABLE_KINDS: tuple[str, ...] = ("nginx", "kong", "envoy", "haproxy")

# A DNS label as Docker accepts it for container names and network aliases.
_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
# An image reference, loosely: [registry[:port]/]name[:tag][@digest], no whitespace.
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")


@dataclass(frozen=True)
class Node:
    """One container: what runs in it, where it listens and whom it forwards to.

    The team's own files:

    - ``image``: the image reference to run (``nginx:1.27``, ``team/app:dev``), mapped through
      the image overrides (``--netperf-image nginx:1.27=pytest-netperf/nginx:local``). None:
      the kind's image (the local build or the official one). Required for ``"container"``.
    - ``config``: a file or folder of the repository (relative paths resolve against the
      runtime's base directory, the pytest rootdir in the fixtures), bind-mounted read-only.
      The node then gets no rendered config and, unless ``command`` is set, runs the image's
      default command. A file goes to ``config_path`` (default: the image's main config
      path, e.g. ``/etc/nginx/nginx.conf``); a folder is mounted at ``config_path`` when set,
      else each of its top-level entries is mounted into the directory of the main config
      path (``/etc/nginx/nginx.conf`` and ``/etc/nginx/conf.d`` from ``nginx/``), so the
      image's other files there (``mime.types``) stay.
    - ``command``: the argv to run instead of the default (None: the image's default command
      for file-backed and ``"container"`` nodes, the built-in command for rendered ones).
    - ``env``: environment variables (on top of the ones the plugin sets).
    - ``resources``: CPU/memory limits (a :class:`Resources` or a dict with ``cpus``,
      ``cpuset``, ``memory``).
    - ``host_network``: run in the host's network namespace (``network_mode: host``) instead
      of on the topology's bridge network; it is reached at 127.0.0.1 from the host, its
      ports must be free on the host, and its sidecars (``pod_of``) share it.

    Upstream names in a team's file resolve through Docker DNS (node names and aliases);
    ``upstreams=`` only orders the start. A file-backed or ``"container"`` node is ready when
    a TCP connect to each of its ports succeeds, or, with ``params["health_path"]``, when an
    HTTP GET of that path on its main port answers 2xx.
    """

    name: str
    kind: NodeKind
    port: int
    upstreams: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)
    pod_of: str | None = None
    extra_ports: tuple[int, ...] = ()
    image: str | None = None
    config: str | os.PathLike[str] | None = None
    config_path: str | None = None
    command: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict, hash=False)
    resources: Resources | None = None
    host_network: bool = False

    def __post_init__(self) -> None:
        # Normalize convenient spellings; anything else is left for validate() to report.
        if isinstance(self.config, os.PathLike):
            object.__setattr__(self, "config", os.fspath(self.config))
        if isinstance(self.command, list):
            object.__setattr__(self, "command", tuple(self.command))
        if isinstance(self.resources, Mapping):
            try:
                limits = Resources.from_mapping(self.resources)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"node {self.name!r}: {exc}") from None
            object.__setattr__(self, "resources", limits)

    @property
    def ports(self) -> tuple[int, ...]:
        """Every port this node listens on, the main one first (an echo node's raw TCP echo
        port, ``params["tcp_echo_port"]``, and a proxy's TLS port, ``params["tls"]``, too)."""
        tcp_echo = self.params.get("tcp_echo_port") if self.kind == "echo" else None
        tls = self.tls
        return (
            self.port,
            *self.extra_ports,
            *((int(tcp_echo),) if tcp_echo else ()),
            *((tls.port,) if tls is not None else ()),
        )

    @property
    def tls(self) -> TlsTermination | None:
        """The TLS termination of a proxy node (``params["tls"]``); None when it has none or
        the value is invalid (:meth:`Topology.validate` names the problem)."""
        if self.kind not in TLS_KINDS or self.file_backed:
            return None
        try:
            return tls_of(self.params)
        except (TypeError, ValueError):
            return None

    @property
    def file_backed(self) -> bool:
        """True when the node runs the team's files (``config=``) or a generic container."""
        return self.config is not None or self.kind == "container"


#: Target URL schemes: HTTP, HTTPS (a proxy's TLS port), raw TCP request/response (the echo
#: server's --tcp-echo) and iperf3.
TARGET_SCHEMES: tuple[str, ...] = ("http", "https", "tcp", "iperf3")
#: The schemes of HTTP targets (with a path and a Host header).
HTTP_SCHEMES: tuple[str, ...] = ("http", "https")


@dataclass(frozen=True)
class Target:
    """Something the load driver measures: a node, a port and a path.

    ``scheme`` is ``http`` (the default), ``https`` (a proxy node's TLS port, ``params["tls"]``;
    ``host_header`` is then also the name the driver sends as SNI and checks the certificate
    against), ``tcp`` (request/response over raw TCP against an echo server's ``--tcp-echo``
    port) or ``iperf3`` (an ``iperf3 -s`` server); the last two have no path. ``via_dns``: the
    driver runs in a container on the topology's network and uses the node's name (else it runs
    on the host and uses the node's address).
    """

    name: str
    node: str
    port: int
    path: str = "/"
    via_dns: bool = False
    host_header: str | None = None
    scheme: str = "http"


@dataclass(frozen=True)
class Topology:
    """A named set of nodes plus the targets a test may load."""

    name: str
    nodes: tuple[Node, ...]
    targets: tuple[Target, ...]

    def node(self, name: str) -> Node:
        """The node called ``name``; KeyError naming the known nodes otherwise."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"topology {self.name!r} has no node {name!r} (nodes: {', '.join(n.name for n in self.nodes)})")

    def target(self, name: str) -> Target:
        """The target called ``name``; KeyError naming the known targets otherwise."""
        for target in self.targets:
            if target.name == name:
                return target
        raise KeyError(
            f"topology {self.name!r} has no target {name!r} (targets: {', '.join(t.name for t in self.targets)})"
        )

    def pod_root(self, name: str) -> Node:
        """The node owning the network namespace ``name`` runs in (itself unless a sidecar)."""
        node = self.node(name)
        seen = {node.name}
        while node.pod_of is not None:
            node = self.node(node.pod_of)
            if node.name in seen:
                raise ValueError(f"topology {self.name!r}: pod_of cycle through {node.name!r}")
            seen.add(node.name)
        return node

    def dns_name(self, name: str) -> str:
        """The hostname other containers use to reach node ``name`` (its pod's name)."""
        return self.pod_root(name).name

    def pod_members(self, name: str) -> tuple[Node, ...]:
        """All nodes sharing the network namespace of node ``name``, root first."""
        root = self.pod_root(name).name
        return tuple(n for n in self.nodes if self.pod_root(n.name).name == root)

    def start_order(self) -> tuple[Node, ...]:
        """Nodes in a safe start order: pod roots before their sidecars, upstreams first
        where the upstream graph allows it (cycles, e.g. services calling each other,
        are broken in declaration order)."""
        ordered: list[Node] = []
        done: set[str] = set()
        in_progress: set[str] = set()

        def needs_in_progress(name: str) -> bool:
            chain = self.node(name)
            while True:
                if chain.name in in_progress:
                    return True
                if chain.pod_of is None:
                    return False
                chain = self.node(chain.pod_of)

        def visit(node: Node) -> None:
            if node.name in done:
                return
            if node.name in in_progress:
                raise ValueError(f"topology {self.name!r}: pod_of cycle through {node.name!r}")
            in_progress.add(node.name)
            if node.pod_of is not None:
                visit(self.node(node.pod_of))
            for upstream in node.upstreams:
                if not needs_in_progress(upstream):
                    visit(self.node(upstream))
            in_progress.discard(node.name)
            done.add(node.name)
            ordered.append(node)

        for node in self.nodes:
            visit(node)
        return tuple(ordered)

    def validate(self) -> None:
        """Raise ValueError listing every structural problem found."""
        problems = _problems(self)
        if problems:
            raise ValueError(f"invalid topology {self.name!r}: " + "; ".join(problems))


def _problems(topology: Topology) -> list[str]:
    problems: list[str] = []
    names = [n.name for n in topology.nodes]
    known = set(names)
    problems += [f"duplicate node name {n!r}" for n in sorted(known) if names.count(n) > 1]
    target_names = [t.name for t in topology.targets]
    problems += [f"duplicate target name {t!r}" for t in sorted(set(target_names)) if target_names.count(t) > 1]
    for node in topology.nodes:
        problems += _node_problems(node, known)
    if problems:
        return problems
    for node in topology.nodes:
        try:
            topology.pod_root(node.name)
        except ValueError:
            return [f"pod_of cycle through node {node.name!r}"]
    for root in {topology.pod_root(n.name).name for n in topology.nodes}:
        ports = [p for member in topology.pod_members(root) for p in member.ports]
        problems += [f"port {p} used twice in pod {root!r}" for p in sorted(set(ports)) if ports.count(p) > 1]
    problems += _mesh_peer_problems(topology)
    for target in topology.targets:
        if target.node not in known:
            problems.append(f"target {target.name!r} points at unknown node {target.node!r}")
            continue
        pod_ports = {p for member in topology.pod_members(target.node) for p in member.ports}
        if target.port not in pod_ports:
            problems.append(f"target {target.name!r}: nothing listens on {target.node}:{target.port}")
        if not target.path.startswith("/"):
            problems.append(f"target {target.name!r}: path must start with '/'")
        if target.scheme not in TARGET_SCHEMES:
            problems.append(
                f"target {target.name!r}: scheme {target.scheme!r} is not one of {', '.join(TARGET_SCHEMES)}"
            )
        elif target.scheme not in HTTP_SCHEMES and target.path != "/":
            problems.append(f"target {target.name!r}: a {target.scheme} target has no path")
        if target.scheme == "https":
            problems += _https_target_problems(topology, target)
        if target.via_dns and topology.pod_root(target.node).host_network:
            problems.append(
                f"target {target.name!r}: node {target.node!r} is on the host network, not reachable by name"
            )
    return problems


def _mesh_peer_problems(topology: Topology) -> list[str]:
    """An Envoy sidecar whose peer sidecar serves TLS presents its own certificate to it, so it
    needs ``params["tls"]`` too."""
    problems = []
    for node in topology.nodes:
        if node.kind != "envoy" or node.pod_of is None or node.tls is not None:
            continue
        for name in node.upstreams:
            peer = topology.node(name)
            if name != node.pod_of and peer.tls is not None:
                problems.append(
                    f"node {node.name!r}: its peer {name!r} serves TLS on {peer.tls.port}, so it needs "
                    "params['tls'] too (its certificate is what it presents)"
                )
    return problems


def _https_target_problems(topology: Topology, target: Target) -> list[str]:
    """An https target enters a TLS port of its node, from the host (where the CA file is)."""
    tls = topology.node(target.node).tls
    if tls is None or tls.port != target.port:
        serving = f" (it serves TLS on {tls.port})" if tls is not None else " (it has no params['tls'])"
        return [f"target {target.name!r}: node {target.node!r} serves no TLS on port {target.port}{serving}"]
    if target.via_dns:
        return [f"target {target.name!r}: an https target is measured from the host, not with via_dns"]
    return []


def _tls_problems(node: Node) -> list[str]:
    """A ``params["tls"]`` the node's kind and source can serve, with valid settings."""
    value = node.params.get("tls")
    if value is None or value is False:
        return []
    who = f"node {node.name!r}"
    if node.file_backed:
        return [f"{who}: params['tls'] is for rendered nodes; the team's own config (config=) sets up its TLS itself"]
    if node.kind not in TLS_KINDS:
        return [f"{who}: a {node.kind} node cannot terminate TLS (params['tls'] is for {', '.join(TLS_KINDS)})"]
    try:
        tls_of(node.params)
    except (TypeError, ValueError) as exc:
        return [f"{who}: {exc}"]
    return []


def _node_problems(node: Node, known: set[str]) -> list[str]:
    problems: list[str] = []
    if node.kind not in NODE_KINDS:
        problems.append(f"node {node.name!r} has unknown kind {node.kind!r}")
    for label in (node.name, *node.aliases):
        if not _DNS_LABEL.match(label):
            problems.append(f"{label!r} (node {node.name!r}) is not a lower-case DNS label")
    problems += [f"alias {a!r} of node {node.name!r} is also a node name" for a in node.aliases if a in known]
    problems += [f"node {node.name!r}: port {p} outside 1..65535" for p in node.ports if not 0 < p < 65536]
    problems += [f"node {node.name!r} forwards to unknown node {u!r}" for u in node.upstreams if u not in known]
    if node.name in node.upstreams:
        problems.append(f"node {node.name!r} forwards to itself")
    if node.pod_of is not None and node.pod_of not in known:
        problems.append(f"node {node.name!r} is pod_of unknown node {node.pod_of!r}")
    if node.pod_of is not None and node.aliases:
        problems.append(f"node {node.name!r} shares a network namespace and cannot have aliases")
    if node.host_network and node.pod_of is not None:
        problems.append(f"node {node.name!r}: a sidecar shares its pod's network; set host_network on {node.pod_of!r}")
    if node.host_network and node.aliases:
        problems.append(f"node {node.name!r} is on the host network and cannot have aliases")
    return problems + _file_problems(node) + _tls_problems(node)


def _file_problems(node: Node) -> list[str]:
    """Problems of the team-file fields: image, config, config_path, command, env, resources."""
    problems: list[str] = []
    who = f"node {node.name!r}"
    if node.image is not None and (not isinstance(node.image, str) or not _IMAGE.match(node.image)):
        problems.append(f"{who}: image must be an image reference such as 'nginx:1.27', got {node.image!r}")
    if node.kind == "container" and node.image is None:
        problems.append(f"{who} of kind 'container' needs image= (the image to run)")
    if node.config is not None:
        if not isinstance(node.config, str) or not node.config.strip():
            problems.append(f"{who}: config must be a file or folder path, got {node.config!r}")
        if node.kind == "echo":
            problems.append(
                f"{who}: the echo server reads no config file; use kind='container' with image= and command="
            )
        if node.kind == "container" and node.config_path is None:
            problems.append(f"{who}: a 'container' node's image has no known config path; set config_path=")
    if node.config_path is not None:
        if node.config is None:
            problems.append(f"{who}: config_path= is set without config=")
        if not isinstance(node.config_path, str) or not node.config_path.startswith("/"):
            problems.append(f"{who}: config_path must be an absolute path in the container, got {node.config_path!r}")
    if node.command is not None:
        if not isinstance(node.command, tuple):
            problems.append(f"{who}: command must be a list of strings (argv), got {node.command!r}")
        elif not node.command:
            problems.append(f"{who}: command is empty (None runs the image's default command)")
        elif not all(isinstance(part, str) for part in node.command):
            bad = [part for part in node.command if not isinstance(part, str)]
            problems.append(f"{who}: command must be a list of strings, {bad[0]!r} is not one")
    if not isinstance(node.env, Mapping):
        problems.append(f"{who}: env must be a mapping of names to strings, got {node.env!r}")
    else:
        problems += [
            f"{who}: env {key!r} must map a name to a string, got {value!r}"
            for key, value in node.env.items()
            if not isinstance(key, str) or not key or not isinstance(value, str)
        ]
    if node.resources is not None and not isinstance(node.resources, Resources):
        problems.append(f"{who}: resources must be a Resources or a dict, got {node.resources!r}")
    health = node.params.get("health_path")
    if health is not None and (not isinstance(health, str) or not health.startswith("/")):
        problems.append(f"{who}: params['health_path'] must start with '/', got {health!r}")
    return problems
