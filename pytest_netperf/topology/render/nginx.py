"""nginx reverse-proxy config for a gateway node (params: workers, upstream_keepalive,
keepalive_connections, worker_connections, tls)."""

from __future__ import annotations

from pytest_netperf.topology.model import Node, Topology
from pytest_netperf.topology.tls import CA_PATH, CERT_PATH, KEY_PATH, TlsTermination

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
{_tls_lines(node.tls)}
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


def _tls_lines(tls: TlsTermination | None) -> str:
    """The TLS listener of the server block (empty without ``params["tls"]``): the certificate
    of the session's test CA, TLS 1.2 and 1.3, session cache and tickets as asked, and client
    certificates of that CA required when it is mutual."""
    if tls is None:
        return ""
    cache = "shared:netperf_tls:10m" if tls.session_cache else "off"
    tickets = "on" if tls.session_tickets else "off"
    mutual = f"        ssl_client_certificate {CA_PATH};\n        ssl_verify_client on;\n" if tls.mutual else ""
    return f"""\
        # {tls.describe()}
        listen {tls.port} ssl backlog=4096;
        ssl_certificate {CERT_PATH};
        ssl_certificate_key {KEY_PATH};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache {cache};
        ssl_session_timeout 10m;
        ssl_session_tickets {tickets};
{mutual}"""
