"""Load options of ``measure()``/``compare()``: names, aliases and range checks."""

from __future__ import annotations

import os
import re
import zlib
from dataclasses import dataclass
from typing import Any

from pytest_netperf import defaults
from pytest_netperf.errors import LoadOptionError as LoadOptionError  # defined low: LoadShape raises it
from pytest_netperf.tls_options import TlsOptions


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
#: ``http=``: HTTP/1.1, or HTTP/2 (h2 over TLS via ALPN for https://, h2c for http://).
HTTP_VERSIONS = ("1.1", "2")
#: Most streams per connection the driver accepts.
MAX_STREAMS_PER_CONNECTION = 10_000
#: Largest gRPC request message (gRPC's default receive limit).
MAX_GRPC_MESSAGE_BYTES = 4 << 20
_GRPC_METHOD = re.compile(r"^/[^/?#\s]+/[^/?#\s]+$")


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
    if name == "http":
        return _http_version(value, bad)
    if name == "streams_per_connection":
        streams = whole(1)
        if streams > MAX_STREAMS_PER_CONNECTION:
            raise bad(f"a whole number from 1 to {MAX_STREAMS_PER_CONNECTION}")
        return streams
    if name == "grpc":
        if value is None or isinstance(value, bool):
            return value or None
        if isinstance(value, str) and _GRPC_METHOD.match(value):
            return value
        raise bad("True (the URL's path names the method) or a method such as '/package.Service/Method'")
    if name == "grpc_message":
        return _grpc_message(value, bad)
    if name == "tls" and value is not None:
        try:
            return TlsOptions.of(value)
        except ValueError as exc:
            raise bad(f"TLS options such as {{'ca': 'ca.pem'}} ({exc})") from exc
    return value


def _http_version(value: Any, bad: Any) -> Any:
    """``http=``'s value as ``"1.1"``/``"2"`` (None: HTTP/1.1); 2 and 1.1 as numbers too."""
    if value is None:
        return None
    text = str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if text == "2.0":
        text = "2"
    if text not in HTTP_VERSIONS:
        raise bad("'1.1' or '2' (HTTP/2: h2 over TLS via ALPN for https://, cleartext h2c for http://)")
    return text


def _grpc_message(value: Any, bad: Any) -> Any:
    """``grpc_message=``: bytes (at most 4 MiB), or the path of a readable file (as text)."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if len(data) > MAX_GRPC_MESSAGE_BYTES:
            raise bad("a message of at most 4 MiB")
        return data
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if not os.path.isfile(path):
            raise bad(f"bytes, or the path of a file (no file {path!r})")
        if os.path.getsize(path) > MAX_GRPC_MESSAGE_BYTES:
            raise bad("a message of at most 4 MiB")
        return str(path)
    raise bad("bytes (a serialized message), or the path of a file holding one")


def round_seed(label: str, round_index: int) -> int:
    """The arrival seed of one side's round: distinct for every side and round (so no two loads
    of a comparison share a schedule), the same on every run (so runs are reproducible)."""
    return zlib.crc32(label.encode()) * 1_000_003 + round_index
