"""Builders for the seed scenarios: each returns a validated Topology."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pytest_netperf.topology.model import Node, Target, Topology
from pytest_netperf.topology.resources import Resources
from pytest_netperf.topology.tls import TlsTermination

ECHO_PORT = 8080
GATEWAY_PORT = 8000
BALANCER_PORT = 8080
ENVOY_INBOUND_PORT = 15006
ENVOY_OUTBOUND_PORT = 15001
#: Where a sidecar of the mTLS chain takes its peers' mutual TLS (Istio takes it on 15006 too,
#: beside cleartext; a port of its own keeps the driver's entry cleartext and explicit).
ENVOY_MTLS_PORT = 15443
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


GATEWAY_KINDS: tuple[str, ...] = ("nginx", "kong", "haproxy", "envoy")
#: The gateway node's name, also the name its TLS certificate carries (SNI and Host of ``gateway-tls``).
GATEWAY_NODE = "gw"


def gateway_topology(
    kind: Literal["nginx", "kong", "haproxy", "envoy"],
    workers: int = 1,
    upstream_keepalive: bool = True,
    tls: TlsTermination | Mapping[str, Any] | bool | None = None,
    upstream_http2: bool = False,
    max_concurrent_streams: int | None = None,
) -> Topology:
    """Echo behind one API gateway node ``gw`` (nginx, Kong, HAProxy or Envoy). Targets:
    ``direct`` (the echo server) and ``gateway``. ``upstream_keepalive=False`` is the sample
    regression: the gateway opens a new upstream connection per request (not Envoy, which
    always pools).

    ``tls`` (nginx, HAProxy and Envoy; True, a :class:`TlsTermination` or a dict such as
    ``{"key_type": "rsa-2048", "session_cache": False, "session_tickets": False}``) adds a TLS
    listener (port 8443 unless ``port`` says otherwise) with a certificate of the session's test
    CA, and the target ``gateway-tls`` (``https://``, SNI and Host ``gw``); the upstream
    stays cleartext. Envoy only: ``upstream_http2`` forwards over h2c (a gRPC route: the
    driver's ``grpc=True`` reaches the echo server's gRPC method through it), and
    ``max_concurrent_streams`` caps the streams of one client HTTP/2 connection.
    """
    if kind not in GATEWAY_KINDS:
        raise ValueError(f"gateway kind must be one of {', '.join(map(repr, GATEWAY_KINDS))}, got {kind!r}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    termination = None if tls is None or tls is False else TlsTermination.of(tls)
    if termination is not None and kind == "kong":
        raise ValueError("TLS termination is built for the nginx, HAProxy and Envoy gateways, not Kong")
    if kind != "envoy" and (upstream_http2 or max_concurrent_streams is not None):
        raise ValueError("upstream_http2 and max_concurrent_streams are built for the Envoy gateway")
    if kind == "envoy" and not upstream_keepalive:
        raise ValueError("the Envoy gateway always pools upstream connections (upstream_keepalive=False is not built)")
    if max_concurrent_streams is not None and (
        isinstance(max_concurrent_streams, bool)
        or not isinstance(max_concurrent_streams, int)
        or max_concurrent_streams < 1
    ):
        raise ValueError(f"max_concurrent_streams must be a positive integer, got {max_concurrent_streams!r}")
    params: dict[str, Any] = {"workers": workers}
    if kind == "envoy":
        params["upstream_http2"] = upstream_http2
        if max_concurrent_streams is not None:
            params["max_concurrent_streams"] = max_concurrent_streams
    else:
        params["upstream_keepalive"] = upstream_keepalive
    if kind == "haproxy":
        params.update(mode="http", nbthread=workers)
    if termination is not None:
        params["tls"] = termination
    echo = Node("echo", "echo", ECHO_PORT)
    gateway = Node(GATEWAY_NODE, kind, GATEWAY_PORT, upstreams=("echo",), params=params)
    suffix = "" if upstream_keepalive else "-no-upstream-keepalive"
    suffix += "-h2-upstream" if upstream_http2 else ""
    suffix += f"-streams{max_concurrent_streams}" if max_concurrent_streams is not None else ""
    targets = [Target("direct", "echo", ECHO_PORT), Target("gateway", GATEWAY_NODE, GATEWAY_PORT)]
    if termination is not None:
        suffix += _tls_suffix(termination)
        targets.append(Target("gateway-tls", GATEWAY_NODE, termination.port, scheme="https", host_header=GATEWAY_NODE))
    return _validated(Topology(f"gateway-{kind}-w{workers}{suffix}", (echo, gateway), tuple(targets)))


def _tls_suffix(tls: TlsTermination) -> str:
    """``-tls-rsa-2048-nocache-notickets``: the topology name tells the TLS variants apart."""
    return (
        f"-tls-{tls.key_type}"
        + ("" if tls.session_cache else "-nocache")
        + ("" if tls.session_tickets else "-notickets")
    )


def sidecar_chain_topology(sidecars: bool, mtls: bool = False) -> Topology:
    """Services ``svc-a`` and ``svc-b`` calling each other, optionally each with an
    Envoy sidecar in its pod. Target: ``entry``; the call depth is chosen per request
    with the echo server's ``?depth=N`` query parameter.

    ``mtls`` (with sidecars): the sidecars reach each other over mutual TLS and HTTP/2, each
    with a certificate of the session's test CA, as Istio's do; the driver still enters the
    first sidecar in cleartext (``entry``), so every hop between services is what the mesh
    adds; ``entry-mtls`` enters it as a mesh peer would, over mutual TLS (h2 by ALPN) with a
    client certificate of the test CA."""
    if mtls and not sidecars:
        raise ValueError("mtls is between sidecars: it needs sidecars=True")
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
                params={"tls": TlsTermination(port=ENVOY_MTLS_PORT, mutual=True)} if mtls else {},
            )
            for app, peer in peers.items()
        ]
    entry_port = ENVOY_INBOUND_PORT if sidecars else ECHO_PORT
    name = ("sidecar-chain-mtls" if mtls else "sidecar-chain") if sidecars else "plain-chain"
    targets = [Target("entry", "svc-a", entry_port)]
    if mtls:  # the driver as a mesh peer: mutual TLS into svc-a's sidecar, SNI and Host svc-a
        targets.append(Target("entry-mtls", "svc-a-proxy", ENVOY_MTLS_PORT, scheme="https", host_header="svc-a"))
    return _validated(Topology(name, tuple(nodes), tuple(targets)))


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
