"""Builders for the seed scenarios: each returns a validated Topology."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pytest_netperf.topology.model import Node, Target, Topology
from pytest_netperf.topology.resources import Resources

ECHO_PORT = 8080
GATEWAY_PORT = 8000
BALANCER_PORT = 8080
ENVOY_INBOUND_PORT = 15006
ENVOY_OUTBOUND_PORT = 15001
ECHO_SERVICE_ALIAS = "echo-svc"


def _validated(topology: Topology) -> Topology:
    topology.validate()
    return topology


def echo_topology(replicas: int = 1, delay: str | None = None) -> Topology:
    """Echo servers alone. One replica is node ``echo``; more are ``echo-1..N``
    sharing the alias ``echo-svc``. Target ``direct`` is the (first) echo server;
    ``delay`` (e.g. ``"2ms"``) goes into the target path as the echo server's
    ``?delay=`` query parameter, so each answer waits that long."""
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    if replicas == 1:
        nodes: tuple[Node, ...] = (Node("echo", "echo", ECHO_PORT),)
    else:
        nodes = tuple(
            Node(f"echo-{i}", "echo", ECHO_PORT, aliases=(ECHO_SERVICE_ALIAS,)) for i in range(1, replicas + 1)
        )
    path = f"/?delay={delay}" if delay else "/"
    return _validated(Topology(f"echo-x{replicas}", nodes, (Target("direct", nodes[0].name, ECHO_PORT, path=path),)))


def gateway_topology(kind: Literal["nginx", "kong"], workers: int = 1, upstream_keepalive: bool = True) -> Topology:
    """Echo behind one API gateway node ``gw`` (nginx or Kong). Targets: ``direct``
    (the echo server) and ``gateway``. ``upstream_keepalive=False`` is the sample
    regression: the gateway opens a new upstream connection per request."""
    if kind not in ("nginx", "kong"):
        raise ValueError(f"gateway kind must be 'nginx' or 'kong', got {kind!r}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    echo = Node("echo", "echo", ECHO_PORT)
    gateway = Node(
        "gw",
        kind,
        GATEWAY_PORT,
        upstreams=("echo",),
        params={"workers": workers, "upstream_keepalive": upstream_keepalive},
    )
    suffix = "" if upstream_keepalive else "-no-upstream-keepalive"
    return _validated(
        Topology(
            f"gateway-{kind}-w{workers}{suffix}",
            (echo, gateway),
            (Target("direct", "echo", ECHO_PORT), Target("gateway", "gw", GATEWAY_PORT)),
        )
    )


def sidecar_chain_topology(sidecars: bool) -> Topology:
    """Services ``svc-a`` and ``svc-b`` calling each other, optionally each with an
    Envoy sidecar in its pod. Target: ``entry``; the call depth is chosen per request
    with the echo server's ``?depth=N`` query parameter."""
    peers = {"svc-a": "svc-b", "svc-b": "svc-a"}
    nodes: list[Node] = []
    for app, peer in peers.items():
        if sidecars:
            nodes.append(
                Node(
                    app,
                    "echo",
                    ECHO_PORT,
                    upstreams=(f"{app}-proxy",),
                    params={"next_url": f"http://127.0.0.1:{ENVOY_OUTBOUND_PORT}"},
                )
            )
        else:
            nodes.append(
                Node(app, "echo", ECHO_PORT, upstreams=(peer,), params={"next_url": f"http://{peer}:{ECHO_PORT}"})
            )
    if sidecars:
        nodes += [
            Node(
                f"{app}-proxy",
                "envoy",
                ENVOY_INBOUND_PORT,
                upstreams=(app, f"{peer}-proxy"),
                pod_of=app,
                extra_ports=(ENVOY_OUTBOUND_PORT,),
            )
            for app, peer in peers.items()
        ]
    entry_port = ENVOY_INBOUND_PORT if sidecars else ECHO_PORT
    name = "sidecar-chain" if sidecars else "plain-chain"
    return _validated(Topology(name, tuple(nodes), (Target("entry", "svc-a", entry_port),)))


def access_modes_topology(
    replicas: int = 3, l7_params: Mapping[str, Any] | None = None, name: str | None = None
) -> Topology:
    """Echo replicas ``echo-1..N`` (alias ``echo-svc``) reached five ways: ``link``
    (address), ``dns`` (name, driver in-network), ``discovery`` (HAProxy resolving
    ``echo-svc`` through Docker DNS), ``l7`` (HAProxy http) and ``l4`` (HAProxy tcp).
    ``l7_params`` adds HAProxy knobs to the L7 balancer (e.g. ``server_maxconn``,
    ``queue_timeout`` for an overload case)."""
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    echoes = tuple(Node(f"echo-{i}", "echo", ECHO_PORT, aliases=(ECHO_SERVICE_ALIAS,)) for i in range(1, replicas + 1))
    backends = tuple(e.name for e in echoes)
    balancers = (
        Node(
            "discovery",
            "haproxy",
            BALANCER_PORT,
            upstreams=backends,
            params={"mode": "http", "discover": ECHO_SERVICE_ALIAS},
        ),
        Node("l7", "haproxy", BALANCER_PORT, upstreams=backends, params={"mode": "http", **dict(l7_params or {})}),
        Node("l4", "haproxy", BALANCER_PORT, upstreams=backends, params={"mode": "tcp"}),
    )
    targets = (
        Target("link", "echo-1", ECHO_PORT),
        Target("dns", "echo-1", ECHO_PORT, via_dns=True),
        *(Target(b.name, b.name, BALANCER_PORT) for b in balancers),
    )
    return _validated(Topology(name or f"access-modes-x{replicas}", echoes + balancers, targets))


L4_SERVER = "l4"
L4_IPERF3 = "l4-iperf3"
TCP_ECHO_PORT = 7007
IPERF3_PORT = 5201


def l4_topology(
    host_network: bool = False,
    ports: tuple[int, int, int] | None = None,
    name: str | None = None,
    server_cpus: str | None = None,
) -> Topology:
    """One L4 server: the echo server (node ``l4``) with raw TCP echo, and an iperf3 server
    in its pod (node ``l4-iperf3``, same network namespace).

    On a bridge network (default) the targets are ``rr`` (``tcp://`` request/response) and
    ``iperf3`` for a driver on the host, and ``rr-net``/``iperf3-net`` for a driver in a
    container on the network. With ``host_network`` both run in the host's namespace and
    ``rr``/``iperf3`` are reached at 127.0.0.1; ``ports`` (HTTP, TCP echo, iperf3) must then
    be free on the host. ``server_cpus`` (a cpuset such as ``"1"``) pins both servers.
    """
    http_port, echo_port, iperf3_port = ports or (ECHO_PORT, TCP_ECHO_PORT, IPERF3_PORT)
    pinned = Resources(cpuset=server_cpus) if server_cpus else None
    server = Node(
        L4_SERVER,
        "echo",
        http_port,
        params={"tcp_echo_port": echo_port},
        host_network=host_network,
        resources=pinned,
    )
    iperf3 = Node(L4_IPERF3, "iperf3", iperf3_port, pod_of=L4_SERVER, resources=pinned)
    targets = [
        Target("rr", L4_SERVER, echo_port, scheme="tcp"),
        Target("iperf3", L4_IPERF3, iperf3_port, scheme="iperf3"),
    ]
    if not host_network:
        targets += [
            Target("rr-net", L4_SERVER, echo_port, scheme="tcp", via_dns=True),
            Target("iperf3-net", L4_IPERF3, iperf3_port, scheme="iperf3", via_dns=True),
        ]
    default_name = "l4-host-network" if host_network else "l4-bridge"
    return _validated(Topology(name or default_name, (server, iperf3), tuple(targets)))
