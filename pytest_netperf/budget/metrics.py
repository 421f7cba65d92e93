"""The metrics registry: every metric's name, family, unit, direction, extractor and format.

This is the one place that knows what ``p90`` or ``rps`` means. The budget grammar,
the statistics, baselines, reports, plots and the CLI read it; adding a metric is one
:class:`Metric` entry in :data:`REGISTRY` plus its extractor.

Values are canonical: latency in nanoseconds, throughput in responses per second,
fractions as fractions (0.1 for 10%), counts as counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # the registry reads rounds but does not import the result model
    from pytest_netperf.measure.results import RoundResult


class Family(str, Enum):
    """What kind of quantity a metric is; decides units, grammar and how it is judged."""

    LATENCY = "latency"
    RATE = "rate"
    COUNT = "count"
    FRACTION = "fraction"

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
}

Extractor = Callable[["RoundResult"], float]


@dataclass(frozen=True)
class Metric:
    """One metric: how it is read from a round, which way is better, how it is shown."""

    name: str
    family: Family
    better: Better
    extract: Extractor
    description: str
    #: Kept in readable form in baseline files next to the full rounds.
    stored: bool = True
    #: For a latency percentile: which one (0-100); None for every other metric.
    percentile: Optional[float] = None

    @property
    def unit(self) -> str:
        """Canonical unit: ``ns``, ``responses/s``, ``count`` or ``fraction``."""
        return FAMILY_UNITS[self.family]

    @property
    def exact(self) -> bool:
        """Counts and fractions are judged exactly, without a confidence interval."""
        return self.family in (Family.COUNT, Family.FRACTION)

    @property
    def higher_is_better(self) -> bool:
        """True for throughput-like metrics (a ratio below 1 is a regression)."""
        return self.better is Better.HIGHER

    def value(self, round_result: RoundResult) -> float:
        """This metric's value in one round."""
        return float(self.extract(round_result))

    def format(self, value: Optional[float]) -> str:
        """A value for people, e.g. ``1.25ms``, ``12,345 rps``, ``0.10%``, ``3``."""
        return format_value(self.family, value)


# ----- formatting: the one formatter of every unit ----------------------------------------
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


def format_value(family: Family, value: Optional[float]) -> str:
    """Format a canonical value of ``family``; ``n/a`` for None/NaN, ``inf`` kept."""
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    if family is Family.LATENCY:
        return format_duration_ns(value)
    if family is Family.RATE:
        return format_rate(value)
    if family is Family.FRACTION:
        return format_fraction(value)
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


# ----- extractors ---------------------------------------------------------------------
def _percentile(q: float) -> Extractor:
    return lambda r: r.latency.percentile_ns(q)


def _errors(r: RoundResult) -> float:
    return float(r.error_count)


_LATENCY = [
    ("p50", 50.0, True),
    ("p75", 75.0, False),
    ("p90", 90.0, True),
    ("p95", 95.0, False),
    ("p99", 99.0, True),
    ("p999", 99.9, True),
]

#: Every metric, by name, in the order reports list them.
REGISTRY: dict[str, Metric] = {
    "rps": Metric("rps", Family.RATE, Better.HIGHER, lambda r: r.achieved_rps, "responses per second"),
    **{
        name: Metric(
            name,
            Family.LATENCY,
            Better.LOWER,
            _percentile(q),
            f"{q:g}th percentile latency from the intended send time",
            stored=stored,
            percentile=q,
        )
        for name, q, stored in _LATENCY
    },
    "mean": Metric("mean", Family.LATENCY, Better.LOWER, lambda r: r.latency.mean_ns, "mean latency"),
    "max": Metric("max", Family.LATENCY, Better.LOWER, lambda r: r.latency.max_ns, "largest latency"),
    "errors": Metric("errors", Family.COUNT, Better.LOWER, _errors, "errors of every kind"),
    "error_rate": Metric(
        "error_rate",
        Family.FRACTION,
        Better.LOWER,
        lambda r: r.error_rate,
        "errors over attempted requests",
    ),
    "sockets": Metric(
        "sockets",
        Family.COUNT,
        Better.LOWER,
        lambda r: float(r.sockets_opened),
        "sockets the driver opened",
    ),
}


#: Metrics that count errors: a test with a budget on one of them allows errors.
ERROR_METRICS = ("errors", "error_rate")


def get(name: str) -> Metric:
    """The metric called ``name``; KeyError listing the known names otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(REGISTRY)}") from None


def names(*families: Family) -> tuple[str, ...]:
    """Metric names, optionally only of the given families, in registry order."""
    return tuple(m.name for m in REGISTRY.values() if not families or m.family in families)


def stored_names() -> tuple[str, ...]:
    """Metrics kept in readable form in baseline files."""
    return tuple(m.name for m in REGISTRY.values() if m.stored)


def judged_names() -> tuple[str, ...]:
    """Metrics judged with confidence intervals (whose A/A noise calibration measures)."""
    return tuple(m.name for m in REGISTRY.values() if not m.exact)


def units() -> dict[str, str]:
    """``{metric: canonical unit}`` for every metric (written into baseline files)."""
    return {m.name: m.unit for m in REGISTRY.values()}


def format_metric(name: str, value: Any) -> str:
    """Format a value of metric ``name`` (``n/a`` for a missing value)."""
    return get(name).format(None if value is None else float(value))
