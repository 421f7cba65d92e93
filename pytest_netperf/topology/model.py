"""The topology model: plain, immutable data describing nodes and load targets."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

NodeKind = Literal["echo", "nginx", "kong", "envoy", "haproxy"]
NODE_KINDS: tuple[str, ...] = ("echo", "nginx", "kong", "envoy", "haproxy")

# A DNS label as Docker accepts it for container names and network aliases.
_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class Node:
    """One container: what runs in it, where it listens and whom it forwards to."""

    name: str
    kind: NodeKind
    port: int
    upstreams: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)
    pod_of: str | None = None
    extra_ports: tuple[int, ...] = ()

    @property
    def ports(self) -> tuple[int, ...]:
        """Every port this node listens on, the main one first."""
        return (self.port, *self.extra_ports)


@dataclass(frozen=True)
class Target:
    """Something the load driver measures: a node, a port and a path."""

    name: str
    node: str
    port: int
    path: str = "/"
    via_dns: bool = False
    host_header: str | None = None


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
    for target in topology.targets:
        if target.node not in known:
            problems.append(f"target {target.name!r} points at unknown node {target.node!r}")
            continue
        pod_ports = {p for member in topology.pod_members(target.node) for p in member.ports}
        if target.port not in pod_ports:
            problems.append(f"target {target.name!r}: nothing listens on {target.node}:{target.port}")
        if not target.path.startswith("/"):
            problems.append(f"target {target.name!r}: path must start with '/'")
    return problems


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
    return problems
