"""HdrHistogram helpers: decode and encode the driver's latency histograms.

The Rust driver serializes each latency histogram with the standard HdrHistogram *V2
compressed* encoding in base64 (nanoseconds, 3 significant digits, up to 60 s).  These
helpers let results, drivers and plots recompute percentiles exactly the way the
driver does.
"""

from __future__ import annotations

import math
from typing import Mapping, Union

from hdrh.histogram import HdrHistogram

#: Lowest discernible value (ns).  1 ns keeps 3 significant digits for every value ≥ 1 µs.
LOWEST_NS = 1
#: Highest trackable value (ns): 60 s.
HIGHEST_NS = 60_000_000_000
#: Significant decimal digits.
SIGNIFICANT_DIGITS = 3
#: Percentiles the driver reports, keyed like its JSON fields.
STANDARD_PERCENTILES: Mapping[str, float] = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9}


def new_histogram() -> HdrHistogram:
    """An empty histogram with the driver's range and precision."""
    return HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)


def decode_histogram(encoded: Union[str, bytes]) -> HdrHistogram:
    """Decode base64 V2-compressed text; raises ``ValueError`` for anything else."""
    data = encoded.encode("ascii") if isinstance(encoded, str) else encoded
    try:
        histogram = HdrHistogram.decode(data.strip())
    except Exception as exc:  # hdrh raises assorted types for corrupt input
        raise ValueError(f"not an encoded HdrHistogram: {exc}") from exc
    if histogram is None:
        raise ValueError("not an encoded HdrHistogram")
    return histogram


def encode_histogram(histogram: HdrHistogram) -> str:
    """Base64 text of the V2 compressed encoding (what the driver emits)."""
    return histogram.encode().decode("ascii")


def percentile_ns(histogram: HdrHistogram, q: float) -> int:
    """Value at percentile ``q`` (0–100), defined as the driver defines it.

    The driver (Rust ``hdrhistogram``) returns the highest value equivalent to the
    sample at rank ``ceil(q/100 * count)``; Python's ``get_value_at_percentile`` rounds
    the rank instead, which can differ by one bucket.  0 for an empty histogram.
    """
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} outside 0..100")
    total = histogram.get_total_count()
    if total == 0:
        return 0
    rank = max(1, math.ceil(q / 100.0 * total - 1e-9))
    for item in histogram.get_recorded_iterator():
        if item.total_count_to_this_value >= rank:
            return int(histogram.get_highest_equivalent_value(item.value_iterated_to))
    return int(histogram.get_max_value())


def summarize(histogram: HdrHistogram) -> dict[str, object]:
    """A driver-style ``*_ns`` block (count, min, mean, max, stdev, p50…p999, histogram)."""
    empty = histogram.get_total_count() == 0
    block: dict[str, object] = {
        "count": int(histogram.get_total_count()),
        "min": 0 if empty else int(histogram.get_min_value()),
        "mean": 0.0 if empty else float(histogram.get_mean_value()),
        "max": 0 if empty else int(histogram.get_max_value()),
        "stdev": 0.0 if empty else float(histogram.get_stddev()),
    }
    for key, q in STANDARD_PERCENTILES.items():
        block[key] = percentile_ns(histogram, q)
    block["histogram"] = encode_histogram(histogram)
    return block
