"""The driver interface shared by the Rust and Locust drivers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Protocol

from pytest_netperf import defaults
from pytest_netperf.drivers.tls_options import TlsOptions
from pytest_netperf.errors import DriverError
from pytest_netperf.results.model import RoundResult


@dataclass(frozen=True)
class LoadShape:
    """What load to apply in one round.

    ``rate`` set means open-loop arrivals (``arrival``: Poisson by default, or constant),
    measured from the intended send time; ``rate`` unset means closed-loop with ``connections`` workers.
    """

    connections: int = 1
    rate: Optional[float] = None
    duration_s: float = 5.0
    warmup_s: float = 1.0
    timeout_s: float = 5.0
    threads: Optional[int] = None
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    body_size: int = 0
    arrival: str = defaults.ARRIVAL
    new_connection_per_request: bool = False
    interval_s: float = 1.0
    #: L4 rounds: bytes per request and response (tcp://), per write (iperf3 TCP) or per
    #: datagram (iperf3 UDP); None for HTTP and iperf3's own default.
    payload: Optional[int] = None
    #: iperf3 rounds: ``tcp`` (a stream over ``connections`` parallel connections) or ``udp``
    #: (``rate`` datagrams per second).
    protocol: str = "tcp"
    #: ``https://`` targets: certificates, resumption and version (None: the driver's defaults).
    tls: Optional[TlsOptions] = None
    extra: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def mode(self) -> str:
        """``"open"`` for a rate-driven shape, ``"closed"`` otherwise."""
        return "open" if self.rate else "closed"

    def describe(self) -> str:
        """Short human description, e.g. ``c=100 closed 5s``."""
        load = f"{self.rate:g} rps open" if self.rate else f"c={self.connections} closed"
        if self.payload is not None:
            load += f" {self.payload}B"
        return f"{load} {self.duration_s:g}s (+{self.warmup_s:g}s warmup)"

    def describe_request(self, url: str) -> str:
        """The exact request a round sends and how, e.g. ``GET http://10.0.0.2:80/?size=16384,
        Host: shop.example, 512-byte body; c=16 closed 1s (+0.5s warmup)``."""
        parts = [f"{self.method} {url}" if url.startswith("http") else url]
        parts += [f"{name}: {value}" for name, value in self.headers]
        if self.body_size:
            parts.append(f"{self.body_size}-byte body")
        if self.new_connection_per_request:
            parts.append("a new connection per request")
        if self.rate:
            parts.append(f"{self.arrival} arrivals")
        return ", ".join(parts) + f"; {self.describe()}"


class Driver(Protocol):
    """Anything that can measure one round."""

    name: str

    @property
    def cpus(self) -> Optional[str]:
        """The cores the driver is pinned to (a cpuset), or None when it is not pinned."""
        ...

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        """Measure ``url`` under ``shape``; raise DriverError when nothing could be measured."""
        ...


def sent_something(result: RoundResult) -> RoundResult:
    """``result`` itself, or :class:`DriverError` (the gate makes the round INVALID) when the
    round sent nothing (:meth:`RoundResult.nothing_sent`): 0 requests is no measurement."""
    reason = result.nothing_sent()
    if reason is not None:
        raise DriverError(reason)
    return result
