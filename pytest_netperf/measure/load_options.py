"""Load options of ``measure()``/``compare()``: names, aliases and range checks."""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Any

from pytest_netperf import defaults
from pytest_netperf.drivers.tls_options import TlsOptions
from pytest_netperf.errors import NetperfError


class LoadOptionError(NetperfError, ValueError):
    """A load option of ``measure()``/``compare()`` is unknown or out of range; names it."""


@dataclass(frozen=True)
class CapacityShare:
    """``rate="25%"``: an open-loop rate that share of the capacity measured before the rounds."""

    fraction: float

    def __str__(self) -> str:
        return f"{self.fraction * 100:g}%"


_SHARE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def parse_rate(value: Any) -> Any:
    """``rate``'s value: a number (requests/s), a :class:`CapacityShare` for ``"N%"`` (0 < N <= 100),
    None, or the value unchanged when it is neither (the range check names it)."""
    if isinstance(value, str):
        match = _SHARE.match(value)
        if match and 0.0 < float(match.group(1)) <= 100.0:
            return CapacityShare(float(match.group(1)) / 100.0)
    return value


SHAPE_ALIASES = {
    "duration": "duration_s",
    "warmup": "warmup_s",
    "timeout": "timeout_s",
    "streams": "connections",
}
_PROTOCOLS = ("tcp", "udp")


def check_load_option(given: str, name: str, value: Any) -> Any:
    """``value`` of load option ``name`` (written as ``given``) checked; LoadOptionError otherwise."""

    def bad(expected: str) -> LoadOptionError:
        return LoadOptionError(f"load option {given}={value!r}: expected {expected}")

    def number(minimum: float, inclusive: bool) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise bad(f"a number {'>=' if inclusive else '>'} {minimum:g}")
        if value < minimum or (value == minimum and not inclusive) or value == float("inf"):
            raise bad(f"a finite number {'>=' if inclusive else '>'} {minimum:g}")
        return float(value)

    def whole(minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise bad(f"a whole number >= {minimum}")
        return value

    if name in ("duration_s", "timeout_s", "interval_s"):
        return number(0.0, inclusive=False)
    if name == "warmup_s":
        return number(0.0, inclusive=True)
    if name == "rate":
        parsed = parse_rate(value)
        if parsed is None or isinstance(parsed, CapacityShare):
            return parsed
        if isinstance(value, str):
            raise bad("a number of requests/s > 0, or a share of the measured capacity from '1%' to '100%'")
        return number(0.0, inclusive=False)
    if name == "connections":
        return whole(1)
    if name == "threads":
        return None if value is None else whole(1)
    if name == "body_size":
        return whole(0)
    if name == "payload":
        if value is None:
            return None
        size = whole(1)
        if size > defaults.MAX_PAYLOAD_BYTES:
            raise bad(f"a size in bytes from 1 to {defaults.MAX_PAYLOAD_BYTES} (64 KiB)")
        return size
    if name == "protocol" and value not in _PROTOCOLS:
        raise bad(" or ".join(repr(p) for p in _PROTOCOLS))
    if name == "arrival" and value not in defaults.ARRIVALS:
        raise bad(" or ".join(repr(a) for a in defaults.ARRIVALS))
    if name == "method" and not (isinstance(value, str) and value.isalpha()):
        raise bad("an HTTP method such as 'GET'")
    if name == "new_connection_per_request" and not isinstance(value, bool):
        raise bad("True or False")
    if name == "tls" and value is not None:
        try:
            return TlsOptions.of(value)
        except ValueError as exc:
            raise bad(f"TLS options such as {{'ca': 'ca.pem'}} ({exc})") from exc
    return value


def round_seed(label: str, round_index: int) -> int:
    """The arrival seed of one side's round: distinct for every side and round (so no two loads
    of a comparison share a schedule), the same on every run (so runs are reproducible)."""
    return zlib.crc32(label.encode()) * 1_000_003 + round_index
