"""pytest_netperf.results.histogram: decoding the driver's encoding, percentiles."""

from __future__ import annotations

import random

import pytest

from pytest_netperf.results.histogram import (
    decode_histogram,
    encode_histogram,
    new_histogram,
    percentile_ns,
    summarize,
)

#: Latency histogram printed by `netperf-driver http` (Rust hdrhistogram V2 deflate
#: serializer, base64) for 50 requests, with the summary numbers the driver printed.
RUST_ENCODED = (
    "HISTFAAAAHR4nC2LIQ6DUBBE9z9KfipI06CatoIgCEFxAiQKj+QwOCSOC3AqwhWQSIbA7s7O7mTm14+xmXV2VXCz"
    "E6K9bq3aLmGeHA0hJS/w6oSIN1ICNAYUerzUWByeJu1UaB4ZH54K/uUzuRNWJ8p1fFkcg+cANi0LQQ=="
)
RUST_SUMMARY = {"count": 50, "min": 431104, "p50": 481791, "p90": 585215, "p99": 903679, "max": 903679}


def _values(seed: int, n: int) -> list[int]:
    rng = random.Random(seed)
    return [int(rng.lognormvariate(12.0, 0.8)) + 1_000 for _ in range(n)]


def _histogram(values: list[int]):
    histogram = new_histogram()
    for v in values:
        histogram.record_value(v)
    return histogram


def test_decodes_the_rust_driver_encoding_to_the_same_numbers() -> None:
    histogram = decode_histogram(RUST_ENCODED)
    assert histogram.get_total_count() == RUST_SUMMARY["count"]
    assert histogram.get_min_value() == RUST_SUMMARY["min"]
    assert histogram.get_max_value() == RUST_SUMMARY["max"]
    for key, q in (("p50", 50), ("p90", 90), ("p99", 99)):
        assert percentile_ns(histogram, q) == RUST_SUMMARY[key], key


def test_encode_decode_round_trip() -> None:
    original = _histogram(_values(1, 2_000))
    text = encode_histogram(original)
    assert text.startswith("HISTF")
    back = decode_histogram(text)
    assert back.get_total_count() == 2_000
    for q in (50.0, 90.0, 99.0, 99.9):
        assert percentile_ns(back, q) == percentile_ns(original, q)


def test_percentile_uses_the_ceiling_rank_like_the_driver() -> None:
    # Ten distinct values: p91 is the 10th sample by ceil(9.1); rounding would give the 9th.
    histogram = _histogram([10_000 * i for i in range(1, 11)])
    assert percentile_ns(histogram, 91) == histogram.get_highest_equivalent_value(100_000)
    assert percentile_ns(histogram, 50) == histogram.get_highest_equivalent_value(50_000)
    assert percentile_ns(histogram, 0) == histogram.get_highest_equivalent_value(10_000)


def test_percentile_edge_cases() -> None:
    assert percentile_ns(new_histogram(), 99) == 0
    with pytest.raises(ValueError):
        percentile_ns(new_histogram(), 101)


def test_three_significant_digits_from_one_microsecond() -> None:
    for value in (1_000, 4_321, 23_456, 987_654, 59_000_000_000):
        histogram = _histogram([value])
        assert abs(percentile_ns(histogram, 50) - value) / value < 1e-3


@pytest.mark.parametrize("bad", ["", "not base64!", "SGVsbG8gd29ybGQ="])
def test_bad_input_is_a_value_error(bad: str) -> None:
    with pytest.raises(ValueError):
        decode_histogram(bad)


def test_summarize_matches_the_driver_block_shape() -> None:
    block = summarize(decode_histogram(RUST_ENCODED))
    assert set(block) == {"count", "min", "mean", "max", "stdev", "p50", "p90", "p99", "p999", "histogram"}
    assert {k: block[k] for k in RUST_SUMMARY} == RUST_SUMMARY
    empty = summarize(new_histogram())
    assert (empty["count"], empty["p99"], empty["max"]) == (0, 0, 0)
