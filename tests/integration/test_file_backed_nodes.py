"""Topology nodes backed by the team's own files: images, config files, commands, resources.

Each topology here runs the local images with their default commands (the way a Compose
file written for ``nginx:1.27`` runs them through the image mapping) and the team's config
files bind-mounted at the official paths. Loads are bounded (2 connections, 0.5 s) and go
only to the topology's own network. Every test checks that nothing of it is left running.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient
from docker_helpers import get, run_driver, session_leftovers

from pytest_netperf import ConfigPathError, Node, Resources, Target, Topology
from pytest_netperf.images.layers import image_id
from pytest_netperf.images.resolve import NodeImageMissingError
from pytest_netperf.images.roles import LOCAL_IMAGES
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.docker import DockerRuntime
from pytest_netperf.runtime.isolation import DOCKER_DEFAULT_CAPABILITIES
from pytest_netperf.runtime.resources import CoreSplit
from pytest_netperf.runtime.running import RunningTopology, TopologyStartError

pytestmark = pytest.mark.docker

MAPPING = {
    "nginx:1.27": LOCAL_IMAGES["nginx"],
    "haproxy:2.8": LOCAL_IMAGES["haproxy"],
    "envoyproxy/envoy": LOCAL_IMAGES["envoy"],  # every tag of the repository
}
ECHO = LOCAL_IMAGES["echo"]

#: A team's edge server block, as it would sit in ``nginx/edge.conf`` next to a Compose file
#: that mounts it at /etc/nginx/conf.d/default.conf: upstream by Docker DNS name, keep-alive.
EDGE_SERVER = """\
upstream app_pool {
    server app:8080;
    keepalive 32;
}

server {
    listen 80;
    server_name _;
    proxy_connect_timeout 2s;
    proxy_read_timeout 10s;

    location /api/ {
        proxy_pass http://app_pool;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        add_header X-Team-Edge api always;
    }

    location / {
        proxy_pass http://app_pool;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        add_header X-Team-Edge root always;
    }
}
"""
#: The same edge as a whole nginx.conf (mounted at /etc/nginx/nginx.conf).
EDGE_NGINX_CONF = f"""\
user nginx;
worker_processes 1;
error_log /var/log/nginx/error.log warn;
pid /run/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
{EDGE_SERVER}
}}
"""
HAPROXY_CFG = """\
global
    maxconn 1024
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend web
    bind :80
    http-response add-header X-Team-Lb haproxy
    default_backend app
backend app
    http-reuse always
    server app1 app:8080
"""
ENVOY_YAML = """\
static_resources:
  listeners:
  - name: ingress
    address: { socket_address: { address: 0.0.0.0, port_value: 10000 } }
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: ingress
          route_config:
            virtual_hosts:
            - name: app
              domains: ["*"]
              routes:
              - match: { prefix: "/" }
                route: { cluster: app }
              response_headers_to_add:
              - header: { key: x-team-mesh, value: envoy }
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
  - name: app
    type: STRICT_DNS
    connect_timeout: 2s
    load_assignment:
      cluster_name: app
      endpoints:
      - lb_endpoints:
        - endpoint: { address: { socket_address: { address: app, port_value: 8080 } } }
"""


def _app(**kwargs: object) -> Node:
    """The team's app: a generic container from the echo image with its own command."""
    command = ("netperf-driver", "echo", "--listen", "0.0.0.0:8080", "--id", "app")
    return Node("app", "container", 8080, image=ECHO, command=command, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def client(netperf_docker: DockerRuntime) -> DockerClient:
    absent = [tag for tag in LOCAL_IMAGES.values() if image_id(netperf_docker.client, tag) is None]
    if absent:
        pytest.skip(f"local images {', '.join(absent)} missing; build them with `netperf images build`")
    return netperf_docker.client


@pytest.fixture
def runtime(client: DockerClient, netperf_docker: DockerRuntime) -> Iterator[DockerRuntime]:
    """A runtime of its own session (so the test can check that session alone) with the mapping."""
    session = f"fb{uuid.uuid4().hex[:6]}"
    own = DockerRuntime(session, dict(netperf_docker.images), client, overrides=MAPPING, core_split=None)
    try:
        yield own
    finally:
        own.down_all()
        left = session_leftovers(client, session)
        clean_session(session, client)
        assert not left, f"left running after the test: {left}"


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("layout", ["conf.d server block", "whole nginx.conf"])
def test_team_nginx_config_proxies_to_the_app_by_name(runtime: DockerRuntime, tmp_path: Path, layout: str) -> None:
    if layout == "conf.d server block":
        _write(tmp_path, "nginx/edge.conf", EDGE_SERVER)
        edge = Node(
            "edge",
            "nginx",
            80,
            upstreams=("app",),
            image="nginx:1.27",
            config="nginx/edge.conf",
            config_path="/etc/nginx/conf.d/default.conf",
        )
    else:
        _write(tmp_path, "nginx/nginx.conf", EDGE_NGINX_CONF)
        edge = Node("edge", "nginx", 80, upstreams=("app",), image="nginx:1.27", config="nginx")  # folder overlay
    topology = Topology("team-edge", (_app(), edge), (Target("api", "edge", 80, "/api/users"),))
    with runtime.up(topology, base_dir=tmp_path) as running:
        endpoint = running.endpoint("api")
        status, headers, _ = get(endpoint.url)
        assert status == 200 and headers["x-team-edge"] == "api" and headers["x-netperf-echo"] == "app"
        assert get(endpoint.url, "/")[1]["x-team-edge"] == "root"
        assert endpoint.facts["images"] == f"app={ECHO}, edge={LOCAL_IMAGES['nginx']} (for nginx:1.27)"
        assert "resources" not in endpoint.facts  # no limits, no core split
        container = running.container("edge")
        assert container.attrs["Config"]["Cmd"] == ["nginx", "-g", "daemon off;"]  # the image's default command
        mounts = {m["Destination"]: m for m in container.attrs["Mounts"]}
        target = "/etc/nginx/conf.d/default.conf" if layout == "conf.d server block" else "/etc/nginx/nginx.conf"
        assert mounts[target]["RW"] is False and mounts[target]["Type"] == "bind"
        if layout == "whole nginx.conf":  # the image's own files next to it stay
            assert container.exec_run(["test", "-f", "/etc/nginx/mime.types"]).exit_code == 0
        summary = run_driver(endpoint.url, endpoint.runner)
        assert summary["ok"] > 0 and not any(summary["errors"].values())


def test_a_container_node_runs_its_image_with_dockers_default_capabilities(runtime: DockerRuntime) -> None:
    topology = Topology("team-app", (_app(env={"APP_MODE": "gate"}),), (Target("app", "app", 8080, "/"),))
    with runtime.up(topology) as running:
        status, headers, _ = get(running.endpoint("app").url)
        assert status == 200 and headers["x-netperf-echo"] == "app"
        config = running.container("app").attrs
        assert config["Config"]["Cmd"][:2] == ["netperf-driver", "echo"]
        assert "APP_MODE=gate" in config["Config"]["Env"]
        assert sorted(config["HostConfig"]["CapAdd"]) == sorted(DOCKER_DEFAULT_CAPABILITIES)
        assert config["HostConfig"]["SecurityOpt"] == ["no-new-privileges"]


def test_haproxy_and_envoy_read_team_files_at_their_default_paths(runtime: DockerRuntime, tmp_path: Path) -> None:
    _write(tmp_path, "lb/haproxy.cfg", HAPROXY_CFG)
    _write(tmp_path, "mesh/envoy.yaml", ENVOY_YAML)
    nodes = (
        _app(),
        Node("lb", "haproxy", 80, upstreams=("app",), image="haproxy:2.8", config="lb/haproxy.cfg"),
        Node("mesh", "envoy", 10000, upstreams=("app",), image="envoyproxy/envoy:v1.31-latest", config="mesh"),
    )
    targets = (Target("lb", "lb", 80), Target("mesh", "mesh", 10000))
    with runtime.up(Topology("team-proxies", nodes, targets), base_dir=tmp_path) as running:
        lb_status, lb_headers, _ = get(running.endpoint("lb").url)
        assert lb_status == 200 and lb_headers["x-team-lb"] == "haproxy" and lb_headers["x-netperf-echo"] == "app"
        mesh_status, mesh_headers, _ = get(running.endpoint("mesh").url)
        assert mesh_status == 200 and mesh_headers["x-team-mesh"] == "envoy"
        assert mesh_headers["x-netperf-echo"] == "app"
        assert running.container("lb").attrs["Config"]["Cmd"][-1] == "/usr/local/etc/haproxy/haproxy.cfg"
        assert running.container("mesh").attrs["Config"]["Cmd"] == ["envoy", "-c", "/etc/envoy/envoy.yaml"]
        assert (
            running.endpoint("mesh")
            .facts["images"]
            .endswith(f"mesh={LOCAL_IMAGES['envoy']} (for envoyproxy/envoy:v1.31-latest)")
        )


def test_resources_reach_the_container_and_the_facts(runtime: DockerRuntime) -> None:
    limited = _app(resources=Resources(cpus=0.5, cpuset="0", memory="64m"))
    topology = Topology("team-limits", (limited,), (Target("app", "app", 8080),))
    with runtime.up(topology) as running:
        host = running.container("app").attrs["HostConfig"]
        assert (host["NanoCpus"], host["CpusetCpus"], host["Memory"]) == (500_000_000, "0", 64 * 1024**2)
        assert running.endpoint("app").facts["resources"] == "app cpus 0.5, cpuset 0, memory 64m"
    runtime.core_split = CoreSplit(driver="0", sut="1")  # as default_split() gives on 4+ cores
    plain = Topology("team-split", (_app(), Node("echo", "echo", 8081)), (Target("app", "app", 8080),))
    with runtime.up(plain) as running:
        assert running.container("app").attrs["HostConfig"]["CpusetCpus"] == "1"
        assert running.container("echo").attrs["HostConfig"]["CpusetCpus"] == "1"
        assert running.endpoint("app").facts["resources"] == (
            "app cpuset 1; echo cpuset 1; driver cores 0, system under test cores 1"
        )
        assert get(running.endpoint("app").url)[0] == 200


def test_relative_configs_resolve_against_the_rootdir(netperf_topology, request, tmp_path: Path) -> None:
    _write(tmp_path, "edge.conf", EDGE_SERVER)
    relative = os.path.relpath(tmp_path / "edge.conf", request.config.rootpath)
    edge = Node(
        "edge",
        "nginx",
        80,
        upstreams=("app",),
        config=relative,
        config_path="/etc/nginx/conf.d/default.conf",
    )
    running: RunningTopology = netperf_topology(Topology("team-rootdir", (_app(), edge), (Target("e", "edge", 80),)))
    assert get(running.endpoint("e").url)[1]["x-team-edge"] == "root"
    assert running.node_images["edge"] == LOCAL_IMAGES["nginx"]  # no image=: the role's image


# ----------------------------------------------------------------------------- bad input


def test_a_missing_config_path_names_it_and_starts_nothing(runtime: DockerRuntime, tmp_path: Path) -> None:
    edge = Node("edge", "nginx", 80, upstreams=("app",), config="nginx/edge.conf")
    with pytest.raises(ConfigPathError) as raised:
        runtime.up(Topology("team-missing", (_app(), edge), ()), base_dir=tmp_path)
    message = str(raised.value)
    assert "node 'edge'" in message and "'nginx/edge.conf' does not exist" in message
    assert f"resolved against {tmp_path}" in message
    assert not session_leftovers(runtime.client, runtime.session_id) and not runtime.running


def test_an_unmapped_missing_image_names_node_image_and_fixes(runtime: DockerRuntime, tmp_path: Path) -> None:
    if image_id(runtime.client, "nginx:1.25") is not None:
        pytest.skip("nginx:1.25 is present on this machine")
    _write(tmp_path, "edge.conf", EDGE_SERVER)
    edge = Node("edge", "nginx", 80, upstreams=("app",), image="nginx:1.25", config="edge.conf")
    with pytest.raises(NodeImageMissingError) as raised:
        runtime.up(Topology("team-noimage", (_app(), edge), ()), base_dir=tmp_path)
    message = str(raised.value)
    assert message.startswith("node 'edge': image nginx:1.25 is neither present locally nor pulled")
    assert "--netperf-image nginx:1.25=pytest-netperf/nginx:local" in message
    assert "netperf images build" in message and "docker load" in message
    assert not session_leftovers(runtime.client, runtime.session_id) and not runtime.running


def test_a_container_node_without_image_is_refused(runtime: DockerRuntime) -> None:
    with pytest.raises(ValueError, match="node 'app' of kind 'container' needs image="):
        runtime.up(Topology("team-noapp", (Node("app", "container", 8080),), ()))
    assert not session_leftovers(runtime.client, runtime.session_id)


def test_a_team_config_that_fails_at_start_gives_exit_code_and_log_tail(runtime: DockerRuntime, tmp_path: Path) -> None:
    _write(tmp_path, "edge.conf", "server { listen 80; keepalive_pool 32; }\n")  # no such directive
    edge = Node("edge", "nginx", 80, image="nginx:1.27", config="edge.conf", config_path="/etc/nginx/conf.d/x.conf")
    with pytest.raises(TopologyStartError) as raised:
        runtime.up(Topology("team-broken", (edge,), ()), base_dir=tmp_path)
    message = str(raised.value)
    assert "node 'edge' (nginx) not ready (image pytest-netperf/nginx:local)" in message
    assert "exit code 1" in message and 'unknown directive "keepalive_pool"' in message
    assert not session_leftovers(runtime.client, runtime.session_id) and not runtime.running
