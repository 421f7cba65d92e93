"""Where a driver sends load (Endpoint) and whether that address is still this session's (TopologyGuard)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from docker import DockerClient
from docker.errors import APIError, NotFound

from pytest_netperf.engine import labels as L
from pytest_netperf.runtime.commands import CommandRunner
from pytest_netperf.runtime.costs import SystemProbe
from pytest_netperf.runtime.counting_clone import NodeCounter
from pytest_netperf.runtime.wire import WireProbe
from pytest_netperf.tls_options import TlsOptions

__all__ = ["Endpoint", "TopologyGuard"]


@dataclass(frozen=True)
class TopologyGuard:
    """Checks that a target's address still belongs to this session's running topology.

    Two Docker API calls: inspect the network (by the id it was created with: a network
    re-created under the same name does not pass) and inspect the target's container.
    """

    client: DockerClient = field(repr=False, compare=False)
    topology: str
    network: str
    network_id: str
    #: session, pid and host labels the network and container must still carry
    labels: Mapping[str, str] = field(compare=False)
    node: str
    container_id: str
    #: the pod root's container: it holds the address (itself unless the node is a sidecar)
    root_container_id: str
    #: names that resolve to the pod root on the network (node name and aliases)
    names: tuple[str, ...] = ()
    #: the pod root runs on the host network: reached at 127.0.0.1, no bridge address to check
    host_network: bool = False

    def check(self, url: str) -> str | None:
        """None when load to ``url`` reaches this topology; otherwise why it would not."""
        host = urlsplit(url).hostname or ""
        if self.host_network:
            return self._container_problem()
        try:
            network = self.client.api.inspect_network(self.network_id)
        except NotFound:
            return (
                f"network {self.network} of topology {self.topology!r} no longer exists "
                "(removed behind the session's back, e.g. by `netperf clean --all` or `docker network rm`)"
            )
        except APIError as exc:
            return f"cannot inspect network {self.network}: {exc}"
        problem = self._label_problem(f"network {self.network}", network.get("Labels"))
        if problem:
            return problem
        attached = (network.get("Containers") or {}).get(self.root_container_id)
        address = str((attached or {}).get("IPv4Address", "")).split("/")[0]
        if not attached or not address:
            return f"the container holding {self.node!r}'s address is no longer attached to network {self.network}"
        if _is_ip(host):
            if host != address:
                return f"{host} is no longer {self.node!r}'s address on {self.network} (now {address})"
        elif host not in self.names:
            return f"{host!r} is not a name of {self.node!r} on network {self.network}"
        return self._container_problem()

    def _container_problem(self) -> str | None:
        try:
            container = self.client.api.inspect_container(self.container_id)
        except NotFound:
            return f"container of node {self.node!r} no longer exists"
        except APIError as exc:
            return f"cannot inspect the container of node {self.node!r}: {exc}"
        state = container.get("State") or {}
        if not state.get("Running") or state.get("Paused") or state.get("Restarting"):
            return f"container of node {self.node!r} is not running (status {state.get('Status', '?')})"
        return self._label_problem(f"container of node {self.node!r}", (container.get("Config") or {}).get("Labels"))

    def _label_problem(self, what: str, found: Mapping[str, str] | None) -> str | None:
        found = found or {}
        for key in (L.SESSION, L.PID, L.HOST, L.NETWORK):
            if found.get(key) != self.labels.get(key):
                return (
                    f"{what} no longer carries this session's labels "
                    f"({key}={found.get(key)!r}, expected {self.labels.get(key)!r})"
                )
        return None


@dataclass(frozen=True)
class Endpoint:
    """Where a driver should send load for one target, and where the driver must run."""

    url: str
    runner: CommandRunner | None  # None: run the driver on the host
    where: str  # "host" or "container on <network>"
    host_header: str | None = None
    #: image -> image id of every container of the topology (for the baseline fingerprint)
    images: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    #: what :meth:`guard` asks (None: a plain endpoint nothing can vanish under)
    liveness: TopologyGuard | None = field(default=None, hash=False, compare=False, repr=False)
    #: facts the report prints with each row, e.g. ``{"images": "edge=pytest-netperf/nginx:local
    #: (for nginx:1.27)", "resources": "edge cpus 1"}``
    facts: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    #: the same target at the base revision (``--netperf-base``), measured beside this one
    base: Endpoint | None = field(default=None, hash=False, compare=False, repr=False)
    #: why there is no ``base`` twin under ``--netperf-base`` (the stack is not at the base revision)
    base_note: str = field(default="", hash=False, compare=False)
    #: why the base twin could not be stood up (its stack failed to start, with its log): the
    #: budgets against the base are INVALID, never PASS
    base_error: str = field(default="", hash=False, compare=False)
    #: reads what the containers of the system under test spend in each round (cgroups)
    costs: SystemProbe | None = field(default=None, hash=False, compare=False, repr=False)
    #: counts packets on the server's interface around each L4 round (None for HTTP targets)
    wire: WireProbe | None = field(default=None, hash=False, compare=False, repr=False)
    #: runs the node the URL enters under valgrind or strace (the counting pass); None: cannot
    counter: NodeCounter | None = field(default=None, hash=False, compare=False, repr=False)
    #: how the driver speaks TLS to an ``https://`` URL (the CA to trust): the load option ``tls=``
    #: of a test adds to it (None: the driver's defaults)
    tls: TlsOptions | None = field(default=None, hash=False, compare=False)

    def guard(self) -> str | None:
        """None while ``url`` still reaches this session's running topology, else the reason.

        The gate calls it before every round and sends no load when it returns a reason:
        a removed network's old bridge addresses would route off the host.
        """
        return None if self.liveness is None else self.liveness.check(self.url)

    def map_urls(self, change: Callable[[str], str]) -> Endpoint:
        """A copy whose URL, and its base twin's, went through ``change`` (``with_query``): head
        and base are always measured with the same request."""
        base = None if self.base is None else self.base.map_urls(change)
        return replace(self, url=change(self.url), base=base)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
