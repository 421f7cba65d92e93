"""L4 figures of a series for the reports: throughput, packet rate, loss, jitter, and what
crossed the wire against the payload written (medians over the rounds)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any, Optional

from pytest_netperf.budget.families import format_bytes, format_duration_ns, format_packet_rate
from pytest_netperf.results.model import RoundResult, TransportStats

#: The name of the fact that carries the L4 summary into every report.
TRANSPORT_FACT = "L4 (median per round)"


def _median(values: Sequence[Optional[float]]) -> Optional[float]:
    kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return statistics.median(kept) if kept else None


def transport_json(rounds: Sequence[RoundResult]) -> dict[str, Any]:
    """Medians over the rounds that carry L4 figures (empty when none do); canonical units."""
    stats = [r.transport for r in rounds if r.transport is not None]
    if not stats:
        return {}
    first = stats[0]
    wires = [t.wire for t in stats if t.wire is not None]
    return {
        "protocol": first.protocol,
        "payload_bytes": first.payload_bytes,
        "streams": first.streams,
        "gbps": None if first.protocol == "tcp-rr" else _median([t.received_bps / 1e9 for t in stats]),
        "received_pps": _median([t.received_pps for t in stats]),
        "loss": _median([t.loss for t in stats]),
        "jitter_ns": _median([t.jitter_ns for t in stats]),
        "retransmits": _median([t.retransmits for t in stats]),
        "wire_interface": wires[0].interface if wires else None,
        "wire_pps": _median([w.packets_per_s for w in wires]),
        "wire_packet_bytes": _median([w.packet_bytes for w in wires]),
        "rounds": len(stats),
    }


def transport_fact(rounds: Sequence[RoundResult]) -> str:
    """``tcp x4, 128KiB writes: 12.1 Gbit/s; wire eth0 81.2 kpps at 58.1KiB per packet`` (empty without L4 figures)."""
    doc = transport_json(rounds)
    if not doc:
        return ""
    first: TransportStats = next(r.transport for r in rounds if r.transport is not None)
    payload = format_bytes(first.payload_bytes) if first.payload_bytes else "default"
    parts = []
    if first.protocol == "udp":
        parts.append(f"udp {payload} datagrams: {format_packet_rate(doc['received_pps'] or 0)} received")
        if doc["loss"] is not None:
            parts.append(f"loss {doc['loss'] * 100:.3g}%")
        if doc["jitter_ns"] is not None:
            parts.append(f"jitter {format_duration_ns(doc['jitter_ns'])}")
    elif first.protocol == "tcp":
        parts.append(f"tcp x{first.streams}, {payload} writes: {doc['gbps']:.3g} Gbit/s")
        if doc["retransmits"]:
            parts.append(f"{doc['retransmits']:.0f} retransmits")
    else:
        parts.append(f"tcp-rr {payload} requests")
    if doc["wire_pps"] is not None and doc["wire_packet_bytes"] is not None:
        parts.append(
            f"wire {doc['wire_interface']} {format_packet_rate(doc['wire_pps'])} both ways "
            f"at {format_bytes(doc['wire_packet_bytes'])} per packet"
        )
    return "; ".join(parts)
