"""Start waves: which containers of a topology may start together (pure; no Docker contacted)."""

from __future__ import annotations

from pytest_netperf import access_modes_topology, gateway_topology, sidecar_chain_topology
from pytest_netperf.runtime.docker import start_waves
from pytest_netperf.topology.model import Node, Target, Topology
from pytest_netperf.topology.render import container_specs


def _waves(topology: Topology) -> list[list[str]]:
    return [[spec.node for spec in wave] for wave in start_waves(topology, container_specs(topology))]


def test_gateway_starts_after_its_upstream() -> None:
    assert _waves(gateway_topology("nginx")) == [["echo"], ["gw"]]


def test_replicas_start_together_and_balancers_after_them() -> None:
    assert _waves(access_modes_topology(3)) == [["echo-1", "echo-2", "echo-3"], ["discovery", "l7", "l4"]]


def test_sidecars_start_after_their_pod_root() -> None:
    waves = _waves(sidecar_chain_topology(True))
    first = waves[0]
    assert sorted(first) == ["svc-a", "svc-b"]
    later = [node for wave in waves[1:] for node in wave]
    assert sorted(later) == ["svc-a-proxy", "svc-b-proxy"]


def test_every_node_lands_in_exactly_one_wave_after_its_needs() -> None:
    topology = Topology(
        "deep",
        (
            Node("echo", "echo", 8080),
            Node("inner", "nginx", 8000, upstreams=("echo",)),
            Node("outer", "nginx", 8001, upstreams=("inner",)),
            Node("side", "envoy", 15006, upstreams=("outer",), pod_of="outer", extra_ports=(15001,)),
        ),
        (Target("t", "outer", 8001),),
    )
    assert _waves(topology) == [["echo"], ["inner"], ["outer"], ["side"]]
