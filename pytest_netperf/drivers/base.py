"""The driver interface shared by the Rust and Locust drivers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Protocol, Union

from pytest_netperf import defaults
from pytest_netperf.errors import DriverError, LoadOptionError
from pytest_netperf.results.model import RoundResult
from pytest_netperf.tls_options import TlsOptions


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
    #: HTTP version: None or ``"1.1"`` (HTTP/1.1), or ``"2"``: HTTP/2, h2 over TLS (ALPN) for
    #: ``https://`` and cleartext h2c with prior knowledge for ``http://`` (rust driver).
    http: Optional[str] = None
    #: HTTP/2 and gRPC: requests in flight per connection (its concurrent streams).
    streams_per_connection: int = 1
    #: gRPC unary calls (over HTTP/2): True (the URL's path names the method) or the method,
    #: ``"/package.Service/Method"`` (it replaces the URL's path).
    grpc: Union[bool, str, None] = None
    #: gRPC: the request message (serialized protobuf): bytes, or the path of a file.
    grpc_message: Union[bytes, str, None] = None
    extra: dict = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        check_protocol_options(self)

    @property
    def http2(self) -> bool:
        """HTTP/2 (``http="2"``, or gRPC, which runs over it)."""
        return self.http == "2" or bool(self.grpc)

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
        method = "POST" if self.grpc else self.method
        parts = [f"{method} {url}" if url.startswith("http") else url]
        parts += [f"{name}: {value}" for name, value in self.headers]
        if self.body_size:
            parts.append(f"{self.body_size}-byte body")
        if self.new_connection_per_request:
            parts.append("a new connection per request")
        if self.rate:
            parts.append(f"{self.arrival} arrivals")
        if self.grpc:
            method = self.grpc if isinstance(self.grpc, str) else "the URL's method"
            parts.append(f"gRPC {method}")
        if self.http2:
            streams = self.streams_per_connection
            parts.append(f"HTTP/2, {streams} stream{'s' if streams != 1 else ''} per connection")
        return ", ".join(parts) + f"; {self.describe()}"


def check_protocol_options(shape: LoadShape) -> None:
    """The HTTP/2 and gRPC options of ``shape`` fit together; LoadOptionError naming them otherwise."""
    if shape.grpc and shape.http == "1.1":
        raise LoadOptionError("load option grpc= runs over HTTP/2: drop http='1.1'")
    if shape.streams_per_connection != 1 and not shape.http2:
        raise LoadOptionError(
            f"load option streams_per_connection={shape.streams_per_connection!r} needs HTTP/2: "
            "add http='2' (or grpc=); HTTP/1.1 has one request in flight per connection"
        )
    if shape.grpc_message is not None and not shape.grpc:
        raise LoadOptionError("load option grpc_message= needs grpc= (True, or '/package.Service/Method')")
    if shape.http2 and shape.new_connection_per_request:
        raise LoadOptionError(
            "load option new_connection_per_request=True is HTTP/1.1 only: an HTTP/2 connection "
            "carries many requests (drop http='2'/grpc= to measure a handshake per request)"
        )
    if shape.grpc and (shape.body_size or shape.method.upper() not in ("GET", "POST")):
        raise LoadOptionError(
            "load option grpc=: the call is a POST whose body is grpc_message=; drop method= and body_size="
        )


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
