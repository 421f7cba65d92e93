"""Config renderers and container specs: the knobs reach the text."""

from __future__ import annotations

import json
import re

import pytest

from pytest_netperf import (
    Node,
    Topology,
    access_modes_topology,
    echo_topology,
    gateway_topology,
    sidecar_chain_topology,
)
from pytest_netperf.topology.render import container_specs, render_envoy, render_haproxy, render_kong, render_nginx


def _nginx(**kwargs: object) -> str:
    topo = gateway_topology("nginx", **kwargs)  # type: ignore[arg-type]
    return render_nginx(topo, topo.node("gw"))


def test_nginx_renders_workers_pool_and_via_header() -> None:
    text = _nginx(workers=2)
    assert re.search(r"^worker_processes 2;$", text, re.M)
    assert "worker_connections 4096;" in text
    assert re.search(r"upstream backend \{\s+server echo:8080;\s+keepalive 1024;", text)
    assert "proxy_http_version 1.1;" in text and 'proxy_set_header Connection "";' in text
    assert "add_header x-netperf-via gw always;" in text
    assert "access_log off;" in text and "error_log stderr" in text
    assert "pid /tmp/" in text and "daemon off;" in text
    temp_paths = re.findall(r"^\s+(\w+)_temp_path (\S+);$", text, re.M)
    assert len(temp_paths) == 5 and all(p.startswith("/tmp/") for _, p in temp_paths)
    assert "listen 8000" in text and "/healthz" not in text


def test_nginx_without_upstream_keepalive_is_the_regression_variant() -> None:
    pooled, unpooled = _nginx(), _nginx(upstream_keepalive=False)
    assert re.search(r"^\s+keepalive \d+;$", pooled, re.M)
    assert not re.search(r"^\s+keepalive \d+;$", unpooled, re.M)
    assert "proxy_set_header Connection close;" in unpooled
    assert pooled.replace("\n", "") != unpooled.replace("\n", "")


def test_haproxy_modes_and_discovery() -> None:
    topo = access_modes_topology(replicas=3)
    discovery = render_haproxy(topo, topo.node("discovery"))
    assert "resolvers docker" in discovery and "nameserver dns 127.0.0.11:53" in discovery
    assert "server-template echo 1-3 echo-svc:8080 check resolvers docker init-addr none" in discovery
    l7 = render_haproxy(topo, topo.node("l7"))
    assert "resolvers" not in l7 and "balance roundrobin" in l7
    assert [ln.split()[1] for ln in l7.splitlines() if ln.strip().startswith("server ")] == [
        "echo-1",
        "echo-2",
        "echo-3",
    ]
    assert "option http-keep-alive" in l7 and "add-header x-netperf-via l7" in l7
    l4 = render_haproxy(topo, topo.node("l4"))
    assert "mode tcp" in l4 and "mode http" not in l4 and "x-netperf-via" not in l4
    for text in (discovery, l7, l4):
        assert "nbthread 1" in text and "maxconn 20000" in text
        assert "timeout connect 2s" in text and "timeout server 30s" in text
        assert "uri /healthz" in text


def test_haproxy_params_and_errors() -> None:
    nodes = (Node("e", "echo", 80), Node("lb", "haproxy", 90, upstreams=("e",), params={"nbthread": 2, "maxconn": 500}))
    text = render_haproxy(Topology("t", nodes, ()), nodes[1])
    assert "nbthread 2" in text and "maxconn 500" in text
    bad = Node("lb", "haproxy", 90, upstreams=("e",), params={"discover": "svc"})
    with pytest.raises(ValueError, match="do not carry that alias"):
        render_haproxy(Topology("t", (nodes[0], bad), ()), bad)
    with pytest.raises(ValueError, match="mode"):
        odd = Node("lb", "haproxy", 90, upstreams=("e",), params={"mode": "udp"})
        render_haproxy(Topology("t", (nodes[0], odd), ()), odd)


def test_envoy_sidecar_listeners_and_clusters() -> None:
    topo = sidecar_chain_topology(sidecars=True)
    config = json.loads(render_envoy(topo, topo.node("svc-b-proxy")))
    assert config["admin"]["address"]["socket_address"] == {"address": "127.0.0.1", "port_value": 15000}
    listeners = {item["name"]: item for item in config["static_resources"]["listeners"]}
    assert listeners["inbound"]["address"]["socket_address"]["port_value"] == 15006
    assert listeners["outbound"]["address"]["socket_address"]["port_value"] == 15001
    manager = listeners["inbound"]["filter_chains"][0]["filters"][0]["typed_config"]
    assert manager["http_filters"][0]["name"] == "envoy.filters.http.router"
    via = manager["route_config"]["response_headers_to_add"][0]["header"]
    assert via == {"key": "x-netperf-via", "value": "svc-b-proxy"}
    assert "access_log" not in manager
    clusters = {c["name"]: c for c in config["static_resources"]["clusters"]}

    def endpoint(name: str) -> dict:
        lb = clusters[name]["load_assignment"]["endpoints"][0]["lb_endpoints"][0]
        return lb["endpoint"]["address"]["socket_address"]

    assert endpoint("local_app") == {"address": "127.0.0.1", "port_value": 8080}
    assert endpoint("peer") == {"address": "svc-a", "port_value": 15006}
    assert clusters["peer"]["type"] == "STRICT_DNS"


def test_envoy_without_a_pod_is_a_gateway_that_needs_an_upstream() -> None:
    nodes = (Node("e", "echo", 80), Node("p", "envoy", 15006))
    with pytest.raises(ValueError, match="envoy gateway 'p' needs at least one upstream"):
        render_envoy(Topology("t", nodes, ()), nodes[1])


def test_kong_declarative_config_and_plugins() -> None:
    topo = gateway_topology("kong")
    gw = topo.node("gw")
    custom = Node(
        "gw",
        "kong",
        8000,
        upstreams=("echo",),
        params={"plugins": [{"name": "rate-limiting", "config": {"second": 1000}}], "via_header": False},
    )
    config = json.loads(render_kong(topo, gw))
    assert config["_format_version"] == "3.0"
    assert config["upstreams"][0]["targets"][0]["target"] == "echo:8080"
    service = config["services"][0]
    assert service["host"] == config["upstreams"][0]["name"]
    assert service["routes"][0]["paths"] == ["/"] and service["routes"][0]["strip_path"] is False
    assert service["plugins"] == [
        {"name": "response-transformer", "config": {"append": {"headers": ["x-netperf-via:gw"]}}}
    ]
    custom_config = json.loads(render_kong(Topology("t", (topo.node("echo"), custom), ()), custom))
    assert custom_config["services"][0]["plugins"] == [{"name": "rate-limiting", "config": {"second": 1000}}]


def test_container_specs_in_start_order_with_commands_files_and_env() -> None:
    specs = container_specs(gateway_topology("kong", workers=2, upstream_keepalive=False))
    assert [(s.node, s.role) for s in specs] == [("echo", "echo"), ("gw", "kong")]
    echo, kong = specs
    assert echo.command == ["netperf-driver", "echo", "--listen", "0.0.0.0:8080", "--id", "echo"]
    assert echo.files == {} and echo.health_path == "/healthz"
    assert kong.environment["KONG_DATABASE"] == "off"
    assert kong.environment["KONG_DECLARATIVE_CONFIG"] in kong.files
    assert kong.environment["KONG_NGINX_WORKER_PROCESSES"] == "2"
    assert kong.environment["KONG_PROXY_LISTEN"] == "0.0.0.0:8000"
    assert kong.environment["KONG_UPSTREAM_KEEPALIVE_POOL_SIZE"] == "0"
    pooled = container_specs(gateway_topology("kong"))[1]
    assert pooled.environment["KONG_UPSTREAM_KEEPALIVE_POOL_SIZE"] != "0"


def test_container_specs_configs_live_under_netperf_and_are_named_on_the_command() -> None:
    topologies = [
        gateway_topology("nginx"),
        access_modes_topology(),
        sidecar_chain_topology(True),
        sidecar_chain_topology(False),
        echo_topology(2),
    ]
    for topo in topologies:
        for spec in container_specs(topo):
            for path in spec.files:
                assert path.startswith("/netperf/")
                assert path in spec.command or path in spec.environment.values()
    chain = {s.node: s for s in container_specs(sidecar_chain_topology(True))}
    assert chain["svc-a"].command[-2:] == ["--next", "http://127.0.0.1:15001"]
    assert chain["svc-a-proxy"].port == 15006 and chain["svc-a-proxy"].role == "envoy"


def test_json_configs_read_the_same_as_yaml() -> None:
    """Envoy and Kong read their .yaml/.yml files as YAML: the JSON must mean the same there."""
    yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read the configs as YAML")
    sidecars, gateway = sidecar_chain_topology(sidecars=True), gateway_topology("kong")
    envoy = render_envoy(sidecars, sidecars.node("svc-a-proxy"))
    kong = render_kong(gateway, gateway.node("gw"))
    for text in (envoy, kong):
        assert yaml.safe_load(text) == json.loads(text)
    assert yaml.safe_load(kong)["_format_version"] == "3.0"  # a string, not the number 3.0


def test_haproxy_overload_knobs_reach_the_config() -> None:
    from pytest_netperf.topology import builders
    from pytest_netperf.topology.render.containers import render_haproxy

    topo = builders.access_modes_topology(2, l7_params={"server_maxconn": 4, "queue_timeout": "50ms"}, name="overload")
    text = render_haproxy(topo, topo.node("l7"))
    assert "timeout queue 50ms" in text
    assert "server echo-1 echo-1:8080 check maxconn 4" in text
    assert topo.name == "overload"
    plain = render_haproxy(topo, topo.node("l4"))
    assert "timeout queue" not in plain and "maxconn 4" not in plain
