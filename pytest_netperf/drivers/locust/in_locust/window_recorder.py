"""Per-process recording of one measurement window, and the lossless merge of many.

A :class:`WindowRecorder` lives in every Locust process that runs users.  It only counts
what completes between :meth:`WindowRecorder.start` and :meth:`WindowRecorder.stop`
(warmup and drain are excluded) and turns into a JSON-ready payload that travels to the
master, where :func:`merge_payloads` adds histograms and counters without loss.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from hdrh.histogram import HdrHistogram

from pytest_netperf.results.histogram import HIGHEST_NS, decode_histogram, encode_histogram, new_histogram


def ms_to_ns(response_time_ms: float) -> int:
    """Locust's float milliseconds as whole nanoseconds, clamped into the histogram range."""
    return min(max(round(response_time_ms * 1_000_000), 0), HIGHEST_NS)


@dataclass
class _IntervalCounts:
    requests: int = 0
    ok: int = 0
    errors: int = 0
    histogram: HdrHistogram = field(default_factory=new_histogram)


class WindowRecorder:
    """Counts responses, errors and latencies that complete inside the measurement window."""

    def __init__(
        self,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        intended_by: Optional[Callable[[float], int]] = None,
    ) -> None:
        """``intended_by(t)``: the paced users' intended starts at or before ``t`` (same
        clock); with it the window also counts the iterations its schedules intended."""
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self._interval_s = interval_s
        self._clock = clock
        self._intended_by = intended_by
        self._intended_at_start = 0
        self._started_at: Optional[float] = None
        self._stopped_at: Optional[float] = None
        self._reset()

    def _reset(self) -> None:
        self.latency = new_histogram()
        self.status_codes: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.requests = 0
        self.ok = 0
        self.non_2xx = 0
        self.rejected = 0
        self.bytes_received = 0
        #: Bytes this process sent during the window (set by the listener from the socket counter).
        self.bytes_sent = 0
        self.iterations = 0
        #: Iterations the pacing schedules intended to start inside the window (None unpaced).
        self.intended: Optional[int] = None
        self._intervals: dict[int, _IntervalCounts] = {}

    @property
    def active(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._started_at is not None and self._stopped_at is None

    def start(self) -> None:
        """Open the window; anything recorded before is discarded."""
        self._reset()
        self._started_at = self._clock()
        self._stopped_at = None
        if self._intended_by is not None:
            self._intended_at_start = self._intended_by(self._started_at)

    def stop(self) -> None:
        """Close the window; later records are ignored."""
        if self.active:
            self._stopped_at = self._clock()
            if self._intended_by is not None:
                self.intended = self._intended_by(self._stopped_at) - self._intended_at_start

    @property
    def window_s(self) -> float:
        """Length of the (closed or still open) window in seconds; 0 before :meth:`start`."""
        if self._started_at is None:
            return 0.0
        end = self._stopped_at if self._stopped_at is not None else self._clock()
        return end - self._started_at

    def _interval(self) -> _IntervalCounts:
        assert self._started_at is not None
        index = int((self._clock() - self._started_at) // self._interval_s)
        return self._intervals.setdefault(index, _IntervalCounts())

    def record_response(
        self, status: int, response_time_ms: float, response_length: int = 0, rejected: bool = False
    ) -> None:
        """A response arrived.  ``rejected``: the locustfile marked it failed (e.g. a content
        check on a 2xx); it then counts as an ``other`` error, not as ok."""
        if not self.active:
            return
        interval = self._interval()
        self.requests += 1
        interval.requests += 1
        key = str(status)
        self.status_codes[key] = self.status_codes.get(key, 0) + 1
        self.bytes_received += max(int(response_length or 0), 0)
        if not 200 <= status < 300:
            self.non_2xx += 1
            interval.errors += 1
            return
        if rejected:
            self.rejected += 1
            self.errors["other"] = self.errors.get("other", 0) + 1
            interval.errors += 1
            return
        self.ok += 1
        interval.ok += 1
        value = ms_to_ns(response_time_ms)
        self.latency.record_value(value)
        interval.histogram.record_value(value)

    def record_error(self, kind: str) -> None:
        """A request failed without a response (``kind`` from :mod:`.error_kinds`)."""
        if not self.active:
            return
        self.errors[kind] = self.errors.get(kind, 0) + 1
        self._interval().errors += 1

    def note_iteration(self) -> None:
        """A paced user finished one task iteration (for the achieved-rate check)."""
        if self.active:
            self.iterations += 1

    def payload(self) -> dict[str, Any]:
        """The window as a JSON/msgpack-ready dict (histograms base64-encoded)."""
        window = self.window_s
        intervals = []
        for index in sorted(self._intervals):
            counts = self._intervals[index]
            start = index * self._interval_s
            intervals.append(
                {
                    "index": index,
                    "start_s": start,
                    "length_s": max(min(self._interval_s, window - start), 0.0),
                    "requests": counts.requests,
                    "ok": counts.ok,
                    "errors": counts.errors,
                    "histogram": encode_histogram(counts.histogram),
                }
            )
        return {
            "window_s": window,
            "interval_s": self._interval_s,
            "requests": self.requests,
            "ok": self.ok,
            "non_2xx": self.non_2xx,
            "rejected": self.rejected,
            "status_codes": dict(self.status_codes),
            "errors": dict(self.errors),
            "bytes_received": self.bytes_received,
            "bytes_sent": self.bytes_sent,
            "iterations": self.iterations,
            "intended": self.intended,
            "latency": encode_histogram(self.latency),
            "intervals": intervals,
        }


def _add_counts(total: dict[str, int], part: dict[str, int]) -> None:
    for key, value in part.items():
        total[key] = total.get(key, 0) + int(value)


def merge_payloads(payloads: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Add the windows of several processes: counters sum, histograms add losslessly,
    intervals merge by index.  ``window_s`` is the longest of the parts; ``intended`` is
    known only if every part knows it."""
    parts = list(payloads)
    latency = new_histogram()
    merged: dict[str, Any] = {
        "window_s": 0.0,
        "interval_s": parts[0]["interval_s"] if parts else 1.0,
        "requests": 0,
        "ok": 0,
        "non_2xx": 0,
        "rejected": 0,
        "status_codes": {},
        "errors": {},
        "bytes_received": 0,
        "bytes_sent": 0,
        "iterations": 0,
    }
    intervals: dict[int, dict[str, Any]] = {}
    for part in parts:
        merged["window_s"] = max(merged["window_s"], float(part["window_s"]))
        for key in ("requests", "ok", "non_2xx", "rejected", "bytes_received", "iterations"):
            merged[key] += int(part[key])
        merged["bytes_sent"] += int(part.get("bytes_sent", 0))
        _add_counts(merged["status_codes"], part["status_codes"])
        _add_counts(merged["errors"], part["errors"])
        latency.add(decode_histogram(part["latency"]))
        for item in part["intervals"]:
            slot = intervals.setdefault(
                int(item["index"]),
                {**item, "requests": 0, "ok": 0, "errors": 0, "histogram": new_histogram()},
            )
            slot["length_s"] = max(slot["length_s"], item["length_s"])
            for key in ("requests", "ok", "errors"):
                slot[key] += int(item[key])
            slot["histogram"].add(decode_histogram(item["histogram"]))
    intended = [part.get("intended") for part in parts]
    merged["intended"] = sum(intended) if intended and None not in intended else None
    merged["latency"] = encode_histogram(latency)
    merged["intervals"] = [
        {**intervals[index], "histogram": encode_histogram(intervals[index]["histogram"])}
        for index in sorted(intervals)
    ]
    return merged
