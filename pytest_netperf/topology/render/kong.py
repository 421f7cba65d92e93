"""Kong DB-less declarative config and environment for a gateway node (params: workers,
upstream_keepalive, plugins [{"name":..., "config":{...}}], via_header, env).

The config is rendered as JSON, which Kong reads as YAML.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_netperf.topology.model import Node, Topology

CONFIG_PATH = "/netperf/kong.yml"


def kong_command() -> list[str]:
    """The official image's own start command (prepares the prefix, nginx in foreground)."""
    return ["kong", "docker-start"]


def render_kong(topology: Topology, node: Node) -> str:
    """The declarative kong.yml (JSON): one upstream of the node's upstreams, one service,
    one catch-all route, plus the plugins the params ask for."""
    if not node.upstreams:
        raise ValueError(f"kong node {node.name!r} has no upstreams")
    plugins = [dict(p) for p in node.params.get("plugins", ())]
    if node.params.get("via_header", True):
        plugins.append(
            {"name": "response-transformer", "config": {"append": {"headers": [f"x-netperf-via:{node.name}"]}}}
        )
    service: dict[str, Any] = {
        "name": "echo",
        "protocol": "http",
        "host": "echo-upstream",
        "port": topology.node(node.upstreams[0]).port,
        "connect_timeout": 2000,
        "read_timeout": 30000,
        "write_timeout": 30000,
        "retries": 0,
        "routes": [{"name": "all", "protocols": ["http"], "paths": ["/"], "strip_path": False, "preserve_host": True}],
    }
    if plugins:
        service["plugins"] = plugins
    config = {
        "_format_version": "3.0",
        "upstreams": [
            {
                "name": "echo-upstream",
                "algorithm": "round-robin",
                "targets": [
                    {"target": f"{topology.dns_name(u)}:{topology.node(u).port}", "weight": 100} for u in node.upstreams
                ],
            }
        ],
        "services": [service],
    }
    return json.dumps(config, indent=2) + "\n"


def kong_environment(node: Node) -> dict[str, str]:
    """Environment for the official Kong image: DB-less, proxy on the node's port,
    admin API pod-local, logs to stderr, no access log, no usage reports."""
    keepalive = bool(node.params.get("upstream_keepalive", True))
    env = {
        "KONG_DATABASE": "off",
        "KONG_DECLARATIVE_CONFIG": CONFIG_PATH,
        "KONG_PROXY_LISTEN": f"0.0.0.0:{node.port}",
        "KONG_ADMIN_LISTEN": "127.0.0.1:8001",
        "KONG_STATUS_LISTEN": "off",
        "KONG_NGINX_WORKER_PROCESSES": str(int(node.params.get("workers", 1))),
        "KONG_PROXY_ACCESS_LOG": "off",
        "KONG_ADMIN_ACCESS_LOG": "off",
        "KONG_PROXY_ERROR_LOG": "/dev/stderr",
        "KONG_ADMIN_ERROR_LOG": "/dev/stderr",
        "KONG_LOG_LEVEL": "warn",
        "KONG_ANONYMOUS_REPORTS": "off",
        "KONG_NGINX_HTTP_KEEPALIVE_REQUESTS": "1000000",
        "KONG_UPSTREAM_KEEPALIVE_MAX_REQUESTS": "1000000",
        # 0 disables Kong's upstream keep-alive pool: the sample regression.
        "KONG_UPSTREAM_KEEPALIVE_POOL_SIZE": "60" if keepalive else "0",
    }
    env.update({str(k): str(v) for k, v in node.params.get("env", {}).items()})
    return env
