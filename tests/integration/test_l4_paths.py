"""L4 gates on real containers: the echo server's raw TCP echo, an iperf3 server, the three
paths of ``l4_paths`` (bridge, host to container, host network) and their interface counters.

What is checked against known answers: a 16-byte UDP datagram is 58 bytes on ``eth0``
(16 + 8 UDP + 20 IP + 14 Ethernet) and 44 on ``lo`` (no Ethernet header); a raw TCP exchange
echoes exactly the payload; and the bad inputs of the issue (no server, a port that is
taken, a rate the client cannot push, a payload out of range, no iperf3 in the image) each
end in an error or an INVALID that says so.
"""

from __future__ import annotations

import socket
import uuid

import pytest
from docker_helpers import session_leftovers, skip_without_images
from pytester_helpers import caught, json_report

from pytest_netperf.budget.metrics import metric_value
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.iperf3 import Iperf3Driver
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.errors import DriverError
from pytest_netperf.images.resolve import resolve_image
from pytest_netperf.measure.wire_counts import run_with_wire
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.docker import DockerRuntime
from pytest_netperf.runtime.host_ports import free_host_ports
from pytest_netperf.runtime.l4_paths import core_pair, l4_paths
from pytest_netperf.runtime.runners import ContainerRunner
from pytest_netperf.runtime.running import TopologyStartError
from pytest_netperf.topology import builders

pytestmark = pytest.mark.docker

SHORT = {"duration_s": 1.0, "warmup_s": 0.0, "timeout_s": 2.0}


@pytest.fixture(scope="module")
def runtime():
    skip_without_images("echo")
    session = f"l4{uuid.uuid4().hex[:6]}"
    runtime = DockerRuntime(session, {"echo": resolve_image("echo")}, core_split=None)
    yield runtime
    runtime.down_all()
    clean_session(session, runtime.client)
    assert session_leftovers(runtime.client, session) == []


@pytest.fixture(scope="module")
def paths(runtime):
    client_cpus, server_cpus = core_pair()
    bridge = runtime.up(builders.l4_topology(server_cpus=server_cpus))
    host = runtime.up(builders.l4_topology(host_network=True, ports=free_host_ports(3), server_cpus=server_cpus))
    return l4_paths(bridge, host, client_cpus, server_cpus)


def measured(driver, endpoint, shape):
    notes: list[str] = []
    result = run_with_wire(lambda: driver.run(endpoint.url, shape), endpoint.wire, notes)
    assert not notes, notes
    return result


def test_udp_16_byte_datagrams_on_the_wire_of_every_path(paths):
    shape = LoadShape(protocol="udp", payload=16, rate=20_000, **SHORT)
    sizes = {}
    for path in paths:
        driver = Iperf3Driver(runner=path.iperf3.runner)
        result = measured(driver, path.iperf3, shape)
        assert not result.client.saturated, result.client.saturation_reasons
        assert metric_value(result, "pps") == pytest.approx(20_000, rel=0.05), path.name
        assert metric_value(result, "loss") < 0.05
        wire = result.transport.wire
        sizes[path.name] = (wire.interface, round(wire.packet_bytes))
    # mostly 16-byte datagrams; iperf3's few control packets move the average a little, and
    # ``lo`` also counts whatever else on the host talks over loopback meanwhile
    assert sizes["container"][0] == sizes["host-to-container"][0] == "eth0"
    assert 56 <= sizes["container"][1] <= 62 and 56 <= sizes["host-to-container"][1] <= 62, sizes
    assert sizes["host"][0] == "lo" and 42 <= sizes["host"][1] <= 60, sizes


def test_tcp_stream_writes_far_larger_packets_than_the_mtu_over_the_bridge(paths):
    """GSO: a 128 KiB write crosses the veth as a few super-packets, not MTU-sized frames."""
    result = measured(
        Iperf3Driver(runner=paths.container.iperf3.runner), paths.container.iperf3, LoadShape(connections=2, **SHORT)
    )
    assert metric_value(result, "gbps") > 0.1
    assert result.transport.wire.packet_bytes > 3000, result.transport.wire
    assert result.transport.streams == 2


def test_request_response_echoes_the_payload_on_every_path(paths):
    for path in paths:
        for payload in (64, 1518):
            result = measured(RustDriver(runner=path.rr.runner), path.rr, LoadShape(payload=payload, **SHORT))
            assert result.transport.protocol == "tcp-rr" and result.transport.payload_bytes == payload
            assert result.ok > 100 and result.error_count == 0, (path.name, result.errors)
            assert result.bytes_received == result.bytes_sent
            assert result.latency.count == result.ok and metric_value(result, "p50") > 0
            assert metric_value(result, "pps") > result.achieved_rps, "at least a request and a response per exchange"


def test_no_iperf3_server_is_a_clear_error(paths):
    closed = f"iperf3://127.0.0.1:{free_host_ports(1)[0]}"
    with pytest.raises(DriverError, match=r"Connection refused: is an iperf3 server \(iperf3 -s\) listening there"):
        Iperf3Driver().run(closed, LoadShape(**SHORT))


def test_a_host_port_in_use_is_a_start_error_naming_the_node(runtime):
    (taken,) = free_host_ports(1)
    before = session_leftovers(runtime.client, runtime.session_id)
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", taken))
        holder.listen()
        ports = (*free_host_ports(2), taken)
        with pytest.raises(
            TopologyStartError, match=rf"node 'l4-iperf3' runs on the host network and needs port\(s\) {taken}"
        ):
            runtime.up(builders.l4_topology(host_network=True, ports=ports))
    assert sorted(session_leftovers(runtime.client, runtime.session_id)) == sorted(before), "nothing was started"


def test_a_udp_rate_the_client_cannot_push_is_saturated_not_judged(paths):
    shape = LoadShape(protocol="udp", payload=16, rate=5_000_000, **SHORT)
    result = Iperf3Driver(runner=paths.host.iperf3.runner).run(paths.host.iperf3.url, shape)
    assert result.client.saturated
    assert "the client cannot push this rate" in result.client.saturation_reasons[0]


def test_iperf3_missing_from_the_image_names_the_image_and_the_fix(runtime, tmp_path):
    image = f"pytest-netperf-test/no-iperf3:{uuid.uuid4().hex[:6]}"
    (tmp_path / "Dockerfile").write_text("FROM scratch\nCOPY marker /marker\n")
    (tmp_path / "marker").write_text("x")
    runtime.client.images.build(path=str(tmp_path), tag=image, rm=True)
    try:
        labels = {"test": f"no-iperf3-{uuid.uuid4().hex[:6]}"}
        runner = ContainerRunner(runtime.client, image, "none", labels)
        with pytest.raises(DriverError, match=r"executable file not found.*netperf images build"):
            Iperf3Driver(runner=runner).run("iperf3://127.0.0.1:5201", LoadShape(**SHORT))
        left = runtime.client.containers.list(all=True, filters={"label": f"test={labels['test']}"})
        assert left == [], "a container that could not start is removed"
    finally:
        runtime.client.images.remove(image, force=True)


GATE = """
import pytest


@pytest.mark.netperf("pps >= 0.8x reference", "loss <= 5%")
def test_udp(netperf, l4_paths):
    netperf.compare(l4_paths.container.iperf3, reference=l4_paths.host.iperf3, protocol="udp", payload=64, rate=5000)


@pytest.mark.netperf("p99 < 50ms")
def test_rr(netperf, l4_paths):
    for payload in (64, 512):
        netperf.compare(l4_paths.container.rr, reference=l4_paths.host.rr, payload=payload, key=f"payload={payload}")


@pytest.mark.netperf("p99 < 50ms")
def test_payload_too_large(netperf, l4_paths):
    netperf.measure(l4_paths.host.rr, payload=70_000)
"""


def test_gate_over_the_paths_reports_l4_figures_per_path(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_l4=GATE)
    result = pytester.runpytest_subprocess(
        "--netperf-rounds=2",
        "--netperf-max-rounds=2",
        "--netperf-duration=1",
        "--netperf-warmup=0",
        "--netperf-json=results.json",
        "-p",
        "no:cacheprovider",
    )
    out = result.stdout.str()
    assert result.ret == 1, out[-3000:]  # the payload test fails; the others pass
    result.assert_outcomes(passed=2, failed=1)
    assert "load option payload=70000: expected a size in bytes from 1 to 65536 (64 KiB)" in out
    doc = json_report(pytester)
    (udp,) = doc["results"]["test_l4.py::test_udp"]
    for label in ("candidate", "reference"):
        l4 = udp["series"][label]["l4"]
        assert l4["protocol"] == "udp" and l4["payload_bytes"] == 64 and l4["received_pps"] > 4000, l4
        assert l4["loss"] is not None and l4["wire_packet_bytes"] > 64, l4
    assert udp["series"]["candidate"]["l4"]["wire_interface"] == "eth0"
    assert udp["series"]["reference"]["l4"]["wire_interface"] == "lo"
    rr = {m["key"]: m for m in doc["results"]["test_l4.py::test_rr"]}
    assert set(rr) == {"payload=64", "payload=512"}
    assert rr["payload=512"]["series"]["candidate"]["rounds"][0]["latency"]["count"] > 0
    facts = {row["budget"]: row["facts"] for row in doc["rows"] if row["test_id"].startswith("test_l4.py::test_udp")}
    assert "container to container" in facts["pps >= 0.8x reference"]["candidate"]["path"]
    assert "udp 64B datagrams" in facts["pps >= 0.8x reference"]["candidate"]["L4 (median per round)"]


THROTTLE_GATE = """
import os
import subprocess

import pytest
from pytest_netperf.topology import builders


def throttle(container, rate):
    '''Limit what enters the container to ``rate`` (a token bucket on the host side of its veth).'''
    container.reload()
    pid = str(container.attrs["State"]["Pid"])
    link = subprocess.run(["nsenter", "-t", pid, "-n", "ip", "-o", "link", "show", "eth0"],
                          capture_output=True, text=True, check=True).stdout
    peer = link.split("@if", 1)[1].split(":", 1)[0]
    host = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    veth = next(line.split(": ")[1].split("@")[0] for line in host.splitlines() if line.startswith(peer + ":"))
    subprocess.run(["tc", "qdisc", "add", "dev", veth, "root", "tbf", "rate", rate, "burst", "256kb",
                    "latency", "20ms"], check=True)


@pytest.mark.netperf("gbps >= 0.5x reference")
def test_throughput(netperf, netperf_topology):
    candidate = netperf_topology(builders.l4_topology(name="l4-candidate"))
    reference = netperf_topology(builders.l4_topology(name="l4-reference"))
    if os.environ.get("THROTTLE"):
        throttle(candidate.container("l4"), os.environ["THROTTLE"])
    netperf.compare(candidate.endpoint("iperf3"), reference=reference.endpoint("iperf3"), streams=2)
"""


def test_a_throttled_container_network_fails_the_throughput_gate(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An injected L4 regression: the candidate server's veth limited to 1 Gbit/s (tbf).
    The same gate passes without it (two identical servers); with it the ratio is far below 0.5x."""
    import shutil

    skip_without_images("echo")
    if shutil.which("tc") is None or shutil.which("nsenter") is None:
        pytest.skip("tc and nsenter (iproute2, util-linux) are needed to throttle a container's veth")
    pytester.makepyfile(test_throttle=THROTTLE_GATE)
    run = ["--netperf-rounds=3", "--netperf-max-rounds=6", "--netperf-duration=1", "--netperf-warmup=0"]
    run += ["--netperf-json=results.json", "-p", "no:cacheprovider"]
    same = pytester.runpytest_subprocess(*run)
    assert same.ret == 0, same.stdout.str()[-3000:]
    monkeypatch.setenv("THROTTLE", "1gbit")
    throttled = pytester.runpytest_subprocess(*run)
    (row,) = json_report(pytester)["rows"]
    if caught(throttled, row):
        assert row["raw"]["estimate"] < 0.3, row
