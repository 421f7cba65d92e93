"""The ``netperf_compose`` fixture end to end: a gate over a team's Compose stack, reuse of a stack
within the session, removal at session end, and a skip with the reason without Compose.

Each run is a real pytest subprocess with real containers (nginx under the image mapping
``nginx:1.27=pytest-netperf/nginx:local`` in front of the echo app); loads are 3 rounds of
0.5 s at 200 requests/s.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from pytester_helpers import json_report, netperf_args

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import ComposeUnavailable, NetperfError
from pytest_netperf.images.roles import LOCAL_IMAGES
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.compose.cli import find_compose

pytestmark = pytest.mark.docker

FAST = netperf_args(
    3, 3, "0.5", "0.2", "--netperf-max-lag=100", "--netperf-image=nginx:1.27=pytest-netperf/nginx:local", "-rs"
)
COMPOSE = """\
services:
  edge:
    image: nginx:1.27
    command: ["nginx", "-g", "daemon off;", "-c", "/etc/netperf/nginx.conf"]
    volumes:
      - ./nginx/edge.conf:/etc/netperf/nginx.conf:ro
    depends_on: [app]
    expose: ["80"]
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
    listen 80;
    location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
"""
GATE = """\
import json
import pytest

SEEN = {}

@pytest.mark.netperf("p50 < 200ms", "error_rate <= 0%")
def test_gate_over_the_team_stack(netperf, netperf_compose, netperf_docker):
    stack = netperf_compose("infra/docker-compose.yml")
    netperf.measure(stack.endpoint("edge", path="/api"), rate=200, connections=2)
    SEEN["gate"] = stack.project
    with open("seen.json", "w") as handle:
        json.dump({"session": netperf_docker.session_id, **SEEN}, handle)

def test_same_arguments_same_stack(netperf_compose, netperf_docker):
    stack = netperf_compose("infra/docker-compose.yml")
    assert stack.project == SEEN["gate"]
    only_app = netperf_compose("infra/docker-compose.yml", services=["app"])
    assert only_app.project != stack.project and only_app.services == ("app",)
    assert netperf_compose("infra/docker-compose.yml", services=["app"]) is only_app
    SEEN["app"] = only_app.project
    with open("seen.json", "w") as handle:
        json.dump({"session": netperf_docker.session_id, **SEEN}, handle)
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
    (pytester.path / "infra" / "nginx").mkdir(parents=True)
    (pytester.path / "infra" / "docker-compose.yml").write_text(COMPOSE)
    (pytester.path / "infra" / "nginx" / "edge.conf").write_text(NGINX_CONF)


def test_gate_over_a_compose_stack_reuses_it_and_removes_it_at_session_end(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # the inner session is no xdist worker
    _repo(pytester)
    pytester.makepyfile(test_team=GATE)
    result = pytester.runpytest_subprocess(*FAST, "--netperf-json=results.json")
    seen = json.loads((pytester.path / "seen.json").read_text())
    client = docker_client()
    try:
        result.stdout.fnmatch_lines(["*netperf docker topology startup:*compose:infra*"])
        assert result.ret == 0, result.stdout.str()[-3000:]
        rows = json_report(pytester)["rows"]
        assert {(r["budget"], r["verdict"]) for r in rows} == {("p50 < 200ms", "PASS"), ("error_rate <= 0%", "PASS")}
        assert {r["where"] for r in rows} == {"host"}
        assert seen["gate"].startswith(f"netperf-{seen['session']}-main-infra-")
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


def test_without_a_compose_binary_the_test_skips_with_the_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _repo(pytester)
    pytester.makepyfile(
        test_team="""
        def test_stack(netperf_compose):
            netperf_compose("infra/docker-compose.yml")
        """
    )
    monkeypatch.setenv("NETPERF_COMPOSE", "/nonexistent/compose")
    result = pytester.runpytest_subprocess(*FAST)
    result.stdout.fnmatch_lines(
        ["*SKIPPED*no Compose implementation found*NETPERF_COMPOSE='/nonexistent/compose'*not found on PATH*"]
    )
    assert result.ret == 0


def test_a_bad_stack_is_an_error_in_the_test_that_asked_for_it(pytester: pytest.Pytester) -> None:
    _repo(pytester)
    (pytester.path / "infra" / "broken.yml").write_text("services:\n  app:\n    imagee: x\n")
    pytester.makepyfile(
        test_team=textwrap.dedent(
            """
            import pytest
            from pytest_netperf.errors import ComposeFileError

            def test_broken(netperf_compose):
                with pytest.raises(ComposeFileError, match="infra/broken.yml"):
                    netperf_compose("infra/broken.yml")

            def test_missing(netperf_compose):
                netperf_compose("infra/nope.yml")
            """
        )
    )
    result = pytester.runpytest_subprocess(*FAST)
    result.stdout.fnmatch_lines(["*ComposeFileError: Compose file */infra/nope.yml does not exist*"])
    result.stdout.fnmatch_lines(["*1 failed, 1 passed*"])
