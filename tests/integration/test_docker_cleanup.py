"""Nothing we create outlives its session: normal end, failed startup, SIGTERM/SIGINT, crashes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from docker import DockerClient
from docker_helpers import get, interruptible, leftovers, session_leftovers

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import RuntimeUnavailable
from pytest_netperf.runtime.cgroups import cgroup_mounts
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.docker import DockerRuntime
from pytest_netperf.runtime.running import TopologyStartError
from pytest_netperf.topology import builders
from pytest_netperf.topology.model import Node, Target, Topology

pytestmark = pytest.mark.docker

#: Bounds for the child pytest runs (the machine is shared and may be slow).
CHILD_READY_S = 90
CHILD_EXIT_S = 30

HOLDING_TEST = """
import json, os, time
import pytest

# a TLS listener: the session's test CA writes its key files to the temp folder
@pytest.mark.parametrize("gateway_topology", [{"kind": "nginx", "tls": True}], indirect=True)
def test_hold(netperf_docker, gateway_topology):
    info = {"pid": os.getpid(), "session": netperf_docker.session_id,
            "network": gateway_topology.network}
    with open(MARKER + ".tmp", "w") as handle:
        json.dump(info, handle)
    os.replace(MARKER + ".tmp", MARKER)
    time.sleep(60)  # the parent signals us long before this ends
"""

FINISHING_TEST = """
import json, os
from pytest_netperf.topology import builders

def test_runs_to_the_end(netperf_docker, gateway_topology, netperf_topology):
    netperf_topology(builders.echo_topology(replicas=2))
    with open(MARKER, "w") as handle:
        json.dump({"pid": os.getpid(), "session": netperf_docker.session_id}, handle)
"""

STARTING_TEST = """
def test_start(netperf_docker):
    assert netperf_docker.session_id
"""

TWO_WORKERS_TEST = """
def test_echo(echo_topology):
    assert echo_topology.endpoint("direct").guard() is None

def test_gateway(gateway_topology):
    assert gateway_topology.endpoint("gateway").guard() is None
"""


@pytest.fixture(scope="module")
def client() -> DockerClient:
    try:
        return docker_client()
    except RuntimeUnavailable as exc:
        pytest.skip(str(exc))


def _child(
    tmp_path: Path, body: str, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> tuple[subprocess.Popen, Path, Path]:
    """Start ``pytest`` on a one-test file in ``tmp_path``; returns (process, marker, log)."""
    marker = tmp_path / "marker.json"
    test_file = tmp_path / "test_child.py"
    test_file.write_text(f"MARKER = {str(marker)!r}\n" + body)
    log = tmp_path / "child.log"
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:netperf",
        "-p",
        "pytest_netperf.plugin.docker_fixtures",
        "-p",
        "no:cacheprovider",
        "-rs",
        "-q",
        *args,
        str(test_file),
    ]
    with open(log, "w") as out:
        process = subprocess.Popen(
            argv,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            preexec_fn=interruptible,
        )
    return process, marker, log


def _wait_for(marker: Path, process: subprocess.Popen, log: Path) -> dict:
    deadline = time.monotonic() + CHILD_READY_S
    while not marker.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"child never reached the test body:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)
    return json.loads(marker.read_text())


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
        process.wait(timeout=CHILD_EXIT_S)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_mid_test_removes_everything(tmp_path: Path, client: DockerClient, signum: int) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    process, marker, log = _child(tmp_path, HOLDING_TEST, env={"TMPDIR": str(temp)})
    info: dict = {}
    try:
        info = _wait_for(marker, process, log)
        assert len(session_leftovers(client, info["session"])) == 3  # network + echo + gateway
        weighted = session_cgroups(info["session"])  # none where the group cannot be had (systemd driver)
        process.send_signal(signum)
        returncode = process.wait(timeout=CHILD_EXIT_S)
        expected = -signal.SIGTERM if signum == signal.SIGTERM else 2  # pytest: "interrupted"
        assert returncode == expected, log.read_text()[-3000:]
        assert session_leftovers(client, info["session"]) == []
        assert leftovers(client, f"{L.PID}={info['pid']}") == []
        assert list(temp.glob("netperf-test-ca-*")) == [], "the test CA's key files outlived the session"
        assert session_cgroups(info["session"]) == [], f"the weighted cgroup outlived the session: {weighted}"
    finally:
        _stop(process)
        if info:
            clean_session(info["session"], client)


def session_cgroups(session: str) -> list[Path]:
    """The folders of ``session``'s weighted cgroup (``netperf-<session>``) left in any cgroup
    hierarchy, at the top or one level down (below a CPU quota's group)."""
    found: list[Path] = []
    for mount in cgroup_mounts(Path("/proc/self/mountinfo")):
        found += [path for pattern in ("", "*/") for path in mount.point.glob(f"{pattern}netperf-{session}")]
    return found


def test_session_end_removes_everything(tmp_path: Path, client: DockerClient) -> None:
    process, marker, log = _child(tmp_path, FINISHING_TEST)
    info: dict = {}
    try:
        assert process.wait(timeout=CHILD_READY_S) == 0, log.read_text()[-3000:]
        info = json.loads(marker.read_text())
        assert session_leftovers(client, info["session"]) == []
        assert "netperf docker topology startup: echo-x2" in log.read_text()
    finally:
        _stop(process)
        if info:
            clean_session(info["session"], client)


def _ghost(client: DockerClient, image: str) -> tuple[str, str, int]:
    """A crashed session's network and echo container (its pid is gone); returns (session, network, pid)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ghost = f"ghost{uuid.uuid4().hex[:8]}"
    network = f"netperf-{ghost}-crashed"
    labels = L.resource_labels(ghost, "crashed", network, pid=dead.pid)
    client.networks.create(network, driver="bridge", internal=True, labels=labels)
    client.containers.run(
        image,
        ["netperf-driver", "echo", "--listen", "0.0.0.0:8080", "--id", "ghost"],
        network=network,
        labels=labels,
        detach=True,
        name=f"{network}-echo",
        cap_drop=["ALL"],
    )
    assert len(session_leftovers(client, ghost)) == 2
    return ghost, network, dead.pid


def test_crashed_session_leftovers_go_at_next_start(
    tmp_path: Path, client: DockerClient, netperf_docker: DockerRuntime
) -> None:
    ghost = ""
    try:
        ghost, _, pid = _ghost(client, netperf_docker.image_for("echo"))
        process, _, log = _child(tmp_path, STARTING_TEST)
        try:
            assert process.wait(timeout=CHILD_READY_S) == 0, log.read_text()[-3000:]
        finally:
            _stop(process)
        assert session_leftovers(client, ghost) == []
        output = log.read_text()
        said = [line for line in output.splitlines() if line.startswith("netperf docker: removed")]
        assert said and f"of session(s) {ghost} (pid {pid})" in said[0], output[-3000:]  # said, not silent
        assert said[0].startswith("netperf docker: removed 2 container(s)/network(s)") or len(said) > 1, said
    finally:
        if ghost:
            clean_session(ghost, client)


def _netperf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_netperf.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=CHILD_EXIT_S * 2,
        check=False,
    )


def test_clean_command_spares_a_running_session(client: DockerClient, netperf_docker: DockerRuntime) -> None:
    """`netperf clean` from another shell during a run: the run's topology and addresses stay."""
    running = netperf_docker.up(builders.echo_topology())
    endpoint = running.endpoint("direct")
    ghost = ""
    try:
        ghost, network, pid = _ghost(client, netperf_docker.image_for("echo"))
        ours = session_leftovers(client, netperf_docker.session_id)

        dry = _netperf("clean", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert f"would remove network {network} (session {ghost}, pid {pid}: process {pid} is gone)" in dry.stdout
        assert f"would remove container {network}-echo" in dry.stdout
        assert f"kept session {netperf_docker.session_id} (pid {os.getpid()})" in dry.stdout
        assert "(dry run: nothing removed)" in dry.stdout
        assert len(session_leftovers(client, ghost)) == 2

        done = _netperf("clean")
        assert done.returncode == 0, done.stderr
        assert f"removed network {network} (session {ghost}" in done.stdout, done.stdout
        assert f"removed container {network}-echo (session {ghost}" in done.stdout
        assert f"kept session {netperf_docker.session_id}" in done.stdout
        assert session_leftovers(client, ghost) == []
        assert session_leftovers(client, netperf_docker.session_id) == ours
        assert endpoint.guard() is None and get(endpoint.url)[0] == 200  # still measurable, still here
    finally:
        running.down()
        if ghost:
            clean_session(ghost, client)


def test_xdist_workers_report_startup_times_and_removed_leftovers(
    tmp_path: Path, client: DockerClient, netperf_docker: DockerRuntime
) -> None:
    ghost = ""
    try:
        ghost, _, pid = _ghost(client, netperf_docker.image_for("echo"))
        process, _, log = _child(tmp_path, TWO_WORKERS_TEST, args=("-n", "2"))
        try:
            assert process.wait(timeout=CHILD_READY_S) == 0, log.read_text()[-3000:]
        finally:
            _stop(process)
        output = log.read_text()
        assert "2 passed" in output and output.count("bringing up nodes") == 2, output[-3000:]
        startup = [line for line in output.splitlines() if line.startswith("netperf docker topology startup: ")]
        assert len(startup) == 1 and "echo-x1 " in startup[0] and "gateway-nginx-w1 " in startup[0], output[-3000:]
        said = [line for line in output.splitlines() if line.startswith("netperf docker: removed")]
        assert said and all(f"of session(s) {ghost} (pid {pid})" in line for line in said), output[-3000:]
        assert all(line.endswith(("[gw0]", "[gw1]")) for line in said), said  # which worker did it
        assert sum(int(line.split()[3]) for line in said) == 2, said  # container + network, however split
        assert session_leftovers(client, ghost) == []
    finally:
        if ghost:
            clean_session(ghost, client)


def test_failed_startup_attaches_logs_and_removes_everything(netperf_docker: DockerRuntime) -> None:
    """HAProxy refuses a maxconn no open-files limit can satisfy; the error shows its log."""
    topology = Topology(
        "doomed",
        (Node("echo", "echo", 8080), Node("lb", "haproxy", 8000, upstreams=("echo",), params={"maxconn": 600_000_000})),
        (Target("lb", "lb", 8000),),
    )
    with pytest.raises(TopologyStartError) as failure:
        netperf_docker.up(topology)
    message = str(failure.value)
    assert "node 'lb' (haproxy) not ready" in message
    assert "global.maxconn" in message  # HAProxy's own complaint, from its log
    assert session_leftovers(netperf_docker.client, netperf_docker.session_id) == []
    assert "doomed" not in netperf_docker.startup_times


def test_docker_down_gives_a_clear_message_and_a_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = f"unix://{tmp_path}/no-docker.sock"
    monkeypatch.setenv("DOCKER_HOST", missing)
    started = time.monotonic()
    with pytest.raises(RuntimeUnavailable, match=f"Docker daemon not reachable at {missing}"):
        docker_client()
    assert time.monotonic() - started < 10  # must not hang on a dead socket
    process, _, log = _child(tmp_path, STARTING_TEST, env={"DOCKER_HOST": missing})
    try:
        assert process.wait(timeout=CHILD_READY_S) == 0
    finally:
        _stop(process)
    output = log.read_text()
    assert "1 skipped" in output and f"Docker daemon not reachable at {missing}" in output, output
