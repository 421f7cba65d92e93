"""Locust workers on their own Docker network addresses serve every round of a session's master.

Two ``pytest-netperf/locust:local`` containers run ``netperf locust-worker`` (the image's
default command) on a fresh Docker network, next to an nginx target.  A pytest run (the
master lives in that pytest process) gates the target over three rounds; every round must
be served by both workers, the target's access log must show both worker addresses, the
workers must survive the master's exit and serve a second session, stop cleanly on SIGTERM,
and nothing may be left running.
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import time
import uuid
from typing import Any, Iterator

import psutil
import pytest
from docker_helpers import session_leftovers, skip_without_images
from pytester_helpers import json_report

from pytest_netperf.engine import labels as L
from pytest_netperf.images.roles import LOCAL_IMAGES

pytestmark = pytest.mark.docker
if importlib.util.find_spec("locust") is None:  # pragma: no cover - depends on the machine
    pytest.skip("locust is not installed", allow_module_level=True)

ROUNDS = 3


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> list[int]:
    """Process ids listening on TCP ``port`` (any address)."""
    return [
        int(c.pid or 0)
        for c in psutil.net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
    ]


class Setup:
    """The network, the nginx target and the two worker containers of one test."""

    def __init__(self) -> None:
        from pytest_netperf.engine.client import docker_client

        self.client = docker_client()
        self.session = f"locust-remote-{uuid.uuid4().hex[:8]}"
        self.labels = L.resource_labels(self.session, "locust-remote", f"netperf-{self.session}")
        self.network: Any = None
        self.containers: list[Any] = []

    def start(self) -> None:
        self.network = self.client.networks.create(f"netperf-{self.session}", driver="bridge", labels=self.labels)
        self.network.reload()
        self.gateway = self.network.attrs["IPAM"]["Config"][0]["Gateway"]
        self.port = _free_port(self.gateway)
        self.target = self._run(LOCAL_IMAGES["nginx"], "target", environment={})
        self.workers = [
            self._run(
                LOCAL_IMAGES["locust"],
                f"worker{i}",
                environment={"NETPERF_LOCUST_MASTER": f"{self.gateway}:{self.port}"},
            )
            for i in (1, 2)
        ]

    def _run(self, image: str, name: str, environment: dict[str, str]) -> Any:
        container = self.client.containers.run(
            image,
            name=f"{self.session}-{name}",
            detach=True,
            network=self.network.name,
            labels=self.labels,
            environment=environment,
        )
        self.containers.append(container)
        container.reload()
        return container

    def address(self, container: Any) -> str:
        container.reload()
        return str(container.attrs["NetworkSettings"]["Networks"][self.network.name]["IPAddress"])

    def close(self) -> None:
        for container in self.containers:
            with contextlib.suppress(Exception):
                container.remove(force=True)
        if self.network is not None:
            with contextlib.suppress(Exception):
                self.network.remove()


@pytest.fixture
def setup() -> Iterator[Setup]:
    skip_without_images("nginx", "locust")
    running = Setup()
    try:
        running.start()
        yield running
    finally:
        running.close()
        assert session_leftovers(running.client, running.session) == []


def test_two_container_workers_serve_every_round_of_a_session_master(pytester: pytest.Pytester, setup: Setup) -> None:
    target_url = f"http://{setup.address(setup.target)}/"
    worker_addresses = {setup.address(worker) for worker in setup.workers}
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.netperf("errors == 0", driver="locust")
        def test_gate(netperf):
            netperf.measure("{target_url}", connections=4, rate=100)
        """
    )
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        f"--netperf-rounds={ROUNDS}",
        f"--netperf-max-rounds={ROUNDS}",
        "--netperf-duration=1",
        "--netperf-warmup=0.3",
        "--netperf-locust-remote-workers=2",
        f"--netperf-locust-master={setup.gateway}:{setup.port}",
        "--netperf-locust-workers-timeout=60",
        "--netperf-json=out.json",
        "-v",
        "-p",
        "no:cacheprovider",
    )
    elapsed = time.monotonic() - started
    output = result.stdout.str()
    report = json_report(pytester, "out.json")
    rounds = [r for results in report["results"].values() for series in _series(results) for r in series]
    assert len(rounds) >= ROUNDS, output[-3000:]
    for index, round_ in enumerate(rounds, start=1):
        served = round_["config"]["workers_served"]
        assert len(served) == 2, f"round {index}: {served}"
        assert {w["address"] for w in served} == worker_addresses, f"round {index}: {served}"
        assert all(w["requests"] > 0 for w in served), f"round {index}: {served}"
        assert round_["bytes_sent"] > 0
    # The report names both workers and that each served every round.
    facts = " ".join(line.strip() for line in output.splitlines() if "load workers" in line or "rounds," in line)
    for address in worker_addresses:
        assert f"{address} (" in facts and f"{ROUNDS}/{ROUNDS} rounds" in facts, output[-3000:]
    # One master for the whole session: the workers attached once (no reconnect between rounds).
    for worker in setup.workers:
        log = worker.logs().decode(errors="replace")
        assert log.count("reconnecting to") <= 1, log[-2000:]
    # The target saw requests from both worker addresses.
    access_log = setup.target.logs(stdout=True, stderr=False).decode(errors="replace")
    seen = {line.split()[0] for line in access_log.splitlines() if line.strip()}
    assert worker_addresses <= seen, (worker_addresses, seen)
    # The master and its port are gone with the pytest process; the workers wait for the next master.
    assert _listening(setup.port) == []
    for worker in setup.workers:
        worker.reload()
        assert worker.status == "running", worker.logs().decode(errors="replace")[-2000:]
    # A second session (a new master on the same address) is served by the same containers.
    again = pytester.runpytest_subprocess(
        "--netperf-rounds=2",
        "--netperf-max-rounds=2",
        "--netperf-duration=0.5",
        "--netperf-warmup=0.2",
        "--netperf-locust-remote-workers=2",
        f"--netperf-locust-master={setup.gateway}:{setup.port}",
        "--netperf-locust-workers-timeout=60",
        "-p",
        "no:cacheprovider",
    )
    assert again.ret == 0, again.stdout.str()[-3000:]
    assert _listening(setup.port) == []
    # SIGTERM stops a worker (and its Locust process) promptly and cleanly.
    for worker in setup.workers:
        worker.stop(timeout=10)
        assert worker.wait(timeout=15)["StatusCode"] == 0, worker.logs().decode(errors="replace")[-2000:]
        assert "netperf locust-worker: stopped" in worker.logs().decode(errors="replace")
    assert not [p for p in psutil.Process().children(recursive=True) if "locust" in " ".join(_cmdline(p))]
    assert elapsed < 60, f"the 3-round gate took {elapsed:.0f}s"


def _series(results: Any) -> list[list[dict[str, Any]]]:
    """Every list of round dicts in a test's JSON results, whatever its nesting."""
    if isinstance(results, list) and results and isinstance(results[0], dict) and "config" in results[0]:
        return [results]
    if isinstance(results, dict):
        return [series for value in results.values() for series in _series(value)]
    if isinstance(results, list):
        return [series for value in results for series in _series(value)]
    return []


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []
