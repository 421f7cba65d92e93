"""Topologies as plain data, the seed-scenario builders and the config renderers."""

from .builders import (access_modes_topology, echo_topology, gateway_topology,
                       sidecar_chain_topology)
from .envoy import find_envoy_binary
from .model import Node, NodeKind, Target, Topology
from .render import (ContainerSpec, container_spec, container_specs, render_envoy,
                     render_haproxy, render_kong, render_nginx)

__all__ = [
    "Node", "NodeKind", "Target", "Topology",
    "echo_topology", "gateway_topology", "sidecar_chain_topology", "access_modes_topology",
    "ContainerSpec", "container_spec", "container_specs",
    "render_nginx", "render_haproxy", "render_envoy", "render_kong", "find_envoy_binary",
]
