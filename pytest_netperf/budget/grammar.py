"""Budget grammar: ``"p90 < 1ms"``, ``"rps_loss <= 10%"``, ``"p99 <= 1.2x baseline"`` …

A budget names one metric, one operator and one threshold, and says what the threshold
is compared with: an absolute limit, a reference measured in the same run, or the
stored baseline of the test.  :func:`parse_budget` turns text into a frozen
:class:`Budget`; thresholds are stored in canonical units (latency in nanoseconds,
percentages as fractions, rates in requests per second).  The full grammar is in
``docs/budgets.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal, Optional, Union

from pytest_netperf.budget import metrics
from pytest_netperf.budget.families import Family, format_fraction
from pytest_netperf.budget.thresholds import Form, threshold_of
from pytest_netperf.budget.tokens import (
    check_operator,
    match_budget,
    parse_qualifiers,
    per_krps_metric,
    split_metric,
    split_unit,
)
from pytest_netperf.errors import BudgetSyntaxError

__all__ = ["PER_KRPS_TEXT", "Budget", "Comparison", "coerce_budget", "parse_budget"]

Comparison = Literal["absolute", "reference", "baseline"]

#: ``per 1k rps``: a cores budget normalised by throughput (Istio's "vCPU per 1000 rps").
PER_KRPS_TEXT = "cores per 1k rps"


@dataclass(frozen=True)
class Budget:
    """One parsed budget; build it with :func:`parse_budget` or a constructor below.

    ``threshold`` is canonical: nanoseconds for latency (also for ``_added``), requests
    per second for ``rps``, a fraction for ``_loss`` and ``error_rate`` (10% -> 0.1), a
    plain factor for ratios (1.2x -> 1.2), a count for ``errors`` and ``sockets``.
    """

    text: str
    metric: str
    op: str
    threshold: float
    comparison: Comparison = "absolute"
    form: Form = "value"
    per_hop: bool = False
    #: Written ``cpu[X] <= 0.6 per 1k rps``: judged as ``cpu_per_request[X]`` (0.6 cores per
    #: 1000 rps is 600us of CPU per request) and shown in cores per 1k rps.
    per_krps: bool = False

    def __str__(self) -> str:
        return self.text

    # ----- derived properties -------------------------------------------------------
    @property
    def kind(self) -> Family:
        """The metric family: latency, rate, count or fraction (see the metrics registry)."""
        return metrics.get(self.metric).family

    @property
    def exact(self) -> bool:
        """True for budgets judged on counts without a confidence interval."""
        return metrics.get(self.metric).exact

    @property
    def name(self) -> str:
        """The judged quantity as written: ``rps_loss``, ``p90_added``, ``p99`` …"""
        return self.metric if self.form in ("value", "ratio") else f"{self.metric}_{self.form}"

    @property
    def direction(self) -> Literal["higher", "lower", "both"]:
        """Which way the judged quantity gets worse: ``higher`` for ``<``/``<=`` budgets,
        ``lower`` for ``>``/``>=`` budgets, ``both`` for ``==``."""
        if self.op in ("<", "<="):
            return "higher"
        if self.op in (">", ">="):
            return "lower"
        return "both"

    @property
    def unit(self) -> str:
        """Unit of the threshold: ``%`` for losses and rates of errors, ``x`` for ratios,
        otherwise the metric's canonical unit (``ns``, ``responses/s``, ``count``)."""
        if self.form == "loss" or self.kind == Family.FRACTION:
            return "%"
        if self.form == "ratio":
            return "x"
        if self.per_krps:
            return PER_KRPS_TEXT
        return metrics.get(self.metric).unit

    def satisfied_by(self, value: float) -> bool:
        """Whether ``value`` (canonical units) meets the budget's operator and threshold."""
        return _compare(value, self.op, self.threshold)

    def format_value(self, value: float) -> str:
        """Render a value of the judged quantity in the budget's display unit."""
        if self.per_krps and math.isfinite(value):
            return f"{value / 1e6:.3g} {PER_KRPS_TEXT}"
        if math.isnan(value) or math.isinf(value) or self.unit not in ("%", "x"):
            return metrics.format_metric(self.metric, value)
        if self.unit == "%":
            return format_fraction(value)
        return f"{value:.3f}x"

    def describe(self) -> str:
        """A sentence for reports, e.g. ``rps loss vs the same-run reference ≤ 10%``."""
        words = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "==": "="}[self.op]
        limit = self.format_value(self.threshold)
        other = self.comparison
        against = {"reference": "the same-run reference", "baseline": "the base revision or stored baseline"}
        if self.form == "loss":
            what = f"{self.metric} loss (1 - candidate/{other}) vs {against[other]}"
        elif self.form == "added":
            what = f"{self.metric} added (candidate - {other}) over {against[other]}"
        elif self.form == "ratio":
            what = f"{self.metric} as a multiple (candidate/{other}) of {against[other]}"
        elif self.metric == "errors":
            what = "errors summed over all rounds"
        elif self.metric == "error_rate":
            what = "error rate over all requests of all rounds"
        elif self.metric == "sockets":
            what = "sockets opened in every round"
        elif self.per_krps:
            what = f"cores per 1000 rps (CPU per request) of {', '.join(metrics.get(self.metric).scope)}"
        else:
            what = f"{self.metric} (absolute)"
        hop = " per hop" if self.per_hop else ""
        return f"{what} {words} {limit}{hop}"

    # ----- convenience constructors for Python users --------------------------------
    @classmethod
    def parse(cls, text: str) -> Budget:
        """Same as :func:`parse_budget`."""
        return parse_budget(text)

    @classmethod
    def latency(cls, metric: str, op: str, value: Union[str, float]) -> Budget:
        """Absolute latency limit; ``value`` is ``"1ms"``-style text or nanoseconds."""
        return parse_budget(f"{metric} {op} {_time_text(value)}")

    @classmethod
    def rps(cls, op: str, value: float) -> Budget:
        """Absolute throughput limit in requests per second."""
        return parse_budget(f"rps {op} {_number_text(value)}")

    @classmethod
    def rps_loss(cls, max_pct: float, vs: str = "reference") -> Budget:
        """Throughput may drop at most ``max_pct`` percent against ``vs``."""
        return parse_budget(f"rps_loss <= {_number_text(max_pct)}% vs {vs}")

    @classmethod
    def added(
        cls,
        metric: str,
        max_value: Union[str, float],
        vs: str = "reference",
        per_hop: bool = False,
    ) -> Budget:
        """Latency may grow by at most ``max_value`` (text or ns) over ``vs``."""
        hop = " per hop" if per_hop else ""
        return parse_budget(f"{metric}_added <= {_time_text(max_value)}{hop} vs {vs}")

    @classmethod
    def ratio(cls, metric: str, op: str, factor: float, vs: str = "reference") -> Budget:
        """Candidate over ``vs`` as a factor, e.g. ``ratio("p99", "<=", 1.2)``."""
        return parse_budget(f"{metric} {op} {_number_text(factor)}x {vs}")

    @classmethod
    def no_errors(cls) -> Budget:
        """No error of any kind in any round."""
        return parse_budget("errors == 0")

    @classmethod
    def max_error_rate(cls, pct: float) -> Budget:
        """Errors over all requests at most ``pct`` percent."""
        return parse_budget(f"error_rate <= {_number_text(pct)}%")

    @classmethod
    def max_sockets(cls, count: int) -> Budget:
        """At most ``count`` sockets opened in each round (keep-alive check)."""
        return parse_budget(f"sockets <= {int(count)}")


def coerce_budget(obj: object) -> Budget:
    """Return ``obj`` as a :class:`Budget` (text is parsed); TypeError for anything else."""
    if isinstance(obj, Budget):
        return obj
    if isinstance(obj, str):
        return parse_budget(obj)
    raise TypeError(f"a budget is a string or a Budget, not {type(obj).__name__}: {obj!r}")


def parse_budget(text: str) -> Budget:
    """Parse budget text; raises :class:`BudgetSyntaxError` naming the text and the problem."""
    if not isinstance(text, str):
        raise TypeError(f"budget text must be a string, not {type(text).__name__}")
    source = text.strip()
    if not source:
        raise BudgetSyntaxError("empty budget; expected e.g. 'p90 < 1ms' or 'rps_loss <= 10%'")
    match = match_budget(source)
    metric, form = split_metric(match.group("metric"), source)
    op = check_operator(match.group("op"), source)
    number = match.group("number")
    if number is None:
        raise BudgetSyntaxError(
            f"budget {source!r} needs a non-negative number after {op!r}; expected e.g. 'p90 < 1ms'"
        )
    unit, rest = split_unit(match.group("unit"), match.group("rest"), source)
    target, per_hop, per_krps = parse_qualifiers(rest, source)
    if per_krps:  # 1 core per 1000 rps is 1ms (1e6 ns) of CPU per request
        metric = per_krps_metric(source, metric, form, unit, target)
        return replace(_build(source, metric, form, op, float(number) * 1e6, "ns", None, per_hop), per_krps=True)
    return _build(source, metric, form, op, float(number), unit, target, per_hop)


def _build(
    source: str,
    metric: str,
    form: Form,
    op: str,
    number: float,
    unit: str,
    target: Optional[str],
    per_hop: bool,
) -> Budget:
    threshold, form = threshold_of(source, metric, form, op, number, unit, target, per_hop)
    if form in ("loss", "added", "ratio"):
        comparison: Comparison = "baseline" if target == "baseline" else "reference"
    else:
        comparison = "absolute"
    return Budget(source, metric, op, float(threshold), comparison, form, per_hop)


def _compare(value: float, op: str, threshold: float) -> bool:
    if op == "<":
        return value < threshold
    if op == "<=":
        return value <= threshold
    if op == ">":
        return value > threshold
    if op == ">=":
        return value >= threshold
    return value == threshold


def _number_text(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def _time_text(value: Union[str, float]) -> str:
    return value if isinstance(value, str) else f"{_number_text(value)}ns"
