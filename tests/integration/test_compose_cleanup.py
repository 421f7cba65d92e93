"""Nothing of a Compose stack outlives its session: SIGTERM/SIGINT while it runs or while it
comes up, and a crash (SIGKILL) whose leftovers, volume and built image included, `netperf
clean` lists and the next session removes.

Each case runs a child pytest holding a stack of the echo app, a service built from a
Dockerfile and a named volume; the parent signals it and looks for what carries its
session's label.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient
from docker_helpers import interruptible

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import ComposeUnavailable, RuntimeUnavailable
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.compose.cli import find_compose

pytestmark = pytest.mark.docker

CHILD_READY_S = 180
CHILD_EXIT_S = 60
COMPOSE = """\
services:
  app:
    image: pytest-netperf/echo:local
    command: ["netperf-driver", "echo", "--listen", "0.0.0.0:8080"]
    volumes: ["state:/state"]
  worker:
    build: ./worker
    depends_on: [app]
volumes:
  state: {}
"""
SLOW_COMPOSE = """\
services:
  app:
    image: pytest-netperf/echo:local
    command: ["netperf-driver", "echo", "--listen", "0.0.0.0:8080"]
    volumes: ["state:/state"]
    healthcheck:
      test: ["CMD", "false"]
      interval: 1s
      retries: 1000
volumes:
  state: {}
"""
DOCKERFILE = 'FROM pytest-netperf/base:bookworm\nCMD ["sleep", "infinity"]\n'
HOLDING_TEST = """
import json, os, time

def test_hold(netperf_compose, netperf_docker):
    info = {"pid": os.getpid(), "session": netperf_docker.session_id}
    if os.environ.get("HOLD_BEFORE_UP"):
        with open(MARKER, "w") as handle:
            json.dump(info, handle)
    stack = netperf_compose("stack/docker-compose.yml")
    info["project"] = stack.project
    with open(MARKER + ".tmp", "w") as handle:
        json.dump(info, handle)
    os.replace(MARKER + ".tmp", MARKER)
    time.sleep(90)  # the parent signals us long before this ends
"""
STARTING_TEST = """
def test_start(netperf_docker):
    assert netperf_docker.session_id
"""


@pytest.fixture(scope="module")
def client() -> DockerClient:
    try:
        client = docker_client()
        find_compose()
    except (RuntimeUnavailable, ComposeUnavailable) as exc:
        pytest.skip(str(exc))
    return client


def everything_of(client: DockerClient, session: str) -> list[str]:
    """Containers, networks, volumes and images of ``session``."""
    filters = {"label": [f"{L.SESSION}={session}"]}
    names = [f"container {c.name}" for c in client.containers.list(all=True, filters=filters, ignore_removed=True)]
    names += [f"network {n.name}" for n in client.networks.list(filters=filters)]
    names += [f"volume {v.name}" for v in client.volumes.list(filters=filters)]
    names += [f"image {i.tags or i.short_id}" for i in client.images.list(filters=filters)]
    return names


class Child:
    """A child pytest holding a Compose stack."""

    def __init__(self, folder: Path, compose: str, env: dict[str, str] | None = None) -> None:
        (folder / "stack" / "worker").mkdir(parents=True)
        (folder / "stack" / "docker-compose.yml").write_text(compose)
        (folder / "stack" / "worker" / "Dockerfile").write_text(DOCKERFILE)
        (folder / "pytest.ini").write_text("[pytest]\n")
        self.marker = folder / "marker.json"
        test_file = folder / "test_child.py"
        test_file.write_text(f"MARKER = {str(self.marker)!r}\n" + HOLDING_TEST)
        self.log = folder / "child.log"
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", str(test_file)]
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(
                argv,
                cwd=folder,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                preexec_fn=interruptible,
            )
        self.info: dict = {}

    def wait_for_marker(self, until: str | None = None, client: DockerClient | None = None) -> dict:
        """The child's marker; with ``until="container"`` also wait until a container of its session exists."""
        deadline = time.monotonic() + CHILD_READY_S
        while True:
            if self.marker.exists():
                self.info = json.loads(self.marker.read_text())
                if until is None:
                    return self.info
                assert client is not None
                # sparse: no inspect per container, so one removed between list and inspect is no error
                found = client.containers.list(
                    all=True, sparse=True, filters={"label": [f"{L.SESSION}={self.info['session']}"]}
                )
                if found:
                    return self.info
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"child never got there:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=CHILD_EXIT_S)


@pytest.fixture
def children(client: DockerClient) -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for child in started:
        child.stop()
        if child.info:
            clean_session(child.info["session"], client)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_while_the_stack_runs_removes_all_of_it(
    tmp_path: Path, client: DockerClient, children: list[Child], signum: int
) -> None:
    child = Child(tmp_path, COMPOSE)
    children.append(child)
    info = child.wait_for_marker()
    held = everything_of(client, info["session"])
    assert any(name.startswith("volume ") for name in held) and any(name.startswith("image ") for name in held)
    assert sum(name.startswith("container ") for name in held) == 2, held
    child.process.send_signal(signum)
    returncode = child.process.wait(timeout=CHILD_EXIT_S)
    assert returncode == (-signal.SIGTERM if signum == signal.SIGTERM else 2), child.log.read_text()[-3000:]
    assert everything_of(client, info["session"]) == []
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob(f"{info['project']}-*"))


def test_ctrl_c_while_the_stack_comes_up_removes_all_of_it(
    tmp_path: Path, client: DockerClient, children: list[Child]
) -> None:
    child = Child(tmp_path, SLOW_COMPOSE, env={"HOLD_BEFORE_UP": "1"})
    children.append(child)
    info = child.wait_for_marker(until="container", client=client)
    time.sleep(0.5)  # inside the wait for a healthcheck that never passes
    child.process.send_signal(signal.SIGINT)
    assert child.process.wait(timeout=CHILD_EXIT_S) == 2, child.log.read_text()[-3000:]
    assert everything_of(client, info["session"]) == []


def test_a_crashed_sessions_stack_is_listed_by_clean_and_removed_at_the_next_start(
    tmp_path: Path, client: DockerClient, children: list[Child]
) -> None:
    (tmp_path / "crash").mkdir()
    child = Child(tmp_path / "crash", COMPOSE)
    children.append(child)
    info = child.wait_for_marker()
    child.process.send_signal(signal.SIGKILL)  # no cleanup code runs
    child.process.wait(timeout=CHILD_EXIT_S)
    left = everything_of(client, info["session"])
    assert len(left) >= 5, left  # 2 containers, network, volume, built image
    listed = subprocess.run(
        [sys.executable, "-m", "pytest_netperf.cli.main", "clean", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    for kind in ("container", "network", "volume", "image"):
        assert f"would remove {kind} " in listed.stdout and f"(session {info['session']}, pid {info['pid']}" in (
            listed.stdout
        )
    assert "1 volume(s), 1 image(s)" in listed.stdout
    (tmp_path / "next").mkdir()
    (tmp_path / "next" / "test_next.py").write_text(STARTING_TEST)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(tmp_path / "next" / "test_next.py")],
        cwd=tmp_path / "next",
        capture_output=True,
        text=True,
        timeout=CHILD_READY_S,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "netperf docker: removed" in done.stdout and f"{info['session']} (pid {info['pid']})" in done.stdout
    assert everything_of(client, info["session"]) == []
