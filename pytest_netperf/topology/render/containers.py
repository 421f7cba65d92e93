"""Turn a Topology into container specs: command, config files, environment, probe."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pytest_netperf.topology.model import Node, Topology
from pytest_netperf.topology.render.envoy import CONFIG_PATH as ENVOY_CONFIG
from pytest_netperf.topology.render.envoy import envoy_command, render_envoy
from pytest_netperf.topology.render.haproxy import CONFIG_PATH as HAPROXY_CONFIG
from pytest_netperf.topology.render.haproxy import haproxy_command, render_haproxy
from pytest_netperf.topology.render.kong import CONFIG_PATH as KONG_CONFIG
from pytest_netperf.topology.render.kong import kong_command, kong_environment, render_kong
from pytest_netperf.topology.render.nginx import CONFIG_PATH as NGINX_CONFIG
from pytest_netperf.topology.render.nginx import nginx_command, render_nginx

HEALTH_PATH = "/healthz"

__all__ = [
    "ContainerSpec",
    "container_spec",
    "container_specs",
    "echo_command",
    "render_envoy",
    "render_haproxy",
    "render_kong",
    "render_nginx",
]


@dataclass(frozen=True)
class ContainerSpec:
    """Everything a runtime needs to start one node's container."""

    node: str
    role: str
    command: list[str]
    files: dict[str, str]
    environment: dict[str, str]
    health_path: str | None
    port: int


def echo_command(node: Node) -> list[str]:
    """The echo server command line; the ``next_url`` param becomes ``--next``."""
    command = ["netperf-driver", "echo", "--listen", f"0.0.0.0:{node.port}", "--id", node.name]
    if node.params.get("next_url"):
        command += ["--next", str(node.params["next_url"])]
    return command


_RENDERERS: dict[str, tuple[str, Callable[[Topology, Node], str]]] = {
    "nginx": (NGINX_CONFIG, render_nginx),
    "haproxy": (HAPROXY_CONFIG, render_haproxy),
    "envoy": (ENVOY_CONFIG, render_envoy),
    "kong": (KONG_CONFIG, render_kong),
}


def container_spec(topology: Topology, node: Node) -> ContainerSpec:
    """The spec for one node. Every probe is an HTTP GET of /healthz on the node's main
    port, so for proxies it travels the whole proxied path to the echo server."""
    files: dict[str, str] = {}
    if node.kind in _RENDERERS:
        path, render = _RENDERERS[node.kind]
        files[path] = render(topology, node)
    commands = {
        "echo": lambda: echo_command(node),
        "nginx": nginx_command,
        "haproxy": haproxy_command,
        "envoy": lambda: envoy_command(node),
        "kong": kong_command,
    }
    environment = kong_environment(node) if node.kind == "kong" else {}
    return ContainerSpec(
        node=node.name,
        role=node.kind,
        command=commands[node.kind](),
        files=files,
        environment=environment,
        health_path=HEALTH_PATH,
        port=node.port,
    )


def container_specs(topology: Topology) -> list[ContainerSpec]:
    """Specs for every node in start order (upstreams first, sidecars after their app)."""
    topology.validate()
    return [container_spec(topology, node) for node in topology.start_order()]
