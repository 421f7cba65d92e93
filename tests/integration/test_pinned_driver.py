"""The real load driver on its own cores: the Rust driver on the host (every thread of it) and
the driver container, each pinned to one core while it measures a real echo server.

Bounded load only: 100 requests/s for 1.5 s to a loopback echo server; the container test
runs one short command on Docker's default bridge and removes its container.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psutil
import pytest
from docker import DockerClient
from docker.errors import ImageNotFound
from docker_helpers import leftovers

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import DriverNotFoundError, RuntimeUnavailable
from pytest_netperf.images.roles import LOCAL_IMAGES
from pytest_netperf.runtime.commands import LocalRunner, find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer
from pytest_netperf.runtime.resources import usable_cores
from pytest_netperf.runtime.runners import ContainerRunner

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning needs Linux")

DRIVER_CORE = usable_cores()[0]
ECHO_CORE = usable_cores()[-1]


@pytest.fixture(scope="module")
def echo() -> Iterator[LocalEchoServer]:
    try:
        find_driver_binary()
    except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"netperf-driver is not installed: {exc}")
    with LocalEchoServer(cpus=str(ECHO_CORE)) as server:
        yield server


def _driver_threads(parent: psutil.Process, timeout_s: float = 10.0) -> tuple[psutil.Process, list[int]]:
    """The running ``netperf-driver http`` child of ``parent`` (not the echo server, which runs
    the same binary) once its worker threads exist, and their ids."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for child in parent.children():
            try:
                running = child.name() == "netperf-driver" and "http" in child.cmdline()
                if running and child.num_threads() > 1:
                    return child, [thread.id for thread in child.threads()]
            except psutil.NoSuchProcess:
                continue
        time.sleep(0.02)
    raise AssertionError(f"no running netperf-driver with threads within {timeout_s:g}s")


def test_the_rust_driver_and_all_its_threads_run_on_the_given_core(echo: LocalEchoServer) -> None:
    assert os.sched_getaffinity(echo.pid) == {ECHO_CORE}
    driver = RustDriver(runner=LocalRunner(cpus=str(DRIVER_CORE)))
    shape = LoadShape(rate=100, connections=2, duration_s=1.5, warmup_s=0.2, timeout_s=2.0)
    outcome: dict[str, Any] = {}

    def measure() -> None:
        try:
            outcome["result"] = driver.run(echo.url, shape)
        except Exception as exc:  # reported by the assertion below
            outcome["error"] = exc

    thread = threading.Thread(target=measure)
    thread.start()
    try:
        child, threads = _driver_threads(psutil.Process())
        masks = {tid: os.sched_getaffinity(tid) for tid in threads}
        assert os.sched_getaffinity(child.pid) == {DRIVER_CORE}
        assert masks and all(mask == {DRIVER_CORE} for mask in masks.values()), masks
    finally:
        thread.join(timeout=30)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"].ok > 0 and outcome["result"].error_count == 0


@pytest.fixture(scope="module")
def client() -> DockerClient:
    try:
        client = docker_client()
    except RuntimeUnavailable as exc:
        pytest.skip(str(exc))
    try:
        client.images.get(LOCAL_IMAGES["echo"])
    except ImageNotFound:
        pytest.skip(f"{LOCAL_IMAGES['echo']} is not built (netperf images build)")
    return client


@pytest.mark.docker
def test_a_pinned_driver_container_runs_on_the_given_core(client: DockerClient) -> None:
    session = f"pin-{uuid.uuid4().hex[:8]}"
    labels = L.resource_labels(session, "pinning", "bridge")
    runner = ContainerRunner(client, LOCAL_IMAGES["echo"], "bridge", labels).pinned(str(DRIVER_CORE))
    assert runner.cpus == str(DRIVER_CORE) and runner.where == "container on bridge"
    try:
        outcome = runner.run(["grep", "Cpus_allowed_list", "/proc/self/status"], 60.0)
        assert outcome.returncode == 0, outcome.stderr
        assert outcome.stdout.split() == ["Cpus_allowed_list:", str(DRIVER_CORE)]
        unpinned = ContainerRunner(client, LOCAL_IMAGES["echo"], "bridge", labels).run(
            ["grep", "Cpus_allowed_list", "/proc/self/status"], 60.0
        )
        assert unpinned.stdout.split()[-1] != str(DRIVER_CORE) or len(usable_cores()) == 1
    finally:
        assert leftovers(client, f"{L.SESSION}={session}") == []
