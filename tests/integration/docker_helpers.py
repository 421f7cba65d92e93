"""Shared helpers of the Docker integration tests (requests, driver runs, leftover checks)."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from docker import DockerClient

from pytest_netperf.engine import labels as L
from pytest_netperf.errors import NetperfError
from pytest_netperf.images.inputs import driver_binary
from pytest_netperf.runtime.commands import CommandRunner

#: A tiny bounded load: 2 connections, 0.2 s warmup, 0.5 s measured.
SHORT_LOAD = ["-c", "2", "-w", "200ms", "-d", "500ms", "--timeout", "2s", "--json"]


def interruptible() -> None:
    """``preexec_fn`` of a child that a test interrupts with SIGINT: a job started in the
    background by a non-interactive shell (CI harnesses do this) inherits SIGINT ignored,
    and Python then installs no KeyboardInterrupt handler in the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def get(url: str, path: str | None = None, host_header: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """One GET from the host: (status, lower-cased headers, body)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    headers = {"Host": host_header} if host_header else {}
    try:
        connection.request("GET", path or parts.path or "/", headers=headers)
        response = connection.getresponse()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    finally:
        connection.close()


def run_driver(url: str, runner: CommandRunner | None = None) -> dict:
    """Run ``netperf-driver http`` briefly against ``url`` (on the host, or via ``runner``).

    Returns the JSON summary. Skips when the driver's http mode is not built yet.
    """
    argv = ["netperf-driver", "http", *SHORT_LOAD, url]
    if runner is None:
        try:
            binary = str(driver_binary())
        except NetperfError as exc:
            pytest.skip(str(exc))
        done = subprocess.run([binary, *argv[1:]], capture_output=True, text=True, timeout=30)
        returncode, stdout, stderr = done.returncode, done.stdout, done.stderr
    else:
        outcome = runner.run(argv, timeout_s=30)
        returncode, stdout, stderr = outcome.returncode, outcome.stdout, outcome.stderr
    if "not built yet" in stderr:
        pytest.skip(f"netperf-driver http is not built yet: {stderr.strip()}")
    assert returncode == 0, f"driver failed ({returncode}): {stderr[-2000:]}"
    return json.loads(stdout)["summary"]


def leftovers(client: DockerClient, label: str) -> list[str]:
    """Names of containers and networks carrying ``label`` (``key`` or ``key=value``)."""
    filters = {"label": [label]}
    names = [f"container {c.name}" for c in client.containers.list(all=True, filters=filters, ignore_removed=True)]
    names += [f"network {n.name}" for n in client.networks.list(filters=filters)]
    return names


def assert_no_leftovers(temp: Path, *topologies: str) -> None:
    """No container or network of ``topologies``, and no test CA folder in ``temp`` (the run's
    TMPDIR), remain after a run."""
    from pytest_netperf.engine.client import docker_client

    client = docker_client()
    try:
        remaining = [name for topology in topologies for name in leftovers(client, f"{L.TOPOLOGY}={topology}")]
    finally:
        client.close()
    assert remaining == []
    assert list(temp.glob("netperf-test-ca-*")) == [], "the test CA's files were left behind"


def session_leftovers(client: DockerClient, session_id: str) -> list[str]:
    """Leftovers of one session."""
    return leftovers(client, f"{L.SESSION}={session_id}")


def skip_without_compose_stack_parts() -> None:
    """Skip (with the reason) unless Docker, a Compose implementation and the local echo and
    nginx images are all here: what a gate over the team_gateway example needs."""
    from pytest_netperf.engine.client import docker_client
    from pytest_netperf.errors import ComposeUnavailable
    from pytest_netperf.images.roles import LOCAL_IMAGES
    from pytest_netperf.runtime.compose.cli import find_compose

    try:
        client = docker_client()
        find_compose()
    except (ComposeUnavailable, NetperfError) as exc:
        pytest.skip(str(exc))
    missing = [tag for tag in (LOCAL_IMAGES["echo"], LOCAL_IMAGES["nginx"]) if not client.images.list(name=tag)]
    if missing:
        pytest.skip(f"local images missing: {', '.join(missing)}; build them with `netperf images build`")


def skip_without_images(*roles: str) -> None:
    """Skip (with the reason) unless Docker runs and the images of ``roles`` resolve."""
    from pytest_netperf.engine.client import docker_client
    from pytest_netperf.errors import ImageMissingError, RuntimeUnavailable
    from pytest_netperf.images.resolve import resolve_image

    try:
        client = docker_client()
        for role in roles:
            resolve_image(role, None, client)
    except (RuntimeUnavailable, ImageMissingError) as exc:
        pytest.skip(str(exc))


def git(repo: Path, *args: str) -> str:
    """``git args`` in ``repo`` as a CI bot (its own identity); stdout, CalledProcessError on failure."""
    done = subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=CI", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


#: The example team stack (an nginx edge in front of the echo app), copied into test repositories.
TEAM_GATEWAY = Path(__file__).resolve().parents[2] / "examples" / "team_gateway"
#: The pytest.ini of such a repository: the official nginx image mapped to the offline build.
TEAM_INI = """
[pytest]
netperf_images =
    nginx:1.27=pytest-netperf/nginx:local
"""


def stack_repo(path: Path, stack: Path, gate: str, ini: str) -> Path:
    """A git repository at ``path`` whose ``main`` holds a copy of the Compose stack folder
    ``stack`` (its tests left out), ``gate`` as test_gate.py and ``ini`` as pytest.ini; returns
    the copied stack's folder (change its files as a pull request would)."""
    import shutil

    copied = path / stack.name
    shutil.copytree(stack, copied, ignore=shutil.ignore_patterns("test_*.py"))
    (path / "pytest.ini").write_text(ini)
    (path / "test_gate.py").write_text(gate)
    (path / ".gitignore").write_text(".netperf/\nresults.json\n__pycache__/\n")
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    return copied


def team_repo(path: Path, gate: str) -> Path:
    """A git repository at ``path`` whose ``main`` holds the team_gateway stack and ``gate`` as
    test_gate.py; returns the edge's nginx config (change it as a pull request would)."""
    return stack_repo(path, TEAM_GATEWAY, gate, TEAM_INI) / "nginx" / "edge.conf"


def skip_without_counting_image(image: str) -> None:
    """Skip (with the reason) unless the counting variant of ``image`` (valgrind, strace) exists or can be built."""
    from pytest_netperf.engine.client import docker_client
    from pytest_netperf.images.counting_image import counting_image
    from pytest_netperf.images.rootfs import ImageBuildError

    try:
        counting_image(docker_client(), image, "integration test")
    except (ImageBuildError, NetperfError) as exc:
        pytest.skip(f"no counting image of {image}: {exc}")
