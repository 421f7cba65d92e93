"""Pure renderers from a topology to config files (nginx, HAProxy, Envoy, Kong) and container specs."""

from pytest_netperf.topology.render.containers import (
    ContainerSpec,
    container_spec,
    container_specs,
    render_envoy,
    render_haproxy,
    render_kong,
    render_nginx,
)
from pytest_netperf.topology.render.envoy import find_envoy_binary

__all__ = [
    "ContainerSpec",
    "container_spec",
    "container_specs",
    "find_envoy_binary",
    "render_envoy",
    "render_haproxy",
    "render_kong",
    "render_nginx",
]
