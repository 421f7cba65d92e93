"""HAProxy config for a balancer node (params: mode "http"|"tcp", discover <alias>,
nbthread, maxconn, balance, server_maxconn, queue_timeout, upstream_keepalive, tls)."""

from __future__ import annotations

from pytest_netperf.topology.model import Node, Topology
from pytest_netperf.topology.tls import BUNDLE_PATH, CA_PATH, TlsTermination

CONFIG_PATH = "/netperf/haproxy.cfg"
DOCKER_DNS = "127.0.0.11:53"
HEALTH_PATH = "/healthz"


def haproxy_command() -> list[str]:
    """HAProxy in the foreground (-db) with the rendered config."""
    return ["haproxy", "-db", "-f", CONFIG_PATH]


def render_haproxy(topology: Topology, node: Node) -> str:
    """The complete haproxy.cfg for ``node``: one frontend, one health-checked backend."""
    if not node.upstreams:
        raise ValueError(f"haproxy node {node.name!r} has no upstreams")
    params = node.params
    mode = params.get("mode", "http")
    if mode not in ("http", "tcp"):
        raise ValueError(f"haproxy node {node.name!r}: mode must be 'http' or 'tcp'")
    maxconn = int(params.get("maxconn", 20000))
    discover = params.get("discover")
    global_maxconn = int(params["maxconn"]) if "maxconn" in params else None
    if node.tls is not None and mode != "http":
        raise ValueError(f"haproxy node {node.name!r}: TLS termination needs mode 'http'")
    sections = [
        _global(topology, node, global_maxconn, int(params.get("nbthread", 1)), node.tls),
        _defaults(maxconn, params.get("queue_timeout")),
    ]
    if discover:
        sections.append(_resolvers())
    sections.append(_frontend(node, mode))
    sections.append(_backend(topology, node, mode, params.get("balance", "roundrobin"), discover))
    return "\n".join(sections)


def _global(
    topology: Topology, node: Node, maxconn: int | None, nbthread: int, tls: TlsTermination | None = None
) -> str:
    # Without an explicit maxconn HAProxy sizes it from the open-files limit it gets;
    # a fixed 20000 needs ~40k descriptors and fails where Docker grants fewer.
    limit = f"\n    maxconn {maxconn}" if maxconn is not None else ""
    # The session cache is global in HAProxy: size 0 switches it off (tickets: on the bind line).
    cache = "" if tls is None or tls.session_cache else "\n    tune.ssl.cachesize 0"
    return f"""\
# Rendered by pytest-netperf for node {node.name} (topology {topology.name}).
global{limit}
    nbthread {nbthread}
    log stderr format raw local0 warning{cache}
"""


def _defaults(maxconn: int, queue_timeout: str | None) -> str:
    # Requests wait for a free server slot at most `timeout queue` (default: timeout connect),
    # then HAProxy answers 503: the overload behaviour the access-modes study measured.
    queue = f"\n    timeout queue {queue_timeout}" if queue_timeout else ""
    return f"""\
defaults
    maxconn {maxconn}{queue}
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout http-request 10s
    timeout http-keep-alive 30s
    timeout check 2s
"""


def _resolvers() -> str:
    return f"""\
# Docker's embedded DNS; backends are discovered by name, re-resolved at run time.
resolvers docker
    nameserver dns {DOCKER_DNS}
    accepted_payload_size 8192
    resolve_retries 3
    timeout resolve 1s
    timeout retry 1s
    hold valid 5s
    hold obsolete 5s
"""


def _frontend(node: Node, mode: str) -> str:
    lines = [f"frontend fe_{node.name}", f"    mode {mode}", f"    bind :{node.port}"]
    tls = node.tls
    if tls is not None:
        tickets = "" if tls.session_tickets else " no-tls-tickets"
        tickets += f" verify required ca-file {CA_PATH}" if tls.mutual else ""
        lines += [
            f"    # {tls.describe()}",
            f"    bind :{tls.port} ssl crt {BUNDLE_PATH} alpn http/1.1 ssl-min-ver TLSv1.2{tickets}",
        ]
    if mode == "http":
        lines += ["    option http-keep-alive", f"    http-response add-header x-netperf-via {node.name}"]
    lines.append("    default_backend be_upstreams")
    return "\n".join(lines) + "\n"


def _backend(topology: Topology, node: Node, mode: str, balance: str, discover: str | None) -> str:
    lines = ["backend be_upstreams", f"    mode {mode}", f"    balance {balance}"]
    if mode == "http":
        # upstream_keepalive=False: a new server connection per request (the sample regression)
        keepalive = node.params.get("upstream_keepalive", True)
        lines.append("    option http-keep-alive" if keepalive else "    option http-server-close")
    # Health goes through the same path the load takes: the backends' own /healthz.
    lines += [
        "    option httpchk",
        f"    http-check send meth GET uri {HEALTH_PATH} ver HTTP/1.1 hdr Host {node.name}",
        "    http-check expect status 200",
    ]
    ports = {topology.node(u).port for u in node.upstreams}
    if discover:
        _check_discoverable(topology, node, discover, ports)
        count = len(node.upstreams)
        lines.append(
            f"    server-template echo 1-{count} {discover}:{ports.pop()} check "
            "resolvers docker init-addr none resolve-prefer ipv4"
        )
    else:
        limit = f" maxconn {int(node.params['server_maxconn'])}" if "server_maxconn" in node.params else ""
        lines += [f"    server {u} {topology.dns_name(u)}:{topology.node(u).port} check{limit}" for u in node.upstreams]
    return "\n".join(lines) + "\n"


def _check_discoverable(topology: Topology, node: Node, alias: str, ports: set[int]) -> None:
    missing = [u for u in node.upstreams if alias not in topology.node(u).aliases]
    if missing:
        raise ValueError(
            f"haproxy node {node.name!r} discovers {alias!r}, but {', '.join(missing)} do not carry that alias"
        )
    if len(ports) != 1:
        raise ValueError(f"haproxy node {node.name!r}: discovered backends must share one port")
