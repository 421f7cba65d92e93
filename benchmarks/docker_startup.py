"""Startup time of each seed topology in Docker (images must exist: `netperf images build`).

Usage: python benchmarks/docker_startup.py [--rounds 3]
Prints min / median / max seconds from `DockerRuntime.up()` call to every node answering
its readiness probe. Everything started is removed, also on failure.
"""

from __future__ import annotations

import argparse
import statistics
import uuid

from pytest_netperf.images.resolve import resolve_image
from pytest_netperf.runtime.cleanup import clean_session
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, choices=range(1, 11), metavar="1..10")
    rounds = parser.parse_args().rounds
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


if __name__ == "__main__":
    main()
