"""Startup time of each seed topology and of a Compose stack in Docker (images must exist:
`netperf images build`; the Compose stack also needs `docker compose` or `docker-compose`).

Usage: python benchmarks/docker_startup.py [--rounds 3] [--only topologies|compose]
Topologies: min / median / max seconds from `DockerRuntime.up()` call to every node answering
its readiness probe. Compose (nginx from the local image under the mapping
nginx:1.27=pytest-netperf/nginx:local, with its config file mounted, in front of the echo
app): median seconds of each phase, `config`, override + build, `up`, readiness (running,
healthy, the endpoint's port answering) and `down`. Everything started is removed, also on
failure.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from pytest_netperf.engine.client import docker_client
from pytest_netperf.images.resolve import resolve_image
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.compose.cli import find_compose
from pytest_netperf.runtime.compose.launcher import ComposeLauncher, StackSpec
from pytest_netperf.runtime.docker import DockerRuntime
from pytest_netperf.topology import builders

SCENARIOS = {
    "echo x1": lambda: builders.echo_topology(1),
    "echo x3": lambda: builders.echo_topology(3),
    "gateway nginx": lambda: builders.gateway_topology("nginx"),
    "chain with sidecars": lambda: builders.sidecar_chain_topology(True),
    "chain without sidecars": lambda: builders.sidecar_chain_topology(False),
    "access modes x3": lambda: builders.access_modes_topology(3),
}
COMPOSE = """\
services:
  edge:
    image: nginx:1.27
    command: ["nginx", "-g", "daemon off;", "-c", "/etc/netperf/nginx.conf"]
    volumes: ["./nginx/edge.conf:/etc/netperf/nginx.conf:ro"]
    depends_on: [app]
    expose: ["80"]
  app:
    image: pytest-netperf/echo:local
    command: ["netperf-driver", "echo", "--listen", "0.0.0.0:8080"]
    expose: ["8080"]
"""
NGINX_CONF = """\
worker_processes 1;
events { worker_connections 1024; }
http {
  access_log off;
  upstream app { server app:8080; keepalive 16; }
  server { listen 80; location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
"""
PHASES = ("config", "build", "up", "ready", "down", "total")


def topologies(rounds: int) -> None:
    session = f"bench{uuid.uuid4().hex[:6]}"
    runtime = DockerRuntime(session, {"echo": resolve_image("echo")})
    try:
        print(f"{'topology':24} {'min':>6} {'median':>7} {'max':>6}  (seconds, {rounds} rounds)")
        for name, build in SCENARIOS.items():
            times = []
            for _ in range(rounds):
                with runtime.up(build()) as running:
                    times.append(running.startup_s)
            print(f"{name:24} {min(times):6.2f} {statistics.median(times):7.2f} {max(times):6.2f}")
    finally:
        runtime.down_all()
        clean_session(session, runtime.client)


def compose(rounds: int) -> None:
    cli = find_compose()
    client = docker_client()
    session = f"bench{uuid.uuid4().hex[:6]}"
    launcher = ComposeLauncher(cli, client, session, image_overrides={"nginx:1.27": "pytest-netperf/nginx:local"})
    samples: dict[str, list[float]] = {phase: [] for phase in PHASES}
    with tempfile.TemporaryDirectory(prefix="netperf-bench-") as folder:
        (Path(folder) / "nginx").mkdir()
        (Path(folder) / "nginx" / "edge.conf").write_text(NGINX_CONF)
        (Path(folder) / "docker-compose.yml").write_text(COMPOSE)
        try:
            for _ in range(rounds):
                began = time.monotonic()
                stack = launcher.up(StackSpec.build(Path(folder) / "docker-compose.yml"))
                try:
                    probe = time.monotonic()
                    stack.endpoint("edge")
                    endpoint_s = time.monotonic() - probe
                finally:
                    stack.down()
                timings = dict(stack.timings)
                timings["ready"] = timings.get("ready", 0.0) + endpoint_s
                timings["total"] = time.monotonic() - began
                for phase in PHASES:
                    samples[phase].append(timings.get(phase, 0.0))
        finally:
            clean_session(session, client)
    print(f"\ncompose stack nginx + echo via {cli.describe()}, median of {rounds} rounds (seconds):")
    print("  ".join(f"{phase} {statistics.median(values):.2f}" for phase, values in samples.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, choices=range(1, 11), metavar="1..10")
    parser.add_argument("--only", choices=("topologies", "compose"))
    args = parser.parse_args()
    if args.only != "compose":
        topologies(args.rounds)
    if args.only != "topologies":
        compose(args.rounds)


if __name__ == "__main__":
    main()
