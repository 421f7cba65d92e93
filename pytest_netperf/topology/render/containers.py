"""Turn a Topology into container specs: command, config files or mounts, environment, probe.

Rendered nodes get their config written by the built-in renderers (under ``/netperf``) and
an explicit command naming it. File-backed nodes (``config=``) and ``"container"`` nodes get
the team's files bind-mounted read-only (see :mod:`.files`) and the image's default command.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from pytest_netperf.topology.model import Node, Topology
from pytest_netperf.topology.render.envoy import CONFIG_PATH as ENVOY_CONFIG
from pytest_netperf.topology.render.envoy import envoy_command, render_envoy
from pytest_netperf.topology.render.files import Mount, config_mounts, declarative_config_path
from pytest_netperf.topology.render.haproxy import CONFIG_PATH as HAPROXY_CONFIG
from pytest_netperf.topology.render.haproxy import haproxy_command, render_haproxy
from pytest_netperf.topology.render.kong import CONFIG_PATH as KONG_CONFIG
from pytest_netperf.topology.render.kong import kong_command, kong_environment, render_kong
from pytest_netperf.topology.render.nginx import CONFIG_PATH as NGINX_CONFIG
from pytest_netperf.topology.render.nginx import nginx_command, render_nginx
from pytest_netperf.topology.tls import TlsTermination

HEALTH_PATH = "/healthz"

__all__ = [
    "HEALTH_PATH",
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
    #: argv; None runs the image's default command
    command: list[str] | None
    #: rendered config files (absolute path -> text) copied in before the start
    files: dict[str, str]
    environment: dict[str, str]
    #: HTTP readiness path on ``port``; None: a TCP connect to ``port``
    health_path: str | None
    port: int
    #: the image reference the node asks for (before the image mapping); None: the role's image
    image: str | None = None
    #: the team's files, bind-mounted read-only
    mounts: tuple[Mount, ...] = ()
    #: further ports that must accept a TCP connection before the node counts as ready
    tcp_ports: tuple[int, ...] = ()
    #: the node's TLS listener (its certificate among ``files``): ready once an HTTPS GET of
    #: ``health_path`` on its port, trusting the certificate's CA, answers 2xx
    tls: TlsTermination | None = None


def echo_command(node: Node) -> list[str]:
    """The echo server command line; the ``next_url`` param becomes ``--next``, the
    ``tcp_echo_port`` param ``--tcp-echo`` (raw TCP echo on that port)."""
    command = ["netperf-driver", "echo", "--listen", f"0.0.0.0:{node.port}", "--id", node.name]
    if node.params.get("next_url"):
        command += ["--next", str(node.params["next_url"])]
    if node.params.get("tcp_echo_port"):
        command += ["--tcp-echo", f"0.0.0.0:{int(node.params['tcp_echo_port'])}"]
    return command


def iperf3_command(node: Node) -> list[str]:
    """An iperf3 server on the node's port (it serves one test at a time, then the next)."""
    return ["iperf3", "--server", "--port", str(node.port)]


#: The image role each kind runs from (an iperf3 server runs from the echo image, whose base carries iperf3).
IMAGE_ROLES = {"iperf3": "echo"}


_RENDERERS: dict[str, tuple[str, Callable[[Topology, Node], str]]] = {
    "nginx": (NGINX_CONFIG, render_nginx),
    "haproxy": (HAPROXY_CONFIG, render_haproxy),
    "envoy": (ENVOY_CONFIG, render_envoy),
    "kong": (KONG_CONFIG, render_kong),
}


def container_spec(topology: Topology, node: Node, base_dir: str | os.PathLike[str] | None = None) -> ContainerSpec:
    """The spec for one node; ``base_dir`` resolves relative ``config=`` paths (default: cwd).

    A rendered node's probe is an HTTP GET of /healthz on its main port, so for proxies it
    travels the whole proxied path to the echo server. A file-backed node's probe is a TCP
    connect to each port, or HTTP GET ``params["health_path"]`` on the main port.
    """
    if node.file_backed:
        return _file_backed_spec(node, base_dir)
    files: dict[str, str] = {}
    if node.kind in _RENDERERS:
        path, render = _RENDERERS[node.kind]
        files[path] = render(topology, node)
    if node.tls is not None:
        files.update(node.tls.files())  # the certificate the runtime minted for this node
    commands = {
        "echo": lambda: echo_command(node),
        "iperf3": lambda: iperf3_command(node),
        "nginx": nginx_command,
        "haproxy": haproxy_command,
        "envoy": lambda: envoy_command(node),
        "kong": kong_command,
    }
    environment = kong_environment(node) if node.kind == "kong" else {}
    tcp_echo = node.params.get("tcp_echo_port") if node.kind == "echo" else None
    return ContainerSpec(
        node=node.name,
        role=IMAGE_ROLES.get(node.kind, node.kind),
        command=list(node.command) if node.command else commands[node.kind](),
        files=files,
        environment={**environment, **node.env},
        health_path=None if node.kind == "iperf3" else HEALTH_PATH,  # iperf3: a TCP connect
        port=node.port,
        image=node.image,
        tcp_ports=(int(tcp_echo),) if tcp_echo else (),
        tls=node.tls,
    )


def _file_backed_spec(node: Node, base_dir: str | os.PathLike[str] | None) -> ContainerSpec:
    environment: dict[str, str] = {}
    if node.kind == "kong" and node.config is not None:  # DB-less, reading the team's declarative file
        environment = {"KONG_DATABASE": "off", "KONG_DECLARATIVE_CONFIG": declarative_config_path(node, base_dir)}
    health_path = node.params.get("health_path")
    return ContainerSpec(
        node=node.name,
        role=node.kind,
        command=list(node.command) if node.command else None,
        files={},
        environment={**environment, **node.env},
        health_path=str(health_path) if health_path else None,
        port=node.port,
        image=node.image,
        mounts=config_mounts(node, base_dir),
        tcp_ports=node.extra_ports,
    )


def container_specs(topology: Topology, base_dir: str | os.PathLike[str] | None = None) -> list[ContainerSpec]:
    """Specs for every node in start order (upstreams first, sidecars after their app)."""
    topology.validate()
    return [container_spec(topology, node, base_dir) for node in topology.start_order()]
