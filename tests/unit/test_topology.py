"""Topology model and scenario builders: wiring, start order, validation errors."""

from __future__ import annotations

from typing import Literal

import pytest

from pytest_netperf import (
    Node,
    Target,
    Topology,
    access_modes_topology,
    echo_topology,
    gateway_topology,
    sidecar_chain_topology,
)


def test_echo_topology_single_and_replicated() -> None:
    single = echo_topology()
    assert [n.name for n in single.nodes] == ["echo"]
    assert single.target("direct") == Target("direct", "echo", 8080)
    many = echo_topology(replicas=3, delay="2ms")
    assert [n.name for n in many.nodes] == ["echo-1", "echo-2", "echo-3"]
    assert all(n.aliases == ("echo-svc",) for n in many.nodes)
    assert many.target("direct").path == "/?delay=2ms"
    with pytest.raises(ValueError, match="replicas"):
        echo_topology(replicas=0)


@pytest.mark.parametrize("kind", ["nginx", "kong"])
def test_gateway_topology_wiring(kind: Literal["nginx", "kong"]) -> None:
    topo = gateway_topology(kind, workers=2, upstream_keepalive=False)
    gateway = topo.node("gw")
    assert gateway.kind == kind and gateway.upstreams == ("echo",)
    assert gateway.params == {"workers": 2, "upstream_keepalive": False}
    assert topo.target("direct").node == "echo"
    assert (topo.target("gateway").node, topo.target("gateway").port) == ("gw", gateway.port)
    assert [n.name for n in topo.start_order()] == ["echo", "gw"]
    assert topo.name != gateway_topology(kind, workers=2).name


def test_gateway_topology_rejects_unknown_kind_and_workers() -> None:
    with pytest.raises(ValueError, match="gateway kind"):
        gateway_topology("traefik")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="workers"):
        gateway_topology("nginx", workers=0)


def test_sidecar_chain_without_sidecars_calls_peer_directly() -> None:
    topo = sidecar_chain_topology(sidecars=False)
    assert {n.kind for n in topo.nodes} == {"echo"}
    assert topo.node("svc-a").params["next_url"] == "http://svc-b:8080"
    assert topo.node("svc-b").params["next_url"] == "http://svc-a:8080"
    assert (topo.target("entry").node, topo.target("entry").port) == ("svc-a", 8080)


def test_sidecar_chain_with_sidecars_goes_through_pod_proxies() -> None:
    topo = sidecar_chain_topology(sidecars=True)
    proxy = topo.node("svc-a-proxy")
    assert (proxy.kind, proxy.pod_of, proxy.port, proxy.extra_ports) == ("envoy", "svc-a", 15006, (15001,))
    assert proxy.upstreams == ("svc-a", "svc-b-proxy")
    assert topo.node("svc-a").params["next_url"] == "http://127.0.0.1:15001"
    assert (topo.target("entry").node, topo.target("entry").port) == ("svc-a", 15006)
    assert topo.dns_name("svc-b-proxy") == "svc-b"
    assert [n.name for n in topo.pod_members("svc-a-proxy")] == ["svc-a", "svc-a-proxy"]
    order = [n.name for n in topo.start_order()]
    assert sorted(order) == sorted(n.name for n in topo.nodes)
    for sidecar, app in (("svc-a-proxy", "svc-a"), ("svc-b-proxy", "svc-b")):
        assert order.index(app) < order.index(sidecar)


def test_access_modes_topology_targets() -> None:
    topo = access_modes_topology(replicas=4)
    assert [t.name for t in topo.targets] == ["link", "dns", "discovery", "l7", "l4"]
    assert topo.target("dns").via_dns and not topo.target("link").via_dns
    assert topo.target("dns").node == topo.target("link").node == "echo-1"
    assert topo.node("discovery").params == {"mode": "http", "discover": "echo-svc"}
    assert topo.node("l4").params["mode"] == "tcp"
    assert topo.node("l7").upstreams == ("echo-1", "echo-2", "echo-3", "echo-4")
    order = [n.name for n in topo.start_order()]
    assert max(order.index(f"echo-{i}") for i in range(1, 5)) < order.index("discovery")


def test_lookup_errors_name_the_known_entries() -> None:
    topo = echo_topology()
    with pytest.raises(KeyError, match="nodes: echo"):
        topo.node("nope")
    with pytest.raises(KeyError, match="targets: direct"):
        topo.target("nope")


def _topo(*nodes: Node, targets: tuple[Target, ...] = ()) -> Topology:
    return Topology("t", nodes, targets)


@pytest.mark.parametrize(
    "topology, message",
    [
        (_topo(Node("a", "echo", 80), Node("a", "echo", 81)), "duplicate node name 'a'"),
        (_topo(Node("a", "nginx", 80, upstreams=("ghost",))), "unknown node 'ghost'"),
        (_topo(Node("a", "nginx", 80, upstreams=("a",))), "forwards to itself"),
        (_topo(Node("a", "echo", 80, pod_of="b"), Node("b", "envoy", 81, pod_of="a")), "pod_of cycle"),
        (_topo(Node("a", "echo", 80, pod_of="ghost")), "pod_of unknown node 'ghost'"),
        (_topo(Node("a", "echo", 80), Node("p", "envoy", 80, pod_of="a")), "port 80 used twice in pod 'a'"),
        (_topo(Node("a", "echo", 80), targets=(Target("x", "ghost", 80),)), "unknown node 'ghost'"),
        (_topo(Node("a", "echo", 80), targets=(Target("x", "a", 81),)), "nothing listens on a:81"),
        (
            _topo(Node("a", "echo", 80), targets=(Target("x", "a", 80), Target("x", "a", 80))),
            "duplicate target name 'x'",
        ),
        (_topo(Node("Bad_Name", "echo", 80)), "not a lower-case DNS label"),
        (_topo(Node("a", "echo", 0)), "outside 1..65535"),
        (_topo(Node("a", "squid", 80)), "unknown kind 'squid'"),  # type: ignore[arg-type]
        (_topo(Node("a", "echo", 80), Node("b", "echo", 80, aliases=("a",))), "also a node name"),
    ],
)
def test_validate_reports_structural_errors(topology: Topology, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        topology.validate()


def test_validate_accepts_sidecar_target_on_pod_port_and_shared_aliases() -> None:
    topo = _topo(
        Node("a", "echo", 80, aliases=("svc",)),
        Node("b", "echo", 80, aliases=("svc",)),
        Node("p", "envoy", 15006, pod_of="a", upstreams=("a",)),
        targets=(Target("entry", "a", 15006),),
    )
    topo.validate()
    assert topo.target("entry").port in topo.node("p").ports


def test_start_order_refuses_a_pod_cycle() -> None:
    looped = _topo(Node("a", "echo", 80, pod_of="b"), Node("b", "envoy", 81, pod_of="a"))
    with pytest.raises(ValueError, match="pod_of cycle"):
        looped.start_order()
