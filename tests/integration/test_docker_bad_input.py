"""What goes wrong from outside the run: a topology removed behind its back, a driver that is
not a driver (a version manager's shim), an echo image whose driver cannot start.

No load may leave the machine: a measurement of a removed topology is INVALID before any
load is sent (its old bridge addresses would route off the host). Loads here are bounded
(one 0.3 s round at 50 requests/s to a container of this machine).
"""

from __future__ import annotations

import contextlib
import shutil
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient
from docker.errors import ImageNotFound
from docker_helpers import get, leftovers
from pytester_helpers import json_report

from pytest_netperf.budget.grammar import Budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import DriverError, InvalidMeasurement, RuntimeUnavailable
from pytest_netperf.images import build, inputs, roles
from pytest_netperf.images.inputs import driver_binary
from pytest_netperf.images.layers import image_id
from pytest_netperf.images.rootfs import ImageBuildError
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.targets import with_query
from pytest_netperf.results.model import RoundResult
from pytest_netperf.runtime.cleanup import clean_network
from pytest_netperf.runtime.docker import DockerRuntime
from pytest_netperf.runtime.endpoints import TopologyGuard
from pytest_netperf.runtime.running import RunningTopology
from pytest_netperf.topology import builders

pytestmark = pytest.mark.docker

SHIM = '#!/usr/bin/env bash\nset -e\nexec "$(pyenv root)/libexec/pyenv" exec "${0##*/}" "$@"\n'


@pytest.fixture(scope="module")
def client() -> DockerClient:
    try:
        return docker_client()
    except RuntimeUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def echo(netperf_docker: DockerRuntime) -> Iterator[RunningTopology]:
    running = netperf_docker.up(builders.echo_topology())
    try:
        yield running
    finally:
        running.down()


class SpyDriver:
    """Records each round it is asked to send; sends it with the real driver only if ``send``.

    After a topology is removed the tests use ``send=False``: should the guard fail to stop
    the round, nothing goes to the stale address (it would route off the host).
    """

    name = "rust"

    def __init__(self, runner: Any, send: bool) -> None:
        self.inner = RustDriver(runner=runner) if send else None
        self.urls: list[str] = []

    cpus = None  # not pinned

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.urls.append(url)
        if self.inner is None:
            raise DriverError("the guard let a round through to a removed topology (not sent)")
        return self.inner.run(url, shape)


# ----------------------------------------------------------------- the guard


def test_guard_passes_while_the_topology_runs(echo: RunningTopology) -> None:
    endpoint = echo.endpoint("direct")
    assert endpoint.guard() is None
    assert with_query(endpoint, delay="1ms").guard() is None  # a copy keeps its guard
    assert get(endpoint.url)[0] == 200


def test_guard_names_a_removed_network(echo: RunningTopology, client: DockerClient) -> None:
    endpoint = with_query(echo.endpoint("direct"), delay="1ms")
    clean_network(echo.network, client)  # what `netperf clean` did to a running session
    reason = endpoint.guard()
    assert reason is not None and f"network {echo.network}" in reason and "no longer exists" in reason


def test_guard_notices_a_network_recreated_under_the_same_name(
    echo: RunningTopology, client: DockerClient, netperf_docker: DockerRuntime
) -> None:
    endpoint = echo.endpoint("direct")
    clean_network(echo.network, client)
    labels = L.resource_labels(netperf_docker.session_id, echo.topology.name, echo.network)
    client.networks.create(echo.network, driver="bridge", internal=True, labels=labels)  # removed by down()
    reason = endpoint.guard()
    assert reason is not None and "no longer exists" in reason  # same name and labels, another network


def test_guard_notices_a_stopped_or_removed_container(echo: RunningTopology, client: DockerClient) -> None:
    endpoint = echo.endpoint("direct")
    container = client.containers.get(f"{echo.network}-echo")
    container.stop(timeout=1)
    reason = endpoint.guard()
    assert reason is not None and "no longer attached" in reason  # its address went with it
    container.remove(force=True)
    assert endpoint.guard() is not None


def test_guard_of_a_dns_target_checks_the_name(netperf_docker: DockerRuntime, client: DockerClient) -> None:
    running = netperf_docker.up(builders.access_modes_topology(replicas=1))
    try:
        endpoint = running.endpoint("dns")
        assert endpoint.url == "http://echo-1:8080/" and endpoint.guard() is None
        client.containers.get(f"{running.network}-echo-1").remove(force=True)
        reason = endpoint.guard()
        assert reason is not None and "echo-1" in reason
    finally:
        running.down()


class FakeApi:
    """Answers the guard's two calls like Docker would, from editable dicts."""

    def __init__(self, labels: dict[str, str]) -> None:
        self.network = {"Labels": dict(labels), "Containers": {"root": {"IPv4Address": "10.9.0.2/24"}}}
        self.container = {"State": {"Running": True, "Status": "running"}, "Config": {"Labels": dict(labels)}}
        self.calls = 0

    def inspect_network(self, _id: str) -> dict:
        self.calls += 1
        return self.network

    def inspect_container(self, _id: str) -> dict:
        self.calls += 1
        return self.container


def _fake_guard(node: str = "echo", names: tuple[str, ...] = ("echo",)) -> tuple[TopologyGuard, FakeApi]:
    labels = L.resource_labels("s1", "t", "net")
    api = FakeApi(labels)
    client: Any = type("FakeClient", (), {"api": api})()
    guard = TopologyGuard(client, "t", "net", "net-id", labels, node, node, "root", names)
    return guard, api


def test_guard_logic_without_docker() -> None:
    guard, api = _fake_guard()
    assert guard.check("http://10.9.0.2:8080/?delay=1ms") is None and api.calls == 2  # cheap: two calls
    assert "is no longer 'echo''s address on net (now 10.9.0.2)" in str(guard.check("http://10.9.0.7:8080/"))
    assert guard.check("http://echo:8080/") is None  # a DNS name of the pod
    assert "'elsewhere' is not a name of 'echo'" in str(guard.check("http://elsewhere:8080/"))
    api.container["State"] = {"Running": True, "Paused": True, "Status": "paused"}
    assert "not running (status paused)" in str(guard.check("http://10.9.0.2:8080/"))
    api.container["State"] = {"Running": True}
    api.container["Config"]["Labels"][L.PID] = "1"
    assert "container of node 'echo' no longer carries this session's labels" in str(guard.check("http://10.9.0.2/"))
    api.network["Labels"][L.SESSION] = "other"
    assert "network net no longer carries this session's labels" in str(guard.check("http://10.9.0.2/"))


# ----------------------------------------------------------------- the gate


def test_measuring_a_removed_topology_is_invalid_and_sends_nothing(echo: RunningTopology, client: DockerClient) -> None:
    spies: list[SpyDriver] = []

    def factory(_name: str | None, runner: Any) -> SpyDriver:
        spies.append(SpyDriver(runner, send=not spies))  # only the first measurement may send
        return spies[-1]

    settings = GateSettings(
        rounds_min=2, rounds_max=2, round_batch=1, round_duration_s=0.3, warmup_s=0.1, max_lag_ms=100
    )
    gate = Gate("test_bad_input::removed", [Budget.parse("p50 < 1s")], settings, factory)
    endpoint = echo.endpoint("direct")

    before = gate.measure(endpoint, key="before", rate=50, connections=1)  # the guard lets a live target through
    assert len(before.candidate.rounds) == 2 and spies[0].urls == [endpoint.url] * 2

    clean_network(echo.network, client)
    with pytest.raises(InvalidMeasurement, match=r"no longer exists .*; no load was sent") as invalid:
        gate.measure(endpoint, key="after", rate=50, connections=1)
    assert echo.network in invalid.value.reason
    assert spies[1].urls == []  # the driver never ran


GATE_ON_A_REMOVED_TOPOLOGY = """
import pytest
from pytest_netperf.runtime.cleanup import clean_network
from pytest_netperf.topology import builders

@pytest.mark.netperf("p50 < 1s")
def test_removed_behind_its_back(netperf, netperf_topology, netperf_docker):
    echo = netperf_topology(builders.echo_topology())
    endpoint = echo.endpoint("direct")
    clean_network(echo.network, netperf_docker.client)  # e.g. `netperf clean --all` from another shell
    netperf.measure(endpoint, rate=50, connections=1)
"""


def test_plugin_reports_invalid_and_never_starts_the_driver(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = tmp_path / "driver-calls"
    spy = tmp_path / "netperf-driver"  # records and sends nothing: the address it would get is stale
    spy.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\necho 'spy: not sent' >&2\nexit 3\n")
    spy.chmod(spy.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("NETPERF_DRIVER", str(spy))
    pytester.makepyfile(test_removed=GATE_ON_A_REMOVED_TOPOLOGY)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--netperf-json=out.json", "--netperf-duration=0.3", "--netperf-warmup=0.1"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*INVALID measurement (no verdict)*no longer exists*; no load was sent"])
    rows = json_report(pytester, "out.json")["rows"]
    assert [(r["budget"], r["verdict"]) for r in rows] == [("p50 < 1s", "INVALID")]
    assert not calls.exists(), f"the driver ran: {calls.read_text()}"


# ----------------------------------------------------------------- the driver binary


def _shim_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "shims"
    folder.mkdir()
    shim = folder / "netperf-driver"
    shim.write_text(SHIM)
    shim.chmod(0o755)
    return folder


def test_a_shim_first_on_path_is_not_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported case: PATH's first netperf-driver was a pyenv shim, not this install's binary."""
    monkeypatch.delenv("NETPERF_DRIVER_BINARY", raising=False)
    monkeypatch.delenv("NETPERF_DRIVER", raising=False)
    monkeypatch.setenv("PATH", f"{_shim_dir(tmp_path)}:/usr/bin:/bin")
    chosen = driver_binary()
    assert chosen.read_bytes()[:4] == b"\x7fELF", chosen
    assert tmp_path not in chosen.parents


def test_an_explicit_shim_is_refused_with_what_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shim = _shim_dir(tmp_path) / "netperf-driver"
    monkeypatch.setenv("NETPERF_DRIVER_BINARY", str(shim))
    with pytest.raises(ImageBuildError) as refused:
        driver_binary()
    message = str(refused.value)
    assert str(shim) in message and "NETPERF_DRIVER_BINARY" in message
    assert "a shell script (#!/usr/bin/env bash), not an ELF executable" in message


# ----------------------------------------------------------------- an echo image that cannot start


@pytest.fixture
def scratch_echo_tag(client: DockerClient, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Builds go to a throwaway tag that starts as a copy of the real echo image."""
    if image_id(client, roles.BASE_IMAGE) is None or image_id(client, roles.LOCAL_IMAGES["echo"]) is None:
        pytest.skip("local images missing; build them with `netperf images build`")
    repository, version = "pytest-netperf/echo-scratch", uuid.uuid4().hex[:8]
    tag = f"{repository}:{version}"
    client.images.get(roles.LOCAL_IMAGES["echo"]).tag(repository, version)
    monkeypatch.setitem(roles.LOCAL_IMAGES, "echo", tag)
    try:
        yield tag
    finally:
        with contextlib.suppress(ImageNotFound):
            client.images.remove(tag)


@pytest.mark.parametrize(
    "make_binary, expected",
    [
        (lambda path: path.write_bytes(b"\x7fELF" + b"\0" * 60), "exec format error"),
        (lambda path: shutil.copy("/bin/false", path), "false (GNU coreutils)"),
    ],
    ids=["truncated-elf", "another-program"],
)
def test_an_echo_image_whose_driver_does_not_run_is_refused_and_rolled_back(
    client: DockerClient,
    scratch_echo_tag: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make_binary: Any,
    expected: str,
) -> None:
    real_echo = image_id(client, scratch_echo_tag)
    bogus = tmp_path / "netperf-driver"
    make_binary(bogus)
    bogus.chmod(0o755)
    monkeypatch.setenv("NETPERF_DRIVER_BINARY", str(bogus))
    assert inputs.elf_problem(bogus) is None  # it passes the ELF check: only running it tells
    lines: list[str] = []
    with pytest.raises(ImageBuildError) as failure:
        build.build_images(only=["echo"], progress=lines.append)
    message = str(failure.value)
    assert expected in message and "`netperf-driver --version` exited with status" in message, message
    assert f"made with {bogus}" in message and f"the previous {scratch_echo_tag} was kept" in message
    assert any("echo: building" in line for line in lines), lines
    assert image_id(client, scratch_echo_tag) == real_echo  # the working image is back under its tag
    assert leftovers(client, f"{L.TOPOLOGY}=smoke-echo") == []  # the throwaway container went too


def test_the_installed_driver_passes_the_smoke_test(client: DockerClient) -> None:
    if image_id(client, roles.LOCAL_IMAGES["echo"]) is None:
        pytest.skip("echo image missing; build it with `netperf images build`")
    assert build.smoke_test(client, "echo", roles.LOCAL_IMAGES["echo"]).startswith("netperf-driver ")
