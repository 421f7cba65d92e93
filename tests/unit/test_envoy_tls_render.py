"""Envoy speaking TLS: the mTLS sidecar chain (mutual TLS and HTTP/2 between sidecars), the
Envoy gateway (TLS termination, h2c upstreams for gRPC, max_concurrent_streams), and mutual
TLS on the nginx and HAProxy listeners: the rendered configs and the certificates."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from pytest_netperf import gateway_topology, sidecar_chain_topology
from pytest_netperf.runtime.test_ca import SessionCA
from pytest_netperf.runtime.tls_nodes import trust_for, with_certificates
from pytest_netperf.topology.model import Topology
from pytest_netperf.topology.render import container_specs, render_envoy, render_haproxy, render_nginx
from pytest_netperf.topology.tls import CA_PATH, CERT_PATH, KEY_PATH

TLS_SOCKET_TYPES = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3"


def _config(topology: Topology, node: str) -> tuple[dict[str, Any], dict[str, Any]]:
    config = json.loads(render_envoy(topology, topology.node(node)))
    listeners = {item["name"]: item for item in config["static_resources"]["listeners"]}
    clusters = {item["name"]: item for item in config["static_resources"]["clusters"]}
    return listeners, clusters


def _port(listener: dict[str, Any]) -> int:
    return int(listener["address"]["socket_address"]["port_value"])


def _endpoints(cluster: dict[str, Any]) -> list[tuple[str, int]]:
    found = []
    for lb in cluster["load_assignment"]["endpoints"][0]["lb_endpoints"]:
        address = lb["endpoint"]["address"]["socket_address"]
        found.append((address["address"], address["port_value"]))
    return found


def _protocol(cluster: dict[str, Any]) -> dict[str, Any]:
    options = cluster["typed_extension_protocol_options"]
    (only,) = options.values()
    return dict(only["explicit_http_config"])


def test_mtls_sidecars_take_mutual_tls_with_h2_and_reach_their_peer_with_it() -> None:
    topology = sidecar_chain_topology(sidecars=True, mtls=True)
    assert topology.name == "sidecar-chain-mtls"
    listeners, clusters = _config(topology, "svc-a-proxy")
    assert {name: _port(item) for name, item in listeners.items()} == {
        "inbound": 15006,  # the driver's cleartext entry
        "inbound_tls": 15443,
        "outbound": 15001,
    }
    inbound_tls = listeners["inbound_tls"]["filter_chains"][0]
    context = inbound_tls["transport_socket"]["typed_config"]
    assert context["@type"] == f"{TLS_SOCKET_TYPES}.DownstreamTlsContext"
    assert context["require_client_certificate"] is True
    common = context["common_tls_context"]
    assert common["alpn_protocols"] == ["h2", "http/1.1"]
    assert common["validation_context"]["trusted_ca"]["filename"] == CA_PATH
    assert common["tls_certificates"][0]["certificate_chain"]["filename"] == CERT_PATH
    # the peer: svc-b's mutual TLS port, h2, presenting svc-a-proxy's certificate, checking svc-b's name
    peer = clusters["peer"]
    assert _endpoints(peer) == [("svc-b", 15443)]
    assert _protocol(peer) == {"http2_protocol_options": {}}
    upstream = peer["transport_socket"]["typed_config"]
    assert upstream["@type"] == f"{TLS_SOCKET_TYPES}.UpstreamTlsContext"
    assert upstream["sni"] == "svc-b"
    assert upstream["common_tls_context"]["alpn_protocols"] == ["h2"]
    assert upstream["common_tls_context"]["tls_certificates"][0]["private_key"]["filename"] == KEY_PATH
    names = upstream["common_tls_context"]["validation_context"]["match_typed_subject_alt_names"]
    assert names == [{"san_type": "DNS", "matcher": {"exact": "svc-b"}}]
    # the app stays cleartext on loopback
    assert _endpoints(clusters["local_app"]) == [("127.0.0.1", 8080)]
    assert "transport_socket" not in clusters["local_app"]


def test_the_cleartext_chain_is_unchanged_by_the_mtls_option() -> None:
    listeners, clusters = _config(sidecar_chain_topology(sidecars=True), "svc-a-proxy")
    assert set(listeners) == {"inbound", "outbound"}
    assert _endpoints(clusters["peer"]) == [("svc-b", 15006)]
    assert _protocol(clusters["peer"]) == {"http_protocol_options": {}}
    assert "transport_socket" not in clusters["peer"]
    with pytest.raises(ValueError, match="mtls is between sidecars"):
        sidecar_chain_topology(sidecars=False, mtls=True)


def test_each_sidecar_gets_a_certificate_for_client_and_server_use_and_the_ca() -> None:
    with SessionCA() as ca:
        topology = with_certificates(sidecar_chain_topology(sidecars=True, mtls=True), lambda: ca)
        for name, pod in (("svc-a-proxy", "svc-a"), ("svc-b-proxy", "svc-b")):
            tls = topology.node(name).tls
            assert tls is not None and tls.mutual and tls.certificate is not None
            assert pod in tls.certificate.names  # the SNI its peer sends
            certificate = x509.load_pem_x509_certificate(tls.certificate.chain_pem.encode())
            usage = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
            assert set(usage) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
            files = tls.files()
            assert files[CA_PATH] == ca.files.ca.read_text()
            assert {CERT_PATH, KEY_PATH} <= set(files)
        specs = {spec.node: spec for spec in container_specs(topology)}
        assert CA_PATH in specs["svc-a-proxy"].files and specs["svc-a-proxy"].tls is not None


def test_envoy_gateway_terminates_tls_and_forwards_h2c_for_grpc() -> None:
    topology = gateway_topology("envoy", tls={"session_tickets": False}, upstream_http2=True, max_concurrent_streams=1)
    assert topology.name == "gateway-envoy-w1-h2-upstream-streams1-tls-ecdsa-p256-notickets"
    assert [(t.name, t.scheme, t.port) for t in topology.targets] == [
        ("direct", "http", 8080),
        ("gateway", "http", 8000),
        ("gateway-tls", "https", 8443),
    ]
    listeners, clusters = _config(topology, "gw")
    assert {name: _port(item) for name, item in listeners.items()} == {"gateway": 8000, "gateway_tls": 8443}
    for listener in listeners.values():
        manager = listener["filter_chains"][0]["filters"][0]["typed_config"]
        assert manager["codec_type"] == "AUTO"  # HTTP/1.1, h2 by ALPN, h2c by its preface
        assert manager["http2_protocol_options"] == {"max_concurrent_streams": 1}
    context = listeners["gateway_tls"]["filter_chains"][0]["transport_socket"]["typed_config"]
    assert context["disable_stateless_session_resumption"] is True  # tickets off
    assert context["disable_stateful_session_resumption"] is False  # the session cache on
    assert "require_client_certificate" not in context
    assert "transport_socket" not in listeners["gateway"]["filter_chains"][0]
    assert _endpoints(clusters["upstream"]) == [("echo", 8080)]
    assert _protocol(clusters["upstream"]) == {"http2_protocol_options": {}}


def test_envoy_gateway_defaults_to_http1_upstreams_and_no_stream_cap() -> None:
    topology = gateway_topology("envoy")
    assert topology.name == "gateway-envoy-w1"
    listeners, clusters = _config(topology, "gw")
    assert set(listeners) == {"gateway"}
    assert "http2_protocol_options" not in listeners["gateway"]["filter_chains"][0]["filters"][0]["typed_config"]
    assert _protocol(clusters["upstream"]) == {"http_protocol_options": {}}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "nginx", "upstream_http2": True}, "built for the Envoy gateway"),
        ({"kind": "haproxy", "max_concurrent_streams": 4}, "built for the Envoy gateway"),
        ({"kind": "envoy", "upstream_keepalive": False}, "always pools upstream connections"),
        ({"kind": "envoy", "max_concurrent_streams": 0}, "max_concurrent_streams must be a positive integer"),
        ({"kind": "envoy", "max_concurrent_streams": True}, "max_concurrent_streams must be a positive integer"),
    ],
)
def test_envoy_gateway_options_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gateway_topology(**kwargs)


def test_mutual_tls_on_nginx_and_haproxy_and_the_driver_presents_a_client_certificate() -> None:
    with SessionCA() as ca:
        nginx = with_certificates(gateway_topology("nginx", tls={"mutual": True}), lambda: ca)
        text = render_nginx(nginx, nginx.node("gw"))
        assert f"ssl_client_certificate {CA_PATH};" in text and "ssl_verify_client on;" in text
        haproxy = with_certificates(gateway_topology("haproxy", tls={"mutual": True}), lambda: ca)
        assert f"verify required ca-file {CA_PATH}" in render_haproxy(haproxy, haproxy.node("gw"))
        options = trust_for(nginx, nginx.target("gateway-tls"))
        assert options is not None
        assert (options.ca, options.cert, options.key) == (
            str(ca.files.ca),
            str(ca.files.client_cert),
            str(ca.files.client_key),
        )
        one_way = with_certificates(gateway_topology("nginx", tls=True), lambda: ca)
        assert "ssl_verify_client" not in render_nginx(one_way, one_way.node("gw"))
        trusted = trust_for(one_way, one_way.target("gateway-tls"))
        assert trusted is not None and trusted.cert is None


def test_a_sidecar_whose_peer_serves_tls_without_its_own_certificate_is_refused() -> None:
    """The mesh check is the topology's, before any rendering: a sidecar with nothing to present."""
    mesh = sidecar_chain_topology(sidecars=True, mtls=True)
    without = [replace(n, params={}) if n.name == "svc-b-proxy" else n for n in mesh.nodes]
    with pytest.raises(ValueError, match=r"'svc-b-proxy': its peer 'svc-a-proxy' serves TLS on 15443, so it needs"):
        replace(mesh, nodes=tuple(without)).validate()
