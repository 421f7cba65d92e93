"""``netperf init`` for a proxy that listens with TLS only: its TLS ports (Compose and its
config), the CA and names read from its mounted certificates, and the HTTPS gates rendered for
it (with a handshake-per-request test) instead of refusing it.

The end-to-end run on a real Compose project is tests/integration/test_starter_compose.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import trustme

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.cli.init import _tls_ca
from pytest_netperf.errors import NetperfError
from pytest_netperf.starter import render
from pytest_netperf.starter.routes import haproxy, nginx
from pytest_netperf.starter.survey import classify
from pytest_netperf.starter.tls import check_ca_file, find_trust

NGINX_TLS = """
server {
    listen 9443 ssl;
    listen [::]:9443 ssl http2;
    server_name shop.example.test;
    ssl_certificate /etc/nginx/certs/edge.pem;
    location / { proxy_pass http://app; }
}
server { listen 8081; location /status { stub_status; } }
"""


def _certs(folder: Path, names: tuple[str, ...] = ("shop.example.test",)) -> Path:
    """A CA and a server certificate (with its key) in ``folder``, as a team keeps them."""
    folder.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    leaf = ca.issue_cert(*names)
    ca.cert_pem.write_to_path(str(folder / "ca.crt"))
    leaf.cert_chain_pems[0].write_to_path(str(folder / "server.pem"))
    leaf.private_key_pem.write_to_path(str(folder / "server.key"))
    return folder / "ca.crt"


def test_tls_ports_of_nginx_and_haproxy_configs() -> None:
    assert nginx.tls_ports(NGINX_TLS) == (9443,)
    assert nginx.tls_ports("server { listen 80; }") == ()
    config = "frontend fe\n    bind :80\n    bind *:8443 ssl crt /etc/ssl/edge.pem\nbackend be\n    server a a:80\n"
    assert haproxy.tls_ports(config) == (8443,)


def test_find_trust_reads_the_ca_and_the_server_names_of_mounted_certificates(tmp_path: Path) -> None:
    ca = _certs(tmp_path / "certs", ("shop.example.test", "*.example.test", "api.example.test"))
    (tmp_path / "certs" / "notes.pem").write_text("not a certificate")
    trust = find_trust([tmp_path / "certs", tmp_path / "missing"])
    assert trust.ca == ca
    assert trust.names == ("shop.example.test", "api.example.test")  # wildcards left out
    assert find_trust([tmp_path / "missing"]).ca is None
    assert check_ca_file(ca) is None
    assert "not a PEM certificate" in str(check_ca_file(tmp_path / "certs" / "server.key"))
    assert "no such file" in str(check_ca_file(tmp_path / "nope.pem"))


def test_a_tls_only_proxy_is_gated_over_https_on_its_tls_port(tmp_path: Path) -> None:
    (tmp_path / "nginx").mkdir()
    (tmp_path / "nginx" / "edge.conf").write_text(NGINX_TLS.replace("server { listen 8081;", "server { listen 9090;"))
    ca = _certs(tmp_path / "certs")
    config = {
        "services": {
            "edge": {
                "image": "nginx:1.27",
                "expose": ["9443"],  # not a usual TLS port: its config says it listens with ssl
                "volumes": [f"{tmp_path}/nginx/edge.conf:/etc/nginx/conf.d/default.conf:ro", f"{tmp_path}/certs:/c:ro"],
            },
            "both": {"image": "haproxy:2.8", "expose": ["443", "80"]},
        }
    }
    stack = classify(config, tmp_path / "compose.yml")
    by_name = {s.name: s for s in stack.services}
    edge, both = by_name["edge"], by_name["both"]
    assert (edge.scheme, edge.gate_port, edge.http_port, edge.tls_ports) == ("https", 9443, None, (9443,))
    assert edge.trust.ca == ca and edge.trust.names == ("shop.example.test",)
    assert (both.scheme, both.gate_port) == ("http", 80)  # plain HTTP beside TLS: gated as before
    assert [s.name for s in stack.proxies] == ["both", "edge"]

    text = render.test_module(render.StarterPlan(stack, "compose.yml", root=tmp_path))
    module = ast.parse(text)
    tests = {n.name: n for n in module.body if isinstance(n, ast.FunctionDef)}
    assert 'EDGE_TLS = {"ca": "certs/ca.crt"}' in text  # relative to the Compose file's folder
    endpoint = 'stack.endpoint("edge", port=9443, path="/", host="shop.example.test", scheme="https", tls=EDGE_TLS)'
    assert f"netperf.measure({endpoint}, connections=32)" in text
    assert f"netperf.measure({endpoint}, connections=8, rate=500)" in text
    assert 'stack.endpoint("both", port=80, path="/")' in text
    handshake = tests["test_edge_handshake_cost"]
    marks = [ast.unparse(d) for d in handshake.decorator_list]
    assert "pytest.mark.parametrize('resumption', [True, False], ids=['resumed', 'full'])" in marks
    budgets = [a.value for d in handshake.decorator_list if "netperf" in ast.unparse(d) for a in d.args]  # type: ignore[attr-defined]
    assert budgets == [f"instructions_per_request[edge] <= {render.HANDSHAKE_INSTRUCTIONS}x base", "errors == 0"]
    for budget in budgets:
        parse_budget(budget)
    call = ast.unparse(handshake.body[-1])
    assert "new_connection_per_request=True" in call and "tls={'resumption': resumption}" in call
    nested = render.test_module(render.StarterPlan(stack, "deploy/compose.yml", root=tmp_path))
    assert 'EDGE_TLS = {"ca": "../certs/ca.crt"}' in nested


def test_without_a_ca_the_gates_accept_the_certificate_with_a_todo_and_tls_ca_names_one(tmp_path: Path) -> None:
    config = {"services": {"edge": {"image": "nginx:1.27", "ports": ["8443:443"]}}}
    stack = classify(config, tmp_path / "compose.yml")
    text = render.test_module(render.StarterPlan(stack, "compose.yml", root=tmp_path))
    assert 'EDGE_TLS = {"insecure": True}' in text
    comment = " ".join(line.removeprefix("#: ") for line in text.splitlines() if line.startswith("#: "))
    assert "TODO: no CA certificate was found among the files edge mounts" in comment
    assert "`netperf init --tls-ca path/to/ca.pem --force`" in comment
    assert "tls={'insecure': True, 'resumption': resumption}" in ast.unparse(ast.parse(text))
    named = render.test_module(render.StarterPlan(stack, "compose.yml", tls_ca="pki/root.pem", root=tmp_path))
    assert 'EDGE_TLS = {"ca": "pki/root.pem"}' in named
    said = " ".join(line.removeprefix("#: ") for line in named.splitlines() if line.startswith("#: "))
    assert "named with --tls-ca" in said and "TODO: no host name was found" in said
    ast.parse(named)


def test_tls_ca_option_must_be_a_certificate_inside_the_repository(tmp_path: Path) -> None:
    ca = _certs(tmp_path / "repo" / "pki")
    root = tmp_path / "repo"
    assert _tls_ca(root, Path("pki/ca.crt")) == "pki/ca.crt"
    assert _tls_ca(root, ca) == "pki/ca.crt"
    assert _tls_ca(root, None) is None
    with pytest.raises(NetperfError, match="not a PEM certificate"):
        _tls_ca(root, Path("pki/server.key"))
    outside = _certs(tmp_path / "elsewhere")
    with pytest.raises(NetperfError, match="outside"):
        _tls_ca(root, outside)


def test_routes_of_a_tls_only_proxy_are_requested_with_the_name_its_certificate_carries(tmp_path: Path) -> None:
    (tmp_path / "edge.conf").write_text("server { listen 443 ssl; location / {} location /api/ {} }")
    _certs(tmp_path / "certs")
    volumes = [f"{tmp_path}/edge.conf:/etc/nginx/conf.d/default.conf:ro", f"{tmp_path}/certs:/c:ro"]
    config = {"services": {"edge": {"image": "nginx:1.27", "expose": ["443"], "volumes": volumes}}}
    text = render.test_module(render.StarterPlan(classify(config, tmp_path / "compose.yml"), "compose.yml"))
    assert 'pytest.param("/api/", "shop.example.test", id="/api/"),' in text  # SNI: never the bare address
    assert 'path=path, host=host, scheme="https", tls=EDGE_TLS)' in text
    ast.parse(text)
