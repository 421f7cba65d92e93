"""Metric families: what kind of quantity a metric is, its canonical unit, and how its values read.

Values are canonical (latency and CPU time in nanoseconds, throughput in responses per
second, fractions as fractions, memory in bytes); :func:`format_value` is the one formatter
of every unit, as budgets are written.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Optional


class Family(str, Enum):
    """What kind of quantity a metric is; decides units, grammar and how it is judged."""

    LATENCY = "latency"
    RATE = "rate"
    COUNT = "count"
    FRACTION = "fraction"
    #: CPU time the system under test spent per response (nanoseconds).
    CPU_TIME = "cpu time"
    #: Cores the system under test kept busy.
    CORES = "cores"
    #: Memory (bytes).
    BYTES = "bytes"
    #: Payload throughput of an L4 path (gigabits per second).
    BITRATE = "bitrate"
    #: Packets per second.
    PACKET_RATE = "packet rate"
    #: Instructions a node executes per request (valgrind; a counted cost).
    INSTRUCTIONS = "instructions"
    #: System calls a node makes per request (strace; a counted cost).
    SYSCALLS = "system calls"

    def __str__(self) -> str:
        return self.value


class Better(str, Enum):
    """Which way a metric improves."""

    HIGHER = "higher"
    LOWER = "lower"

    def __str__(self) -> str:
        return self.value


#: Canonical unit of each family, as stored in baselines and JSON reports.
FAMILY_UNITS = {
    Family.LATENCY: "ns",
    Family.RATE: "responses/s",
    Family.COUNT: "count",
    Family.FRACTION: "fraction",
    Family.CPU_TIME: "ns",
    Family.CORES: "cores",
    Family.BYTES: "bytes",
    Family.BITRATE: "Gbit/s",
    Family.PACKET_RATE: "packets/s",
    Family.INSTRUCTIONS: "instructions/request",
    Family.SYSCALLS: "syscalls/request",
}
#: Families counted by a counting pass (the node under a counter), judged from its repetitions.
COUNTED_FAMILIES = (Family.INSTRUCTIONS, Family.SYSCALLS)


def format_duration_ns(value_ns: float) -> str:
    """Nanoseconds with a readable unit, as budgets are written: ``850ns``, ``12.3us``,
    ``1.25ms``, ``2s``."""
    magnitude = abs(value_ns)
    if magnitude < 1e3:
        return f"{value_ns:.3g}ns"
    if magnitude < 1e6:
        return f"{value_ns / 1e3:.3g}us"
    if magnitude < 1e9:
        return f"{value_ns / 1e6:.3g}ms"
    return f"{value_ns / 1e9:.3g}s"


def format_rate(value: float) -> str:
    """Responses per second: ``12,345 rps`` (three digits below 100)."""
    return f"{value:,.0f} rps" if abs(value) >= 100 else f"{value:.3g} rps"


def format_fraction(value: float) -> str:
    """A fraction as a percentage: ``0.125`` -> ``12.5%``."""
    return f"{value * 100:.3g}%"


def format_bytes(value: float) -> str:
    """Bytes in binary units, as Docker's limits are: ``64.0MiB``, ``512KiB``, ``1.50GiB``."""
    for factor, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(value) >= factor:
            return f"{value / factor:.3g}{unit}"
    return f"{value:.0f}B"


def format_packet_rate(value: float) -> str:
    """Packets per second: ``1.49 Mpps``, ``293 kpps``, ``950 pps``."""
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:.3g} Mpps"
    if magnitude >= 1e3:
        return f"{value / 1e3:.3g} kpps"
    return f"{value:.3g} pps"


def format_value(family: Family, value: Optional[float]) -> str:
    """Format a canonical value of ``family``; ``n/a`` for None/NaN, ``inf`` kept."""
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    if family in (Family.LATENCY, Family.CPU_TIME):
        return format_duration_ns(value)
    if family is Family.CORES:
        return f"{value:.3g} cores"
    if family is Family.BYTES:
        return format_bytes(value)
    if family is Family.RATE:
        return format_rate(value)
    if family is Family.BITRATE:
        return f"{value:.3g} Gbit/s"
    if family is Family.PACKET_RATE:
        return format_packet_rate(value)
    if family is Family.FRACTION:
        return format_fraction(value)
    if family is Family.INSTRUCTIONS:
        return f"{value:,.0f} instr" if abs(value) >= 100 else f"{value:.3g} instr"
    if family is Family.SYSCALLS:
        return f"{value:.3g} syscalls"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"
