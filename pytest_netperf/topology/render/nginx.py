"""nginx reverse-proxy config for a gateway node (params: workers, upstream_keepalive,
keepalive_connections, worker_connections)."""

from __future__ import annotations

from pytest_netperf.topology.model import Node, Topology

CONFIG_PATH = "/netperf/nginx.conf"
TEMP_PREFIX = "/tmp/nginx-"
_TEMP_KINDS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def nginx_command() -> list[str]:
    """Foreground nginx with early errors on stderr (no default log path opened)."""
    return ["nginx", "-e", "stderr", "-c", CONFIG_PATH]


def render_nginx(topology: Topology, node: Node) -> str:
    """The complete nginx.conf for ``node``: proxies every path to its upstreams."""
    if not node.upstreams:
        raise ValueError(f"nginx node {node.name!r} has no upstreams")
    params = node.params
    workers = int(params.get("workers", 1))
    keepalive = bool(params.get("upstream_keepalive", True))
    # The idle pool must cover the client concurrency: a pool smaller than the number of
    # concurrent requests closes and reopens upstream connections all the time, and at tens
    # of thousands of requests/s the TIME_WAIT sockets exhaust the ephemeral ports (502s).
    pool = int(params.get("keepalive_connections", 1024))
    servers = "\n".join(f"        server {topology.dns_name(u)}:{topology.node(u).port};" for u in node.upstreams)
    temp_paths = "\n".join(f"    {kind}_temp_path {TEMP_PREFIX}{kind};" for kind in _TEMP_KINDS)
    if keepalive:
        pool_lines = f"        keepalive {pool};\n        keepalive_requests 1000000;\n        keepalive_timeout 60s;\n"
        connection = '""'
        note = "upstream keep-alive: HTTP/1.1, pooled connections"
    else:
        pool_lines = ""
        connection = "close"
        note = "upstream keep-alive DISABLED: one new upstream connection per request"
    return f"""\
# Rendered by pytest-netperf for node {node.name} (topology {topology.name}).
# Runs as any user: pid and temp files live under /tmp; no access log.
daemon off;
worker_processes {workers};
pid /tmp/nginx-{node.name}.pid;
error_log stderr warn;

events {{
    worker_connections {int(params.get("worker_connections", 4096))};
}}

http {{
    access_log off;
    server_tokens off;
{temp_paths}
    keepalive_timeout 75s;
    keepalive_requests 1000000;

    # {note}
    upstream backend {{
{servers}
{pool_lines}    }}

    server {{
        listen {node.port} backlog=4096;

        location / {{
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection {connection};
            proxy_set_header Host $host;
            proxy_connect_timeout 2s;
            proxy_read_timeout 30s;
            proxy_send_timeout 30s;
            add_header x-netperf-via {node.name} always;
        }}
    }}
}}
"""
