"""The result model every driver feeds and every budget, baseline and report reads.

One :class:`RoundResult` is one measurement round of one target.  Each driver translates its own
output into it (``drivers/rust_json.py`` for the Rust driver's JSON, ``drivers/iperf3.py``,
``drivers/locust/result_builder.py``); the one wire format the model reads itself is a latency
block in the Rust driver's keys (:meth:`LatencySummary.from_json`).  Latency histograms travel as the
standard HdrHistogram V2 compressed encoding in base64, so rounds can be merged later.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Optional

from pytest_netperf.results.runner import RunnerState

#: The error kind of an exception a driver's own user code raised instead of sending a
#: request (a Locust task): ``task exception: ValueError``. Such errors count as errors,
#: but no request left the client for them.
TASK_EXCEPTION_PREFIX = "task exception: "


@dataclass
class LatencySummary:
    """Summary of one latency distribution, in nanoseconds, plus the encoded histogram."""

    count: int
    min_ns: float
    mean_ns: float
    max_ns: float
    stdev_ns: float
    p50_ns: float
    p90_ns: float
    p99_ns: float
    p999_ns: float
    histogram: Optional[str] = None

    @classmethod
    def from_json(cls, doc: Optional[Mapping[str, Any]]) -> Optional[LatencySummary]:
        """Build from a driver ``*_ns`` block (``None`` stays ``None``)."""
        if doc is None:
            return None
        return cls(
            count=int(doc["count"]),
            min_ns=float(doc["min"]),
            mean_ns=float(doc["mean"]),
            max_ns=float(doc["max"]),
            stdev_ns=float(doc["stdev"]),
            p50_ns=float(doc["p50"]),
            p90_ns=float(doc["p90"]),
            p99_ns=float(doc["p99"]),
            p999_ns=float(doc["p999"]),
            histogram=doc.get("histogram"),
        )

    def percentile_ns(self, q: float) -> float:
        """Return a stored percentile; ``q`` is one of 50, 90, 99, 99.9."""
        table = {50.0: self.p50_ns, 90.0: self.p90_ns, 99.0: self.p99_ns, 99.9: self.p999_ns}
        if float(q) in table:
            return table[float(q)]
        if self.histogram:
            from pytest_netperf.results.histogram import decode_histogram, percentile_ns

            return float(percentile_ns(decode_histogram(self.histogram), q))
        raise KeyError(f"percentile {q} is not stored and no histogram is available")


@dataclass
class ClientHealth:
    """How the load generator itself fared: a saturated client invalidates a round."""

    cpu_user_s: float = 0.0
    cpu_sys_s: float = 0.0
    cpu_util: float = 0.0
    threads: int = 1
    schedule_lag_p99_ns: Optional[float] = None
    achieved_ratio: Optional[float] = None
    saturated: bool = False
    #: The driver's own CPU was the limit (a load thread pegged). False with ``saturated``:
    #: its threads waited for CPUs held by something else. Unknown counts as the driver's.
    cpu_bound: bool = True
    saturation_reasons: list[str] = field(default_factory=list)
    #: What each reason spoils (measure/validity.py ``Shortfall`` values), in the same order;
    #: empty when the driver does not say.
    saturation_kinds: list[str] = field(default_factory=list)


@dataclass
class Interval:
    """Per-interval counters (default one second)."""

    start_s: float
    requests: int
    ok: int
    errors: int
    rps: float
    p50_ns: Optional[float] = None
    p99_ns: Optional[float] = None


@dataclass
class NodeCosts:
    """What one node (a topology node or a Compose service, all its containers summed) of
    the system under test spent during one round, read from its cgroups."""

    #: CPU time, user plus system, over the sampled span.
    cpu_ns: int
    #: Working set (usage minus inactive file cache) at the end of the round.
    mem_bytes: int
    #: The largest working set sampled during the round.
    mem_peak_bytes: int
    rx_packets: int = 0
    tx_packets: int = 0
    rx_bytes: int = 0
    tx_bytes: int = 0
    #: How many containers the node has (Compose replicas are summed).
    containers: int = 1


@dataclass
class SystemCosts:
    """What every node of the system under test spent during one round.

    The counters are sampled just before the driver starts and just after it ends, so they
    cover warmup, window and drain; ``served`` counts the responses of that whole span (the
    driver's ``completed_total``), so CPU per request divides like by like.
    """

    nodes: dict[str, NodeCosts]
    #: Responses of any status completed over the sampled span.
    served: int
    #: Wall seconds between the two samples.
    span_s: float
    #: Where the counters came from: ``cgroup v1``, ``cgroup v2`` or ``docker stats``.
    source: str = ""


@dataclass
class WireCounters:
    """Packets and bytes an interface of the server counted over one round (warmup included),
    so the size of what crossed the (virtual) wire can be set against the payload."""

    #: ``eth0`` in the server's namespace, or ``lo`` on the host network.
    interface: str
    rx_packets: int
    rx_bytes: int
    tx_packets: int
    tx_bytes: int
    #: Wall seconds between the two readings.
    span_s: float

    @property
    def packets(self) -> int:
        """Packets that crossed in both directions. On ``lo`` every packet is counted once
        as sent and once as received, so there the received count is all of them."""
        return self.rx_packets if self.interface == "lo" else self.rx_packets + self.tx_packets

    @property
    def bytes(self) -> int:
        """Bytes that crossed in both directions (see :attr:`packets`)."""
        return self.rx_bytes if self.interface == "lo" else self.rx_bytes + self.tx_bytes

    @property
    def packets_per_s(self) -> float:
        """Packets per second in both directions (NaN without a span)."""
        return self.packets / self.span_s if self.span_s > 0 else float("nan")

    @property
    def packet_bytes(self) -> float:
        """Average size of a packet on the wire, headers included (NaN when none crossed)."""
        return self.bytes / self.packets if self.packets else float("nan")


@dataclass
class TransportStats:
    """What an L4 round measured: iperf3 TCP/UDP throughput, or raw TCP request/response."""

    #: ``tcp`` (iperf3 stream), ``udp`` (iperf3 datagrams) or ``tcp-rr`` (request/response).
    protocol: str
    #: Bytes per write (TCP), per datagram (UDP) or per request and response (tcp-rr).
    payload_bytes: Optional[int]
    streams: int = 1
    #: Payload bits per second the sender sent and the receiver got.
    sent_bps: float = 0.0
    received_bps: float = 0.0
    #: UDP: datagrams sent and received, and received per second.
    packets_sent: Optional[int] = None
    packets_received: Optional[int] = None
    received_pps: Optional[float] = None
    #: UDP: datagrams lost (sent but never received) over those sent.
    loss: Optional[float] = None
    #: UDP: inter-arrival jitter (RFC 3550) the receiver computed, in nanoseconds.
    jitter_ns: Optional[float] = None
    #: TCP: segments retransmitted by the sender.
    retransmits: Optional[int] = None
    #: CPU the receiving side spent (iperf3's ``remote_total``), a fraction of one core's time.
    receiver_cpu_util: Optional[float] = None
    #: The server interface's counters over the round (None where they cannot be read).
    wire: Optional[WireCounters] = None


@dataclass
class RoundResult:
    """One measurement round of one target by one driver."""

    driver: str
    target: str
    mode: str  # "closed" or "open"
    duration_s: float
    requested_rps: Optional[float]
    achieved_rps: float
    requests: int
    ok: int
    non_2xx: int
    status_codes: dict[str, int]
    errors: dict[str, int]
    sockets_opened: int
    reconnects: int
    bytes_sent: int
    bytes_received: int
    latency: LatencySummary
    service_time: Optional[LatencySummary] = None
    schedule_lag: Optional[LatencySummary] = None
    connect_time: Optional[LatencySummary] = None
    intervals: list[Interval] = field(default_factory=list)
    client: ClientHealth = field(default_factory=ClientHealth)
    connections: Optional[int] = None
    driver_version: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    #: Requests still in flight at the end of the window that no response or error of the
    #: window accounts for; they are in ``latency`` at their age then, a lower bound of
    #: their latency (not in ``requests``/``ok``/``service_time``). Rust driver only.
    censored: int = 0
    #: Responses of any status completed over the whole run, warmup and drain included
    #: (``None`` when the driver does not report it).
    completed_total: Optional[int] = None
    #: What the system under test spent in this round (``None`` for a plain URL target).
    system: Optional[SystemCosts] = None
    #: L4 figures (iperf3 rounds, tcp:// request/response rounds); None for HTTP.
    transport: Optional[TransportStats] = None
    #: Wall-clock time (Unix seconds) the gate started this round's driver; None when not recorded.
    #: Sides of a simultaneous round start within milliseconds of each other.
    started_at: Optional[float] = None
    #: How busy the machine was around this round (None where it could not be read).
    runner: Optional[RunnerState] = None

    @property
    def error_count(self) -> int:
        """Transport errors plus non-2xx responses."""
        return sum(self.errors.values()) + self.non_2xx

    @property
    def error_rate(self) -> float:
        """Errors over attempted requests (0.0 when nothing was attempted)."""
        attempted = self.ok + self.error_count
        return self.error_count / attempted if attempted else 0.0

    @property
    def valid(self) -> bool:
        """False when the driver says it was saturated."""
        return not self.client.saturated

    def nothing_sent(self) -> Optional[str]:
        """Why this round is no measurement because nothing was sent, or None.

        A request/response round sent something when a response came (``requests``), a
        request was still in flight at the end (``censored``) or a request failed in transport
        (``errors`` other than task exceptions, which are the client's own code failing
        before any request). An L4 (iperf3) round sent something when a byte left the client.
        """
        if self.transport is not None and self.transport.protocol in ("tcp", "udp"):
            if self.bytes_sent > 0 or (self.transport.packets_sent or 0) > 0:
                return None
            return f"the {self.driver} driver sent nothing in the {round(self.duration_s, 1):g}s window (0 bytes)"
        task_errors = {k: v for k, v in self.errors.items() if k.startswith(TASK_EXCEPTION_PREFIX) and v}
        transport_errors = sum(v for k, v in self.errors.items() if k not in task_errors)
        if self.requests > 0 or self.censored > 0 or transport_errors > 0 or self.non_2xx > 0:
            return None
        text = (
            f"the {self.driver} driver sent nothing in the {round(self.duration_s, 1):g}s window: 0 requests, "
            "no response and no transport error"
        )
        if task_errors:
            kinds = ", ".join(f"{kind} x{count}" for kind, count in sorted(task_errors.items()))
            text += f"; every task raised before sending ({kinds}): fix the task, the client is not to blame"
        return text + "; no verdict without data"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (histograms included)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> RoundResult:
        """Inverse of :meth:`to_dict`."""
        data = dict(doc)
        for key in ("latency", "service_time", "schedule_lag", "connect_time"):
            if data.get(key) is not None:
                data[key] = LatencySummary(**data[key])
        data["intervals"] = [Interval(**i) for i in data.get("intervals", [])]
        data["client"] = ClientHealth(**data.get("client", {}))
        if data.get("system") is not None:
            system = dict(data["system"])
            system["nodes"] = {name: NodeCosts(**node) for name, node in system["nodes"].items()}
            data["system"] = SystemCosts(**system)
        if data.get("transport") is not None:
            transport = dict(data["transport"])
            if transport.get("wire") is not None:
                transport["wire"] = WireCounters(**transport["wire"])
            data["transport"] = TransportStats(**transport)
        if data.get("runner") is not None:
            data["runner"] = RunnerState(**data["runner"])
        return cls(**data)
