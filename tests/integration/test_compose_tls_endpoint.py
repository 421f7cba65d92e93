"""A team's TLS edge in its own Compose stack: ``stack.endpoint("edge", port=443,
scheme="https", host=..., tls={"ca": "certs/ca.pem"})`` measures it with the team's own
certificate, trusting the CA the test names (relative to the Compose project's folder).

The stack is written into the pytester folder as a team's repository holds it: a Compose
file, an nginx config listening with TLS only on 443, and ``certs/`` with a certificate for
``edge.example`` and the CA that signed it, made by this test. nginx runs from the local
image through the image mapping; loads are 3 rounds of 0.5 s at 100 requests/s.
"""

from __future__ import annotations

import json

import pytest
from pytester_helpers import json_report, netperf_args

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import ComposeUnavailable, NetperfError
from pytest_netperf.images.roles import LOCAL_IMAGES
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.compose.cli import find_compose
from pytest_netperf.runtime.test_ca import SessionCA

pytestmark = pytest.mark.docker

FAST = netperf_args(
    3, 3, "0.5", "0.2", "--netperf-max-lag=100", "--netperf-image=nginx:1.27=pytest-netperf/nginx:local", "-rA"
)
COMPOSE = """\
services:
  edge:
    image: nginx:1.27
    command: ["nginx", "-g", "daemon off;", "-c", "/etc/netperf/nginx.conf"]
    volumes:
      - ./nginx/edge.conf:/etc/netperf/nginx.conf:ro
      - ./certs:/etc/netperf/certs:ro
    depends_on: [app]
    expose: ["443"]
  app:
    image: pytest-netperf/echo:local
    command: ["netperf-driver", "echo", "--listen", "0.0.0.0:8080", "--id", "app"]
    expose: ["8080"]
"""
NGINX_CONF = """\
worker_processes 1;
events { worker_connections 256; }
http {
  access_log off;
  upstream app { server app:8080; keepalive 8; }
  server {
    listen 443 ssl;
    ssl_certificate /etc/netperf/certs/edge.pem;
    ssl_certificate_key /etc/netperf/certs/edge.key;
    location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
"""
GATE = """\
import json
import pytest
from pytest_netperf.errors import ComposeUsageError

TRUST = {"ca": "certs/ca.pem"}


@pytest.mark.netperf("errors == 0", "p50 < 200ms")
def test_tls_edge_of_the_team_stack(netperf, netperf_compose, netperf_docker):
    stack = netperf_compose("infra/docker-compose.yml")
    edge = stack.endpoint("edge", port=443, scheme="https", host="edge.example", tls=TRUST)
    assert edge.url.startswith("https://") and edge.url.endswith(":443/")
    with open("seen.json", "w") as handle:
        json.dump({"session": netperf_docker.session_id, "ca": edge.tls.ca}, handle)
    netperf.measure(edge, rate=100, connections=2)


def test_bad_tls_endpoints_name_the_cause(netperf_compose):
    stack = netperf_compose("infra/docker-compose.yml")
    with pytest.raises(ComposeUsageError, match=r"tls ca 'certs/missing.pem' is not a file: .*infra/certs/missing.pem"):
        stack.endpoint("edge", port=443, scheme="https", tls={"ca": "certs/missing.pem"})
    with pytest.raises(ComposeUsageError, match=r"scheme must be 'http' or 'https', got 'h3'"):
        stack.endpoint("edge", port=443, scheme="h3")
    with pytest.raises(ComposeUsageError, match=r"tls= is for scheme='https'"):
        stack.endpoint("edge", port=443, tls=TRUST)
    with pytest.raises(ComposeUsageError, match=r"unknown TLS option\\(s\\) cafile"):
        stack.endpoint("edge", port=443, scheme="https", tls={"cafile": "certs/ca.pem"})
    with pytest.raises(ComposeUsageError, match=r"measured from the host"):
        stack.endpoint("edge", port=443, scheme="https", tls=TRUST, via_dns=True)


@pytest.mark.netperf("errors == 0")
def test_a_name_the_certificate_does_not_carry_is_invalid(netperf, netperf_compose):
    stack = netperf_compose("infra/docker-compose.yml")
    netperf.measure(stack.endpoint("edge", port=443, scheme="https", host="other.example", tls=TRUST), connections=1)
"""


@pytest.fixture(scope="module", autouse=True)
def needs_docker_and_compose() -> None:
    try:
        client = docker_client()
        find_compose()
    except (ComposeUnavailable, NetperfError) as exc:
        pytest.skip(str(exc))
    missing = [tag for tag in (LOCAL_IMAGES["echo"], LOCAL_IMAGES["nginx"]) if not client.images.list(name=tag)]
    if missing:
        pytest.skip(f"local images missing: {', '.join(missing)}; build them with `netperf images build`")


def _repo(pytester: pytest.Pytester) -> None:
    infra = pytester.path / "infra"
    (infra / "nginx").mkdir(parents=True)
    (infra / "certs").mkdir()
    (infra / "docker-compose.yml").write_text(COMPOSE)
    (infra / "nginx" / "edge.conf").write_text(NGINX_CONF)
    with SessionCA() as ca:  # the team's own CA and edge certificate, as a repository would hold them
        certificate = ca.issue_server(("edge.example",), "ecdsa-p256")
        (infra / "certs" / "ca.pem").write_bytes(ca.files.ca.read_bytes())
    (infra / "certs" / "edge.pem").write_text(certificate.chain_pem)
    (infra / "certs" / "edge.key").write_text(certificate.key_pem)


def test_https_endpoint_of_a_compose_stack_trusts_the_teams_ca(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # the inner session is no xdist worker
    _repo(pytester)
    pytester.makepyfile(test_team=GATE)
    result = pytester.runpytest_subprocess(*FAST, "--netperf-json=results.json")
    seen = json.loads((pytester.path / "seen.json").read_text())
    client = docker_client()
    try:
        assert seen["ca"] == str(pytester.path / "infra" / "certs" / "ca.pem")
        rows = {(r["test_id"].split("::")[1], r["budget"]): r for r in json_report(pytester)["rows"]}
        assert rows[("test_tls_edge_of_the_team_stack", "errors == 0")]["verdict"] == "PASS"
        assert rows[("test_tls_edge_of_the_team_stack", "p50 < 200ms")]["verdict"] == "PASS"
        wrong_name = rows[("test_a_name_the_certificate_does_not_carry_is_invalid", "errors == 0")]
        assert wrong_name["verdict"] == "INVALID"
        assert "failed the TLS handshake" in " ".join(wrong_name["notes"]), wrong_name["notes"]
        result.assert_outcomes(passed=2, failed=1)
        left = [
            c.name
            for c in client.containers.list(
                all=True, ignore_removed=True, filters={"label": [f"{L.SESSION}={seen['session']}"]}
            )
        ]
        left += [n.name for n in client.networks.list(filters={"label": [f"{L.SESSION}={seen['session']}"]})]
        assert left == [], f"left after the session ended: {left}"
    finally:
        clean_session(seen["session"], client)
