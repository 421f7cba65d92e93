"""The same L4 server reached three ways, so "container network vs host" is a same-run ratio.

- ``container``: a driver container to the server container over the Docker bridge network
  (the pod-to-pod path of a container network plugin);
- ``host_to_container``: the host to the server container's bridge address (through the
  host's bridge and veth);
- ``host``: both ends in the host's network namespace (the server container runs with
  ``network_mode: host``, the driver on the host), over loopback: what "host network" means
  on one machine. Loopback's MTU is 64 KiB where the bridge's is 1500 bytes, which the
  packets-on-the-wire figures show.

Each path has an ``rr`` endpoint (``tcp://``, request/response against the echo server's raw
TCP echo) and an ``iperf3`` endpoint (``iperf3://``). Where the machine has two cores or more
the client runs on the first and the server on the last (:func:`core_pair`), like iperf3's
``-A``: whether a request/response crosses cores or not changes its latency several times
over (on a 2-vCPU VM, about 10 us on one core against about 70 us across two), so an
unpinned pair measures where the scheduler put them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Optional

from pytest_netperf.runtime.commands import LocalRunner
from pytest_netperf.runtime.endpoints import Endpoint
from pytest_netperf.runtime.runners import ContainerRunner
from pytest_netperf.runtime.running import RunningTopology

#: The fact every L4 row carries, naming its path.
PATH_FACT = "path"
#: The fact naming the client's and the server's cores.
CORES_FACT = "cores"


@dataclass(frozen=True)
class L4Path:
    """One way to the L4 server."""

    name: str
    description: str
    #: ``tcp://`` request/response against the echo server's raw TCP echo.
    rr: Endpoint
    #: ``iperf3://`` against the server's iperf3.
    iperf3: Endpoint


@dataclass(frozen=True)
class L4Paths:
    """The three paths to the same server (see the module docstring)."""

    container: L4Path
    host_to_container: L4Path
    host: L4Path

    def __iter__(self) -> Iterator[L4Path]:
        return iter((self.container, self.host_to_container, self.host))


def core_pair(cores: Optional[set[int]] = None) -> tuple[Optional[str], Optional[str]]:
    """``(client cpuset, server cpuset)``: the first and the last core this process may use;
    ``(None, None)`` on a single core."""
    usable = sorted(cores if cores is not None else os.sched_getaffinity(0))
    if len(usable) < 2:
        return None, None
    return str(usable[0]), str(usable[-1])


def l4_paths(
    bridge: RunningTopology,
    host_network: RunningTopology,
    client_cpus: Optional[str] = None,
    server_cpus: Optional[str] = None,
) -> L4Paths:
    """The paths over a running ``l4_topology()`` and ``l4_topology(host_network=True)``; the
    drivers run on ``client_cpus`` (the servers were started on ``server_cpus``)."""
    cores = {CORES_FACT: f"client {client_cpus}, server {server_cpus}"} if client_cpus else {}

    def path(name: str, description: str, running: RunningTopology, suffix: str) -> L4Path:
        def endpoint(target: str) -> Endpoint:
            found = running.endpoint(target + suffix)
            runner = found.runner
            if client_cpus and isinstance(runner, ContainerRunner):
                runner = runner.pinned(client_cpus)
            elif client_cpus and runner is None:
                runner = LocalRunner(cpus=client_cpus)
            return replace(found, runner=runner, facts={**found.facts, PATH_FACT: description, **cores})

        return L4Path(name, description, endpoint("rr"), endpoint("iperf3"))

    return L4Paths(
        container=path("container", "container to container over the Docker bridge", bridge, "-net"),
        host_to_container=path("host-to-container", "host to a container's bridge address", bridge, ""),
        host=path("host", "host network (server with network_mode host, loopback)", host_network, ""),
    )
