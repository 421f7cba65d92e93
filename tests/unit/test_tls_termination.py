"""TLS termination on the built-in gateways: the model, the nginx and HAProxy renderings, the
certificates the runtime mints and what the gate hands the driver."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pytest_netperf import Node, Target, TlsTermination, Topology, gateway_topology
from pytest_netperf.measure.targets import target_tls
from pytest_netperf.runtime.endpoints import Endpoint
from pytest_netperf.runtime.test_ca import SessionCA
from pytest_netperf.runtime.tls_nodes import trust_for, with_certificates
from pytest_netperf.tls_options import TlsOptions
from pytest_netperf.topology.render import container_specs, render_haproxy, render_nginx
from pytest_netperf.topology.tls import BUNDLE_PATH, CERT_PATH, KEY_PATH


def _gateway(kind: str, **tls: object) -> Topology:
    return gateway_topology(kind, tls=tls or True)  # type: ignore[arg-type]


def test_a_tls_gateway_has_an_https_target_named_for_its_certificate() -> None:
    topology = _gateway("nginx", key_type="rsa-2048", session_cache=False, session_tickets=False)
    assert topology.name == "gateway-nginx-w1-tls-rsa-2048-nocache-notickets"
    target = topology.target("gateway-tls")
    assert (target.scheme, target.node, target.port, target.host_header) == ("https", "gw", 8443, "gw")
    assert topology.node("gw").ports == (8000, 8443)
    assert [t.name for t in gateway_topology("nginx").targets] == ["direct", "gateway"]


def test_nginx_listens_with_tls_beside_cleartext_and_keeps_the_upstream_cleartext() -> None:
    topology = _gateway("nginx")
    text = render_nginx(topology, topology.node("gw"))
    assert "listen 8000 backlog=4096;" in text and "listen 8443 ssl backlog=4096;" in text
    assert f"ssl_certificate {CERT_PATH};" in text and f"ssl_certificate_key {KEY_PATH};" in text
    assert "ssl_protocols TLSv1.2 TLSv1.3;" in text
    assert re.search(r"ssl_session_cache shared:\w+:10m;", text) and "ssl_session_tickets on;" in text
    assert "proxy_pass http://backend;" in text and "server echo:8080;" in text


@pytest.mark.parametrize(
    ("cache", "tickets", "cache_line", "tickets_line"),
    [
        (False, False, "ssl_session_cache off;", "ssl_session_tickets off;"),
        (True, False, "ssl_session_cache shared:netperf_tls:10m;", "ssl_session_tickets off;"),
        (False, True, "ssl_session_cache off;", "ssl_session_tickets on;"),
    ],
)
def test_nginx_session_cache_and_tickets_switch(cache: bool, tickets: bool, cache_line: str, tickets_line: str) -> None:
    topology = _gateway("nginx", session_cache=cache, session_tickets=tickets)
    text = render_nginx(topology, topology.node("gw"))
    assert cache_line in text and tickets_line in text


def test_nginx_without_tls_renders_no_ssl_line() -> None:
    topology = gateway_topology("nginx")
    assert "ssl" not in render_nginx(topology, topology.node("gw"))


def test_haproxy_gateway_terminates_tls_with_its_bundle() -> None:
    topology = _gateway("haproxy", port=9443)
    text = render_haproxy(topology, topology.node("gw"))
    assert "bind :8000\n" in text
    assert f"bind :9443 ssl crt {BUNDLE_PATH} alpn http/1.1 ssl-min-ver TLSv1.2\n" in text
    assert "tune.ssl.cachesize" not in text and "no-tls-tickets" not in text
    assert "server echo echo:8080 check" in text, "the upstream stays cleartext"
    off = _gateway("haproxy", session_cache=False, session_tickets=False)
    text = render_haproxy(off, off.node("gw"))
    assert "tune.ssl.cachesize 0" in text and text.count("no-tls-tickets") == 1


def test_haproxy_gateway_without_upstream_keepalive_closes_server_connections() -> None:
    topology = gateway_topology("haproxy", upstream_keepalive=False)
    text = render_haproxy(topology, topology.node("gw"))
    assert "option http-server-close" in text and topology.name == "gateway-haproxy-w1-no-upstream-keepalive"


@pytest.mark.parametrize(
    ("tls", "message"),
    [
        ({"key_type": "dsa"}, r"key_type 'dsa' is not one of ecdsa-p256, rsa-2048, rsa-4096"),
        ({"session_tickets": "no"}, r"session_tickets must be True or False"),
        ({"port": 0}, r"port must be an integer in 1..65535"),
        ({"ciphers": "x"}, r"unknown TLS setting\(s\) ciphers"),
    ],
)
def test_bad_tls_settings_name_the_setting(tls: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gateway_topology("nginx", tls=tls)


def test_kong_and_other_kinds_cannot_terminate_tls() -> None:
    with pytest.raises(ValueError, match="not Kong"):
        gateway_topology("kong", tls=True)
    echo = Node("echo", "echo", 8080, params={"tls": True})
    with pytest.raises(ValueError, match=r"a echo node cannot terminate TLS"):
        Topology("t", (echo,), ()).validate()
    edge = Node("edge", "nginx", 80, upstreams=("echo",), config="edge.conf", params={"tls": True})
    with pytest.raises(ValueError, match=r"the team's own config \(config=\) sets up its TLS itself"):
        Topology("t", (Node("echo", "echo", 8080), edge), ()).validate()


def test_an_https_target_must_enter_a_tls_port_from_the_host() -> None:
    topology = _gateway("nginx")
    cleartext = replace(topology, targets=(Target("x", "gw", 8000, scheme="https"),))
    with pytest.raises(ValueError, match=r"node 'gw' serves no TLS on port 8000 \(it serves TLS on 8443\)"):
        cleartext.validate()
    in_network = replace(topology, targets=(Target("x", "gw", 8443, scheme="https", via_dns=True),))
    with pytest.raises(ValueError, match="measured from the host, not with via_dns"):
        in_network.validate()


def test_specs_need_the_minted_certificate() -> None:
    with pytest.raises(ValueError, match="no certificate minted yet"):
        container_specs(_gateway("nginx"))


@pytest.mark.parametrize(
    ("key_type", "key_class", "size"),
    [("ecdsa-p256", ec.EllipticCurvePublicKey, 256), ("rsa-2048", rsa.RSAPublicKey, 2048)],
)
def test_minted_certificates_carry_the_key_type_and_the_node_names(key_type: str, key_class: type, size: int) -> None:
    with SessionCA() as ca:
        topology = with_certificates(_gateway("nginx", key_type=key_type), lambda: ca)
        tls = topology.node("gw").tls
        assert tls is not None and tls.certificate is not None
        certificate = x509.load_pem_x509_certificate(tls.certificate.chain_pem.encode())
        public = certificate.public_key()
        assert isinstance(public, key_class) and public.key_size == size  # type: ignore[attr-defined]
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert "gw" in names.get_values_for_type(x509.DNSName)
        issuer = x509.load_pem_x509_certificate(ca.files.ca.read_bytes())
        certificate.verify_directly_issued_by(issuer)
        spec = next(s for s in container_specs(topology) if s.node == "gw")
        assert spec.files[CERT_PATH] == tls.certificate.chain_pem and spec.files[KEY_PATH].startswith("-----BEGIN")
        assert spec.files[BUNDLE_PATH].startswith(tls.certificate.chain_pem.rstrip("\n"))
        assert spec.tls == tls
        assert trust_for(topology, topology.target("gateway-tls")) == TlsOptions(ca=str(ca.files.ca))
        assert trust_for(topology, topology.target("gateway")) is None
        assert "PRIVATE KEY" not in repr(tls)


def test_rsa_4096_is_minted_too() -> None:
    with SessionCA() as ca:
        certificate = ca.issue_server(("edge",), "rsa-4096")
        public = x509.load_pem_x509_certificate(certificate.chain_pem.encode()).public_key()
        assert isinstance(public, rsa.RSAPublicKey) and public.key_size == 4096
        with pytest.raises(ValueError, match="key_type 'rsa-1024'"):
            ca.issue_server(("edge",), "rsa-1024")


def test_a_topology_without_tls_asks_for_no_ca() -> None:
    topology = gateway_topology("nginx")

    def no_ca() -> SessionCA:
        raise AssertionError("no CA should be made")

    assert with_certificates(topology, no_ca) is topology


def test_the_test_options_go_in_front_of_the_endpoints_ca() -> None:
    endpoint = Endpoint("https://10.0.0.2:8443/", None, "host", tls=TlsOptions(ca="/tmp/ca.pem"))
    assert target_tls(endpoint, None) == TlsOptions(ca="/tmp/ca.pem")
    given = TlsOptions(resumption=False, version="1.2")
    assert target_tls(endpoint, given) == TlsOptions(ca="/tmp/ca.pem", resumption=False, version="1.2")
    assert target_tls(endpoint, TlsOptions(insecure=True)) == TlsOptions(insecure=True)
    assert target_tls(endpoint, TlsOptions(ca="/other.pem")) == TlsOptions(ca="/other.pem")
    assert target_tls("https://10.0.0.2:8443/", given) == given
    loose = Endpoint("https://10.0.0.2:8443/", None, "host", tls=TlsOptions(insecure=True, version="1.3"))
    assert target_tls(loose, TlsOptions(ca="/ca.pem")) == TlsOptions(ca="/ca.pem", version="1.3")
    mutual = TlsOptions(cert="/client.pem", key="/client.key")
    assert target_tls(endpoint, mutual) == TlsOptions(ca="/tmp/ca.pem", cert="/client.pem", key="/client.key")
    assert target_tls(Endpoint("http://10.0.0.2:8000/", None, "host"), None) is None


def test_termination_of_accepts_true_a_dict_or_itself() -> None:
    assert TlsTermination.of(True) == TlsTermination()
    made = TlsTermination(key_type="rsa-4096", session_cache=False)
    assert TlsTermination.of(made) is made
    assert made.describe() == "TLS on 8443: rsa-4096, session cache off, tickets on"
    with pytest.raises(ValueError, match="tls must be True, a TlsTermination or a dict"):
        TlsTermination.of("yes")
