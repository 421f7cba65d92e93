"""WindowRecorder: window exclusion, counters, intervals, and the lossless merge."""

from __future__ import annotations

import json

import pytest

from pytest_netperf.drivers.locust.in_locust.window_recorder import WindowRecorder, merge_payloads, ms_to_ns
from pytest_netperf.results.histogram import HIGHEST_NS, decode_histogram, new_histogram


class ManualClock:
    """A clock the test advances by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_only_records_inside_the_window() -> None:
    clock = ManualClock()
    recorder = WindowRecorder(clock=clock)
    recorder.record_response(200, 1.0)  # warmup: before start
    recorder.start()
    recorder.record_response(200, 0.25)
    clock.now += 1.5
    recorder.record_response(200, 0.5)
    recorder.stop()
    recorder.record_response(200, 9.0)  # drain: after stop
    payload = recorder.payload()
    assert payload["requests"] == 2 and payload["ok"] == 2
    assert payload["window_s"] == pytest.approx(1.5)
    histogram = decode_histogram(payload["latency"])
    assert histogram.get_total_count() == 2
    assert histogram.get_max_value() == pytest.approx(500_000, rel=1e-3)


def test_counts_statuses_rejections_and_errors_apart() -> None:
    recorder = WindowRecorder(clock=ManualClock())
    recorder.start()
    recorder.record_response(200, 1.0, response_length=3)
    recorder.record_response(503, 2.0, response_length=5)
    recorder.record_response(200, 1.0, rejected=True)
    recorder.record_error("connect_refused")
    recorder.record_error("connect_refused")
    payload = recorder.payload()
    assert payload["requests"] == 3
    assert payload["ok"] == 1
    assert payload["non_2xx"] == 1
    assert payload["rejected"] == 1
    assert payload["status_codes"] == {"200": 2, "503": 1}
    assert payload["errors"] == {"other": 1, "connect_refused": 2}
    assert payload["bytes_received"] == 8
    # only the accepted 2xx response carries latency
    assert decode_histogram(payload["latency"]).get_total_count() == 1


def test_intervals_split_by_completion_time() -> None:
    clock = ManualClock()
    recorder = WindowRecorder(interval_s=1.0, clock=clock)
    recorder.start()
    recorder.record_response(200, 1.0)
    clock.now += 1.2
    recorder.record_response(200, 3.0)
    recorder.record_error("reset")
    clock.now += 0.3
    recorder.stop()
    intervals = recorder.payload()["intervals"]
    assert [(i["index"], i["requests"], i["ok"], i["errors"]) for i in intervals] == [
        (0, 1, 1, 0),
        (1, 1, 1, 1),
    ]
    assert intervals[1]["length_s"] == pytest.approx(0.5)


def test_merge_equals_recording_everything_in_one_place() -> None:
    clock = ManualClock()
    parts = [WindowRecorder(clock=clock) for _ in range(3)]
    together = WindowRecorder(clock=clock)
    for recorder in parts + [together]:
        recorder.start()
    for i in range(3000):
        value_ms = 0.05 + (i % 997) * 0.013
        parts[i % 3].record_response(200 if i % 50 else 404, value_ms)
        together.record_response(200 if i % 50 else 404, value_ms)
        if i % 1000 == 999:
            clock.now += 1.0
    for recorder in parts + [together]:
        recorder.stop()
    merged = merge_payloads(recorder.payload() for recorder in parts)
    single = together.payload()
    for key in ("requests", "ok", "non_2xx", "status_codes", "errors"):
        assert merged[key] == single[key]
    merged_hist, single_hist = decode_histogram(merged["latency"]), decode_histogram(single["latency"])
    assert merged_hist.get_total_count() == single_hist.get_total_count()
    for q in (50, 90, 99, 99.9, 100):
        assert merged_hist.get_value_at_percentile(q) == single_hist.get_value_at_percentile(q)
    assert [i["requests"] for i in merged["intervals"]] == [i["requests"] for i in single["intervals"]]
    json.dumps(merged)  # travels as JSON


def test_nanosecond_conversion_keeps_microseconds_and_clamps() -> None:
    assert ms_to_ns(0.123456) == 123_456
    assert ms_to_ns(-1.0) == 0
    assert ms_to_ns(10**9) == HIGHEST_NS
    histogram = new_histogram()
    assert histogram.record_value(ms_to_ns(0.0123))
    # the shared histogram keeps 3 significant digits down to 1 µs (and below)
    assert histogram.get_max_value() == pytest.approx(12_300, rel=1e-3)


def test_rejects_non_positive_interval() -> None:
    with pytest.raises(ValueError):
        WindowRecorder(interval_s=0)


def test_counts_the_starts_the_schedules_intended_inside_the_window() -> None:
    clock = ManualClock()
    due = [100.05 + 0.1 * k for k in range(100)]  # a schedule's intended starts

    recorder = WindowRecorder(clock=clock, intended_by=lambda t: sum(1 for start in due if start <= t))
    assert recorder.payload()["intended"] is None
    clock.now = 101.0
    recorder.start()
    clock.now = 103.0
    recorder.stop()
    clock.now = 104.0  # later schedule progress is not the window's
    assert recorder.payload()["intended"] == 20
    assert WindowRecorder(clock=clock).payload()["intended"] is None  # unpaced


def test_merge_adds_intended_starts_only_when_every_part_counted_them() -> None:
    clock = ManualClock()
    paced = [WindowRecorder(clock=clock, intended_by=lambda t, n=n: int(t * n)) for n in (10, 30)]
    for recorder in paced:
        recorder.start()
    clock.now += 2.0
    for recorder in paced:
        recorder.stop()
    payloads = [recorder.payload() for recorder in paced]
    assert merge_payloads(payloads)["intended"] == 20 + 60
    assert merge_payloads([*payloads, {**payloads[0], "intended": None}])["intended"] is None
