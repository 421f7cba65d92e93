"""A team's Compose stack, run by the real Compose implementation, as a gate target.

Stacks are written into temporary folders the way a team's repository holds them (a
docker-compose.yml, an nginx config file mounted as a volume, a Dockerfile). nginx runs
from the local image through an image mapping (``nginx:1.27=pytest-netperf/nginx:local``)
with an explicit command and config path, so the tests do not depend on the image's
defaults. Every test checks that nothing of its session is left afterwards. Loads are
bounded (the driver's 0.7 s run of docker_helpers.SHORT_LOAD).
"""

from __future__ import annotations

import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from docker import DockerClient
from docker_helpers import get, run_driver

from pytest_netperf.engine import labels as L
from pytest_netperf.errors import (
    ComposeFileError,
    ComposeStartError,
    ComposeUnavailable,
    ComposeUsageError,
    ImageMissingError,
)
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.compose.cli import ComposeCli, find_compose
from pytest_netperf.runtime.compose.launcher import ComposeLauncher, StackSpec
from pytest_netperf.runtime.compose.stack import ComposeStack
from pytest_netperf.runtime.docker import DockerRuntime

pytestmark = pytest.mark.docker

MAPPING = {"nginx:1.27": "pytest-netperf/nginx:local"}
NGINX_CONF = """\
worker_processes 1;
events { worker_connections 1024; }
http {
  access_log off;
  upstream app { server app:8080; keepalive 16; }
  server {
    listen 80;
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      add_header X-Edge edge always;
    }
  }
}
"""
STACK = """\
services:
  edge:
    image: nginx:1.27
    command: ["nginx", "-g", "daemon off;", "-c", "/etc/netperf/nginx.conf"]
    volumes:
      - ./nginx/edge.conf:/etc/netperf/nginx.conf:ro
      - cache:/var/cache/netperf
    depends_on: [app]
    expose: ["80"]
    cpuset: "0"
  app:
    image: pytest-netperf/echo:local
    command: ["netperf-driver", "echo", "--listen", "0.0.0.0:8080", "--id", "app"]
    expose: ["8080"]
volumes:
  cache: {}
"""
BASE = "pytest-netperf/base:bookworm"
ECHO = "pytest-netperf/echo:local"


def write_stack(folder: Path, compose: str, files: dict[str, str] | None = None) -> Path:
    """A repository-like folder: docker-compose.yml plus ``files`` (relative path -> text)."""
    for relative, text in (files or {}).items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    compose_file = folder / "docker-compose.yml"
    compose_file.write_text(textwrap.dedent(compose))
    return compose_file


def everything_of(client: DockerClient, label: str) -> list[str]:
    """Containers, networks, volumes and images carrying ``label``."""
    filters = {"label": [label]}
    names = [f"container {c.name}" for c in client.containers.list(all=True, filters=filters, ignore_removed=True)]
    names += [f"network {n.name}" for n in client.networks.list(filters=filters)]
    names += [f"volume {v.name}" for v in client.volumes.list(filters=filters)]
    names += [f"image {i.tags or i.short_id}" for i in client.images.list(filters=filters)]
    return names


@pytest.fixture(scope="module")
def compose_cli() -> ComposeCli:
    try:
        return find_compose()
    except ComposeUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def launcher(netperf_docker: DockerRuntime, compose_cli: ComposeCli) -> Iterator[ComposeLauncher]:
    """A launcher with a session of its own: after the test nothing of that session may remain."""
    session = f"cmp{uuid.uuid4().hex[:6]}"
    yield ComposeLauncher(
        compose_cli, netperf_docker.client, session, image_overrides=MAPPING, driver_image=ECHO, ready_timeout_s=60
    )
    left = everything_of(netperf_docker.client, f"{L.SESSION}={session}")
    clean_session(session, netperf_docker.client)
    assert not left, f"left behind by session {session}: {left}"


@pytest.fixture(scope="module")
def team_stack(
    netperf_docker: DockerRuntime, compose_cli: ComposeCli, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ComposeStack]:
    """nginx (mapped image, config file mounted, named volume) in front of the echo app."""
    folder = tmp_path_factory.mktemp("team")
    compose_file = write_stack(folder, STACK, {"nginx/edge.conf": NGINX_CONF})
    session = f"cmp{uuid.uuid4().hex[:6]}"
    launcher = ComposeLauncher(compose_cli, netperf_docker.client, session, image_overrides=MAPPING, driver_image=ECHO)
    stack = launcher.up(StackSpec.build(compose_file, resources={"app": {"cpus": 0.5, "memory": "64m"}}))
    try:
        yield stack
    finally:
        stack.down()
        left = everything_of(netperf_docker.client, f"{L.SESSION}={session}")
        clean_session(session, netperf_docker.client)
        assert not left, f"left behind after down(): {left}"


def test_endpoint_answers_through_the_teams_nginx_config(team_stack: ComposeStack) -> None:
    assert team_stack.services == ("app", "edge")
    endpoint = team_stack.endpoint("edge", port=80, path="/api", host="api.example.com")
    assert endpoint.where == "host" and endpoint.runner is None and endpoint.host_header == "api.example.com"
    assert endpoint.url.endswith(":80/api")
    status, headers, _ = get(endpoint.url, host_header=endpoint.host_header)
    assert (status, headers["x-edge"], headers["x-netperf-echo"]) == (200, "edge", "app")
    assert endpoint.guard() is None
    summary = run_driver(endpoint.url)
    assert summary["ok"] > 0 and summary["non_2xx"] == 0 and not any(summary["errors"].values())
    print(f"{team_stack.project}: up in {team_stack.startup_s:.2f}s {team_stack.timings}")


def test_report_facts_name_the_images_and_limits_really_used(team_stack: ComposeStack) -> None:
    facts = team_stack.endpoint("edge").facts
    assert facts["images"] == f"app={ECHO}, edge=pytest-netperf/nginx:local (for nginx:1.27)"
    assert "app cpus 0.5, memory 64m" in facts["resources"] and "edge cpuset 0" in facts["resources"]


def test_service_gives_the_containers_with_the_limits_and_labels(
    team_stack: ComposeStack, netperf_docker: DockerRuntime
) -> None:
    (app,) = team_stack.service("app")
    (edge,) = team_stack.service("edge")
    assert app.attrs["HostConfig"]["NanoCpus"] == 500_000_000 and app.attrs["HostConfig"]["Memory"] == 64 * 1024**2
    assert edge.attrs["HostConfig"]["CpusetCpus"] == "0"  # the file's own value
    for container, name in ((app, "app"), (edge, "edge")):
        assert container.labels[L.NETWORK] == team_stack.project and container.labels[L.NODE] == name
        assert container.labels[L.SESSION] and container.labels[L.PID]
    client = netperf_docker.client
    networks = client.networks.list(filters={"label": [f"{L.NETWORK}={team_stack.project}"]})
    assert [n.name for n in networks] == [f"{team_stack.project}_default"]
    volumes = client.volumes.list(filters={"label": [f"{L.NETWORK}={team_stack.project}"]})
    assert [v.name for v in volumes] == [f"{team_stack.project}_cache"]


def test_via_dns_runs_the_driver_in_a_container_on_the_project_network(team_stack: ComposeStack) -> None:
    endpoint = team_stack.endpoint("edge", via_dns=True)
    assert endpoint.url == "http://edge:80/" and endpoint.runner is not None
    assert endpoint.where == f"container on {team_stack.project}_default"
    summary = run_driver(endpoint.url, endpoint.runner)
    assert summary["ok"] > 0 and summary["non_2xx"] == 0


def test_unknown_service_or_port_lists_the_known_ones(team_stack: ComposeStack) -> None:
    with pytest.raises(ComposeUsageError, match=r"unknown service\(s\) 'gateway'; known services: app, edge"):
        team_stack.endpoint("gateway")
    unknown = r"port 8443 is not a known port of service 'edge'.*known ports: 80; it listens on 80$"
    with pytest.raises(ComposeUsageError, match=unknown):
        team_stack.endpoint("edge", port=8443)
    with pytest.raises(ComposeUsageError, match="unknown service"):
        team_stack.service("gateway")
    # a port nobody declared but that answers is accepted
    assert team_stack.endpoint("app", port=8080).url.endswith(":8080/")


def test_a_built_service_runs_and_its_image_goes_at_down(launcher: ComposeLauncher, tmp_path: Path) -> None:
    compose_file = write_stack(
        tmp_path,
        """\
        services:
          web:
            build: ./web
            expose: ["8081"]
        """,
        {
            "web/Dockerfile": f"FROM {BASE}\nCOPY web.conf /etc/netperf/web.conf\n"
            'CMD ["nginx", "-g", "daemon off;", "-c", "/etc/netperf/web.conf"]\n',
            "web/web.conf": "events {}\nhttp { access_log off; server { listen 8081; "
            "location / { return 200 'built\\n'; } } }\n",
        },
    )
    client = launcher.client
    with launcher.up(StackSpec.build(compose_file)) as stack:
        endpoint = stack.endpoint("web", port=8081)
        status, _, body = get(endpoint.url)
        assert (status, body) == (200, b"built\n")
        built = client.images.list(filters={"label": [f"{L.NETWORK}={stack.project}"]})
        assert len(built) == 1 and "(built)" in endpoint.facts["images"]
        assert stack.timings["build"] > 0
    assert client.images.list(filters={"label": [f"{L.NETWORK}={stack.project}"]}) == []


def test_a_declared_port_nothing_listens_on_fails_in_seconds_naming_the_listening_ones(
    launcher: ComposeLauncher, tmp_path: Path
) -> None:
    """The echo image declares 8080 (EXPOSE); this service listens on 9000: asking for 8080
    ends once the listening ports have stayed the same for 5 s, not after the 60 s ready timeout."""
    compose_file = write_stack(
        tmp_path,
        f"""\
        services:
          app:
            image: {ECHO}
            command: ["netperf-driver", "echo", "--listen", "0.0.0.0:9000"]
        """,
    )
    with launcher.up(StackSpec.build(compose_file)) as stack:
        started = time.monotonic()
        with pytest.raises(ComposeUsageError, match=r"listens on 9000, not on port 8080.*endpoint\('app', port=9000\)"):
            stack.endpoint("app", port=8080)
        assert time.monotonic() - started < 15
        assert get(stack.endpoint("app", port=9000).url)[0] == 200


def test_a_healthcheck_is_waited_for(launcher: ComposeLauncher, tmp_path: Path) -> None:
    compose_file = write_stack(
        tmp_path,
        f"""\
        services:
          app:
            image: {ECHO}
            command: ["bash", "-c", "sleep 1 && touch /tmp/ready && exec netperf-driver echo --listen 0.0.0.0:8080"]
            healthcheck:
              test: ["CMD", "test", "-f", "/tmp/ready"]
              interval: 200ms
              retries: 50
        """,
    )
    with launcher.up(StackSpec.build(compose_file)) as stack:
        (app,) = stack.service("app")
        app.reload()
        assert app.attrs["State"]["Health"]["Status"] == "healthy"
        assert get(stack.endpoint("app", port=8080).url)[0] == 200


def test_an_unhealthy_service_is_an_error_with_the_probe_output_and_log_tail(
    launcher: ComposeLauncher, tmp_path: Path
) -> None:
    compose_file = write_stack(
        tmp_path,
        f"""\
        services:
          app:
            image: {BASE}
            command: ["bash", "-c", "echo app-started-here; exec sleep 60"]
            healthcheck:
              test: ["CMD", "sh", "-c", "echo probe-said-no; exit 1"]
              interval: 200ms
              retries: 2
        """,
    )
    with pytest.raises(ComposeStartError) as caught:
        launcher.up(StackSpec.build(compose_file))
    text = str(caught.value)
    assert "service 'app'" in text and "is unhealthy" in text and "probe-said-no" in text
    assert "app-started-here" in text and f"{compose_file}" in text


def test_a_service_that_exits_at_start_gives_its_exit_code_and_log_tail(
    launcher: ComposeLauncher, tmp_path: Path
) -> None:
    compose_file = write_stack(
        tmp_path,
        f"""\
        services:
          app:
            image: {ECHO}
            command: ["netperf-driver", "echo", "--listen", "0.0.0.0:8080"]
          broken:
            image: {BASE}
            command: ["bash", "-c", "echo config-error-line-17 >&2; exit 3"]
        """,
    )
    with pytest.raises(ComposeStartError) as caught:
        launcher.up(StackSpec.build(compose_file))
    text = str(caught.value)
    assert "service 'broken'" in text and "exited at start with exit code 3" in text
    assert "config-error-line-17" in text and "last 30 log lines of broken" in text


def test_a_failing_up_quotes_compose(launcher: ComposeLauncher, tmp_path: Path) -> None:
    """The engine refuses to create the container (a device that does not exist): the error
    names the Compose file and quotes what Compose printed. (Host ports cannot make `up` fail:
    the stack runs without publishing them.)"""
    missing = f"/dev/netperf-absent-{uuid.uuid4().hex[:6]}"
    compose_file = write_stack(
        tmp_path,
        f"""\
        services:
          app:
            image: {ECHO}
            command: ["netperf-driver", "echo", "--listen", "0.0.0.0:8080"]
            devices: ["{missing}:/dev/x"]
        """,
    )
    with pytest.raises(ComposeStartError) as caught:
        launcher.up(StackSpec.build(compose_file))
    text = str(caught.value)
    assert "`up` of" in text and str(compose_file) in text and missing in text


def test_a_missing_compose_file_is_named(launcher: ComposeLauncher, tmp_path: Path) -> None:
    missing = tmp_path / "infra" / "docker-compose.yml"
    with pytest.raises(ComposeFileError, match=f"Compose file {missing} does not exist"):
        launcher.up(StackSpec.build(missing))


def test_an_invalid_compose_file_gives_the_file_and_composes_message(launcher: ComposeLauncher, tmp_path: Path) -> None:
    compose_file = write_stack(tmp_path, "services:\n  app:\n    imagee: nginx:1.27\n")
    with pytest.raises(ComposeFileError) as caught:
        launcher.up(StackSpec.build(compose_file))
    text = str(caught.value)
    assert f"invalid Compose file {compose_file}" in text and "imagee" in text
    broken_yaml = write_stack(tmp_path, "services:\n  app: [1\n")
    with pytest.raises(ComposeFileError, match=f"invalid Compose file {broken_yaml}"):
        launcher.up(StackSpec.build(broken_yaml))


def test_an_image_neither_local_nor_pullable_names_service_image_and_fixes(
    launcher: ComposeLauncher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NETPERF_PULL", raising=False)
    compose_file = write_stack(
        tmp_path,
        """\
        services:
          app:
            image: team/not-built-here:1.0
          proxy:
            image: haproxy:2.8
        """,
    )
    with pytest.raises(ImageMissingError) as caught:
        launcher.up(StackSpec.build(compose_file))
    text = str(caught.value)
    assert str(compose_file) in text
    assert "service 'app': image team/not-built-here:1.0 is not present locally" in text
    assert "service 'proxy': image haproxy:2.8" in text
    assert "--netperf-image haproxy:2.8=pytest-netperf/haproxy:local" in text and "`build:`" in text
    assert "docker load" in text


def test_a_failing_build_quotes_the_build_output(launcher: ComposeLauncher, tmp_path: Path) -> None:
    compose_file = write_stack(
        tmp_path,
        "services:\n  web:\n    build: ./web\n",
        {"web/Dockerfile": f"FROM {BASE}\nRUN echo build-step-broke && false\n"},
    )
    with pytest.raises(ComposeStartError) as caught:
        launcher.up(StackSpec.build(compose_file))
    text = str(caught.value)
    assert "building service(s) web" in text and "build-step-broke" in text
    client = docker.from_env()
    try:  # the failed step's intermediate container is not left behind
        left = [
            c
            for c in client.containers.list(all=True, ignore_removed=True)
            if "build-step-broke" in " ".join(c.attrs["Config"]["Cmd"] or [])
        ]
    finally:
        client.close()
    assert left == []


def test_a_stack_with_an_init_service_that_finishes(launcher: ComposeLauncher, tmp_path: Path) -> None:
    compose_file = write_stack(
        tmp_path,
        f"""\
        services:
          init:
            image: {BASE}
            command: ["true"]
          app:
            image: {ECHO}
            command: ["netperf-driver", "echo", "--listen", "0.0.0.0:8080"]
            depends_on:
              init:
                condition: service_completed_successfully
        """,
    )
    try:
        stack = launcher.up(StackSpec.build(compose_file, services=["app"]))
    except ComposeFileError as exc:  # Compose v1 before 1.29 does not know the condition
        pytest.skip(f"this Compose does not support service_completed_successfully: {exc}")
    with stack:
        assert stack.services == ("app", "init") and stack.service("init") == []
        assert get(stack.endpoint("app", port=8080).url)[0] == 200


def test_no_compose_binary_is_said_precisely() -> None:
    with pytest.raises(ComposeUnavailable, match="NETPERF_COMPOSE='/nonexistent/compose'"):
        find_compose({"NETPERF_COMPOSE": "/nonexistent/compose"})


@pytest.fixture(autouse=True)
def _no_stray_override_folders() -> Iterator[None]:
    """Each stack's override folder (named after its project) goes with the stack."""
    before = set(Path(tempfile.gettempdir()).glob("netperf-cmp*"))
    yield
    after = set(Path(tempfile.gettempdir()).glob("netperf-cmp*"))
    assert after <= before, f"override folders left: {sorted(after - before)}"
