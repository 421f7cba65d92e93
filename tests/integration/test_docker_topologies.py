"""Each seed topology comes up in Docker, carries requests along the expected path, and goes away."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from docker_helpers import get, run_driver, session_leftovers

from pytest_netperf.engine import labels as L
from pytest_netperf.runtime.docker import DockerRuntime
from pytest_netperf.runtime.isolation import ROLE_CAPABILITIES
from pytest_netperf.runtime.running import RunningTopology
from pytest_netperf.topology import builders

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module", autouse=True)
def nothing_left_after_module(netperf_docker: DockerRuntime) -> Iterator[None]:
    """Set up before, torn down after, every topology of this module: then nothing may remain."""
    yield
    left = session_leftovers(netperf_docker.client, netperf_docker.session_id)
    assert not left, f"resources left after the module's topologies were torn down: {left}"


def _report_startup(running: RunningTopology) -> None:
    print(f"{running.topology.name}: ready in {running.startup_s:.2f}s")


def test_echo_answers_directly_from_the_host(echo_topology: RunningTopology) -> None:
    endpoint = echo_topology.endpoint("direct")
    status, headers, _ = get(endpoint.url)
    assert (status, headers["x-netperf-echo"], endpoint.where) == (200, "echo", "host")
    assert endpoint.runner is None
    _report_startup(echo_topology)
    summary = run_driver(endpoint.url)
    assert summary["ok"] > 0 and summary["non_2xx"] == 0 and not any(summary["errors"].values())


@pytest.mark.parametrize("echo_topology", [3], indirect=True)
def test_echo_replicas_each_answer_with_their_name(echo_topology: RunningTopology) -> None:
    names = {get(f"http://{echo_topology.ip(n)}:8080/")[1]["x-netperf-echo"] for n in ("echo-1", "echo-2", "echo-3")}
    assert names == {"echo-1", "echo-2", "echo-3"}
    assert len({echo_topology.ip(n) for n in ("echo-1", "echo-2", "echo-3")}) == 3


@pytest.mark.parametrize("gateway_topology", ["nginx"], indirect=True)
def test_nginx_gateway_forwards_to_echo(gateway_topology: RunningTopology) -> None:
    status, headers, _ = get(gateway_topology.endpoint("gateway").url)
    assert status == 200
    assert headers["x-netperf-via"] == "gw" and headers["x-netperf-echo"] == "echo"
    direct = get(gateway_topology.endpoint("direct").url)[1]
    assert "x-netperf-via" not in direct and direct["x-netperf-echo"] == "echo"
    _report_startup(gateway_topology)
    summary = run_driver(gateway_topology.endpoint("gateway").url)
    assert summary["ok"] > 0 and summary["non_2xx"] == 0 and not any(summary["errors"].values())


@pytest.mark.parametrize("gateway_topology", ["kong"], indirect=True)
def test_kong_gateway_forwards_to_echo(gateway_topology: RunningTopology) -> None:
    """Runs only where an official kong image is present; skips with the reason otherwise."""
    status, headers, _ = get(gateway_topology.endpoint("gateway").url)
    assert status == 200 and headers["x-netperf-echo"] == "echo"


@pytest.mark.parametrize("sidecar_chain", [True, False], ids=["sidecars", "plain"], indirect=True)
def test_chain_depth_three_gives_four_hops(sidecar_chain: RunningTopology) -> None:
    endpoint = sidecar_chain.endpoint("entry")
    status, headers, _ = get(endpoint.url, path="/?depth=3")
    assert status == 200
    assert headers["x-netperf-hops"] == "4" and headers["x-netperf-echo"] == "svc-a"
    with_sidecars = sidecar_chain.topology.name == "sidecar-chain"
    assert (headers.get("x-netperf-via") == "svc-a-proxy") is with_sidecars
    assert get(endpoint.url, path="/?depth=0")[1]["x-netperf-hops"] == "1"
    if with_sidecars:  # the Envoy sidecar shares its app's network namespace and address
        assert sidecar_chain.ip("svc-a-proxy") == sidecar_chain.ip("svc-a")
    _report_startup(sidecar_chain)


def test_access_modes_reach_the_replicas(access_modes: RunningTopology) -> None:
    link = get(access_modes.endpoint("link").url)[1]
    assert link["x-netperf-echo"] == "echo-1" and "x-netperf-via" not in link
    for balancer in ("discovery", "l7"):
        seen = Counter(get(access_modes.endpoint(balancer).url)[1]["x-netperf-echo"] for _ in range(9))
        assert set(seen) == {"echo-1", "echo-2", "echo-3"}, f"{balancer} balanced as {dict(seen)}"
        assert get(access_modes.endpoint(balancer).url)[1]["x-netperf-via"] == balancer
    l4 = get(access_modes.endpoint("l4").url)[1]
    assert l4["x-netperf-echo"].startswith("echo-") and "x-netperf-via" not in l4  # TCP: no header edits
    _report_startup(access_modes)


def test_dns_target_runs_the_client_in_the_network(access_modes: RunningTopology) -> None:
    endpoint = access_modes.endpoint("dns")
    assert endpoint.url == "http://echo-1:8080/"
    assert endpoint.runner is not None and endpoint.where == f"container on {access_modes.network}"
    request = (
        "exec 3<>/dev/tcp/echo-1/8080; "
        "printf 'GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n' >&3; cat <&3"
    )
    outcome = endpoint.runner.run(["bash", "-c", request], timeout_s=20)
    assert outcome.returncode == 0, outcome.stderr
    assert "x-netperf-echo: echo-1" in outcome.stdout.lower()
    summary = run_driver(endpoint.url, endpoint.runner)
    assert summary["ok"] > 0 and not any(summary["errors"].values())


def test_factory_tears_down_what_it_started(netperf_docker: DockerRuntime, netperf_topology) -> None:
    running = netperf_topology(builders.echo_topology(replicas=2))
    assert get(running.endpoint("direct").url)[0] == 200
    running.down()
    left = [
        name for name in session_leftovers(netperf_docker.client, netperf_docker.session_id) if running.network in name
    ]
    assert not left


#: Bits of /proc/<pid>/status CapEff for the capabilities a role may keep.
_CAP_BITS = {"CHOWN": 0, "SETGID": 6, "SETUID": 7}


def _status(container, pid: int = 1) -> dict[str, str]:
    output = container.exec_run(["cat", f"/proc/{pid}/status"]).output.decode()
    return dict(line.split(":\t", 1) for line in output.splitlines() if ":\t" in line)


@pytest.mark.parametrize(
    "build",
    [
        lambda: builders.gateway_topology("nginx"),
        lambda: builders.sidecar_chain_topology(sidecars=True),
        lambda: builders.access_modes_topology(replicas=1),
    ],
    ids=["nginx-gateway", "envoy-sidecars", "haproxy-balancers"],
)
def test_containers_run_unprivileged_on_an_internal_network(netperf_docker: DockerRuntime, netperf_topology, build):
    running = netperf_topology(build())
    client = netperf_docker.client
    network = client.networks.get(running.network)
    assert network.attrs["Internal"] is True  # no route off the host ...
    for target in running.topology.targets:  # ... yet the host reaches every target
        endpoint = running.endpoint(target.name)
        if endpoint.runner is None:
            assert get(endpoint.url)[0] == 200, target.name
    containers = client.containers.list(filters={"label": f"{L.NETWORK}={running.network}"})
    assert len(containers) == len(running.topology.nodes)
    for container in containers:
        node = running.topology.node(container.labels[L.NODE])
        host_config = container.attrs["HostConfig"]
        expected = sorted(ROLE_CAPABILITIES[node.kind])
        assert host_config["CapDrop"] == ["ALL"], node.name
        assert sorted(host_config["CapAdd"] or []) == expected, node.name
        assert host_config["SecurityOpt"] == ["no-new-privileges"], node.name
        if node.pod_of is not None:
            assert host_config["NetworkMode"].startswith("container:"), node.name
        status = _status(container)
        assert status["NoNewPrivs"].strip() == "1", node.name
        assert int(status["CapEff"], 16) == sum(1 << _CAP_BITS[c] for c in expected), (node.name, status["CapEff"])
    nginx = [c for c in containers if running.topology.node(c.labels[L.NODE]).kind == "nginx"]
    for container in nginx:  # the workers that serve traffic keep nothing at all
        find = "for d in /proc/[0-9]*; do grep -qs '^nginx: worker process' $d/cmdline && echo ${d#/proc/}; done"
        pids = container.exec_run(["bash", "-c", find]).output.decode().split()
        assert pids and all(int(_status(container, int(pid))["CapEff"], 16) == 0 for pid in pids), pids


def test_the_in_network_driver_runs_unprivileged(access_modes: RunningTopology) -> None:
    runner = access_modes.endpoint("dns").runner
    assert runner is not None
    outcome = runner.run(["cat", "/proc/self/status"], timeout_s=20)
    status = dict(line.split(":\t", 1) for line in outcome.stdout.splitlines() if ":\t" in line)
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0 and status["NoNewPrivs"].strip() == "1"
