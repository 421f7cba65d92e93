"""The iperf3 driver: TCP throughput over N streams, UDP datagram rate, loss and jitter.

A target is ``iperf3://host:port`` (an ``iperf3 -s`` server). The load shape says what to
run: ``protocol="tcp"`` (default) sends as fast as TCP allows over ``connections`` parallel
streams; ``protocol="udp"`` sends ``rate`` datagrams per second of ``payload`` bytes. The
warmup is iperf3's ``--omit`` and the duration its ``--time``, both whole seconds (iperf3
reads no fractions: the duration is rounded up, the warmup to the nearest second). The
client's JSON document (``-J``) becomes a :class:`RoundResult` with a
:class:`TransportStats`; a UDP client that cannot send the rate it was asked for makes the
round saturated (INVALID), never a pass.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Mapping
from typing import Any, Optional
from urllib.parse import urlsplit

from pytest_netperf import defaults
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import DriverError, DriverNotFoundError, NetperfError
from pytest_netperf.results.model import ClientHealth, LatencySummary, RoundResult, TransportStats
from pytest_netperf.runtime.commands import CommandOutcome, CommandRunner, LocalRunner

#: The program's name on PATH (host) or in the image (container).
BINARY_NAME = "iperf3"
#: URL scheme of an iperf3 server target.
SCHEME = "iperf3"
#: The iperf3 server's default port.
DEFAULT_PORT = 5201
#: Largest UDP payload over IPv4 (65,535 minus the IP and UDP headers).
MAX_UDP_PAYLOAD = 65507
#: Seconds a run may take beyond omit + time before it is stopped.
RUN_GRACE_S = 30.0
#: Protocols the driver runs.
PROTOCOLS = ("tcp", "udp")
_NOT_FOUND_HINT = (
    "install it on the host (apt-get install iperf3; scripts/setup does) or, for a client in a "
    "container, rebuild the images with `netperf images build` (the base image carries iperf3)"
)


class Iperf3Error(NetperfError, ValueError):
    """An iperf3 target or load shape that cannot be run; names what is wrong."""


def parse_target(url: str) -> tuple[str, int]:
    """``iperf3://host[:port]`` -> ``(host, port)``; Iperf3Error otherwise."""
    parts = urlsplit(url)
    if parts.scheme != SCHEME or not parts.hostname:
        raise Iperf3Error(f"bad iperf3 target {url!r}: expected iperf3://host[:port]")
    if parts.path not in ("", "/") or parts.query:
        raise Iperf3Error(f"bad iperf3 target {url!r}: an iperf3 target has no path or query")
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise Iperf3Error(f"bad iperf3 target {url!r}: invalid port") from None
    return parts.hostname, port


def _whole_seconds(value: float, name: str, minimum: int, round_up: bool = True) -> int:
    seconds = math.ceil(float(value) - 1e-9) if round_up else math.floor(float(value) + 0.5)
    if seconds < minimum:
        raise Iperf3Error(f"iperf3 {name} is whole seconds >= {minimum}; got {value:g}s")
    return seconds


def udp_bitrate(shape: LoadShape) -> int:
    """iperf3's ``--bitrate`` (payload bits per second) for ``rate`` datagrams of ``payload`` bytes."""
    if not shape.rate:
        raise Iperf3Error("a UDP round needs rate= (datagrams per second, e.g. rate=50_000)")
    return max(1, round(float(shape.rate) * _payload(shape) * 8))


def _payload(shape: LoadShape) -> int:
    payload = shape.payload if shape.payload is not None else defaults.UDP_PAYLOAD_BYTES
    if shape.protocol == "udp" and payload > MAX_UDP_PAYLOAD:
        raise Iperf3Error(f"payload={payload}: a UDP datagram carries at most {MAX_UDP_PAYLOAD} bytes over IPv4")
    return payload


def build_argv(url: str, shape: LoadShape) -> list[str]:
    """The iperf3 client command line for one round (argv[0] is the bare program name)."""
    host, port = parse_target(url)
    if shape.protocol not in PROTOCOLS:
        raise Iperf3Error(f"protocol={shape.protocol!r}: iperf3 runs {' or '.join(PROTOCOLS)}")
    argv = [
        BINARY_NAME,
        "--client",
        host,
        "--port",
        str(port),
        "--json",
        "--time",
        str(_whole_seconds(shape.duration_s, "duration", 1)),
        "--omit",
        str(_whole_seconds(shape.warmup_s, "warmup", 0, round_up=False)),
        "--parallel",
        str(int(shape.connections)),
        "--connect-timeout",
        str(max(1, round(shape.timeout_s * 1000))),
    ]
    if shape.protocol == "udp":
        argv += ["--udp", "--length", str(_payload(shape)), "--bitrate", str(udp_bitrate(shape))]
    elif shape.payload is not None:
        argv += ["--length", str(int(shape.payload))]
    if shape.rate and shape.protocol == "tcp":
        raise Iperf3Error("rate= is for UDP (datagrams per second); a TCP stream sends as fast as it can")
    return argv


def iperf3_error(doc: Mapping[str, Any]) -> Optional[str]:
    """The error an iperf3 JSON document reports, or None."""
    error = doc.get("error")
    return str(error) if error else None


def _empty_latency() -> LatencySummary:
    zero = 0.0
    return LatencySummary(0, zero, zero, zero, zero, zero, zero, zero, zero)


def round_from_json(doc: Mapping[str, Any], url: str, requested_pps: Optional[float] = None) -> RoundResult:
    """Map an iperf3 client document (``-J``, version 3.x) onto the result model.

    ``requested_pps``: the datagrams per second a UDP round asked for; sending less than
    :data:`defaults.UDP_MIN_SENT_SHARE` of it marks the round saturated.
    """
    error = iperf3_error(doc)
    if error:
        raise DriverError(f"iperf3 reported: {error}")
    start = doc["start"]
    test = start["test_start"]
    end = doc["end"]
    protocol = str(test["protocol"]).lower()
    sent = end["sum_sent"]
    received = end["sum_received"]
    nothing = int(sent.get("packets", 0)) == 0 if protocol == "udp" else int(received.get("bytes", 0)) == 0
    if nothing:  # no verdict without data: a stream that moved no byte measured nothing
        what = "sent no datagram" if protocol == "udp" else "received no byte"
        raise DriverError(f"iperf3 {what} in the round ({protocol}): nothing was measured")
    cpu = end.get("cpu_utilization_percent") or {}
    seconds = float(received.get("seconds") or sent.get("seconds") or test.get("duration") or 0.0)
    transport = TransportStats(
        protocol=protocol,
        payload_bytes=int(test["blksize"]),
        streams=int(test["num_streams"]),
        sent_bps=float(sent["bits_per_second"]),
        received_bps=float(received["bits_per_second"]),
        receiver_cpu_util=float(cpu["remote_total"]) / 100.0 if "remote_total" in cpu else None,
    )
    client = ClientHealth(
        cpu_user_s=float(cpu.get("host_user", 0.0)) / 100.0 * seconds,
        cpu_sys_s=float(cpu.get("host_system", 0.0)) / 100.0 * seconds,
        cpu_util=float(cpu.get("host_total", 0.0)) / 100.0,
        threads=1,
    )
    achieved = 0.0
    requested = None
    if protocol == "udp":
        packets_sent = int(sent["packets"])
        lost = int(received.get("lost_packets", 0))
        packets_received = max(0, int(received["packets"]) - lost)
        sent_seconds = float(sent.get("seconds") or seconds)
        transport.packets_sent = packets_sent
        transport.packets_received = packets_received
        transport.received_pps = packets_received / seconds if seconds > 0 else 0.0
        transport.loss = lost / packets_sent if packets_sent else 0.0
        transport.jitter_ns = float(received.get("jitter_ms", 0.0)) * 1e6
        achieved = transport.received_pps
        requested = requested_pps
        if requested_pps:
            sent_pps = packets_sent / sent_seconds if sent_seconds > 0 else 0.0
            client.achieved_ratio = sent_pps / requested_pps
            if client.achieved_ratio < defaults.UDP_MIN_SENT_SHARE:
                client.saturated = True
                client.saturation_kinds.append("send_rate")
                client.saturation_reasons.append(
                    f"iperf3 sent {sent_pps:,.0f} datagrams/s of the {requested_pps:,.0f} asked for "
                    f"({client.achieved_ratio:.0%}; client CPU {client.cpu_util:.0%}): the client cannot "
                    "push this rate, so the path was not measured at it; lower rate= or the payload"
                )
    else:
        transport.retransmits = int(sent.get("retransmits", 0))
    return RoundResult(
        driver="iperf3",
        target=url,
        mode="open" if protocol == "udp" else "closed",
        duration_s=seconds,
        requested_rps=requested,
        achieved_rps=achieved,
        requests=0,
        ok=0,
        non_2xx=0,
        status_codes={},
        errors={},
        sockets_opened=transport.streams + 1,  # the streams and the control connection
        reconnects=0,
        bytes_sent=int(sent.get("bytes", 0)),
        bytes_received=int(received.get("bytes", 0)),
        latency=_empty_latency(),
        client=client,
        connections=transport.streams,
        driver_version=str(start.get("version", "")),
        config={
            "url": url,
            "protocol": protocol,
            "streams": transport.streams,
            "payload_bytes": transport.payload_bytes,
            "duration_s": float(test.get("duration", seconds)),
            "warmup_s": float(test.get("omit", 0)),
            "target_bitrate": test.get("target_bitrate"),
        },
        transport=transport,
    )


def find_iperf3() -> str:
    """The iperf3 program on PATH; DriverNotFoundError with the install hint otherwise."""
    found = shutil.which(BINARY_NAME)
    if found is None:
        raise DriverNotFoundError(f"{BINARY_NAME} is not on PATH; {_NOT_FOUND_HINT}")
    return found


class Iperf3Driver:
    """Measures one round with the iperf3 client, on the host or in a container."""

    name = "iperf3"

    def __init__(self, runner: Optional[CommandRunner] = None) -> None:
        if runner is None or isinstance(runner, LocalRunner):
            runner = LocalRunner(binary=find_iperf3(), cpus=getattr(runner, "cpus", None))
        self.runner: CommandRunner = runner

    @property
    def cpus(self) -> Optional[str]:
        """The cores the client is pinned to (its runner's cpuset), or None."""
        cpus = getattr(self.runner, "cpus", None)
        return str(cpus) if cpus else None

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        """Measure ``url`` under ``shape``; DriverError when iperf3 could not measure."""
        try:
            argv = build_argv(url, shape)
        except Iperf3Error as exc:
            raise DriverError(str(exc)) from exc
        budget = shape.warmup_s + shape.duration_s + shape.timeout_s + RUN_GRACE_S
        try:
            outcome = self.runner.run(argv, budget)
        except DriverError as exc:
            if "executable file not found" in str(exc):
                raise DriverError(f"{exc}; {_NOT_FOUND_HINT}") from exc
            raise
        try:
            doc = json.loads(outcome.stdout)
        except ValueError:
            raise DriverError(self._failure(outcome, "printed no JSON document")) from None
        error = iperf3_error(doc) if isinstance(doc, Mapping) else None
        if error:
            raise DriverError(self._failure(outcome, error))
        if outcome.returncode != 0:
            raise DriverError(self._failure(outcome, f"exit {outcome.returncode}"))
        requested = float(shape.rate) if shape.protocol == "udp" and shape.rate else None
        try:
            return round_from_json(doc, url, requested)
        except (KeyError, TypeError, ValueError) as exc:
            raise DriverError(f"iperf3 on {self.runner.where} printed an unusable document: {exc!r}") from exc

    def _failure(self, outcome: CommandOutcome, what: str) -> str:
        text = f"iperf3 on {self.runner.where}: {what}"
        lowered = (what + outcome.stderr).lower()
        if outcome.returncode == 127 or "executable file not found" in lowered or "no such file" in lowered:
            return f"{text}; {_NOT_FOUND_HINT}"
        if "unable to connect" in lowered or "connection refused" in lowered:
            return f"{text}: is an iperf3 server (iperf3 -s) listening there, and is the port its own?"
        if "busy" in lowered:
            return f"{text}: the server runs one test at a time and another client is using it"
        detail = outcome.stderr.strip().splitlines()[-1:] if outcome.stderr.strip() else []
        return text + (f" ({detail[0]})" if detail else "")
