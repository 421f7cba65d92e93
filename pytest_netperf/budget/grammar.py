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
import re
from dataclasses import dataclass, replace
from typing import Literal, Optional, Union

from pytest_netperf.budget import metrics
from pytest_netperf.budget.metrics import Family, format_fraction
from pytest_netperf.errors import BudgetSyntaxError

Comparison = Literal["absolute", "reference", "baseline"]
Form = Literal["value", "loss", "added", "ratio"]

OPERATORS = ("<", "<=", ">", ">=", "==")

_TIME_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}
#: Memory units, binary as Docker's limits are (``64m`` there, ``64MB`` or ``64MiB`` here).
_BYTE_UNITS = {
    "b": 1.0,
    **{f"{p}{s}": float(1024**power) for power, p in enumerate("kmg", start=1) for s in ("", "b", "ib")},
}
#: ``per 1k rps``: a cores budget normalised by throughput (Istio's "vCPU per 1000 rps").
PER_KRPS_TEXT = "cores per 1k rps"
_COUNT_SUFFIXES = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6}
# Longest first, so "ms" wins over "m" and "s".
_KNOWN_UNITS = sorted(set(_TIME_UNITS) | {"k", "K", "M", "m", "%", "x", "X", "×"}, key=len, reverse=True)

_BUDGET_RE = re.compile(
    r"""^\s*(?P<metric>[^\s<>=!]+)\s*
        (?P<op><=|>=|==|=<|=>|!=|<|>|=)?\s*
        (?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)?\s*
        (?P<unit>[A-Za-zµμ%×]*)
        (?P<rest>.*?)\s*$""",
    re.VERBOSE,
)
_QUALIFIER_RE = re.compile(
    r"(?:(?:vs|versus|of)?(?:the)?(?P<target>reference|ref|baseline|base)|per(?P<per>hop|depth)"
    r"|per(?P<krps>1k|1000)(?:rps|requests/s|req/s))"
)


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
    # node names in brackets may be written with spaces: cpu[app, db]
    match = _BUDGET_RE.match(re.sub(r"\[([^\]]*)\]", lambda m: "[" + "".join(m.group(1).split()) + "]", source))
    if match is None:  # pragma: no cover - the pattern accepts any non-empty text
        raise BudgetSyntaxError(f"cannot read budget {source!r}; expected e.g. 'p90 < 1ms'")
    metric, form = _split_metric(match.group("metric"), source)
    op = _check_operator(match.group("op"), source)
    number = match.group("number")
    if number is None:
        raise BudgetSyntaxError(
            f"budget {source!r} needs a non-negative number after {op!r}; expected e.g. 'p90 < 1ms'"
        )
    unit, rest = _split_unit(match.group("unit"), match.group("rest"), source)
    target, per_hop, per_krps = _parse_qualifiers(rest, source)
    if per_krps:  # 1 core per 1000 rps is 1ms (1e6 ns) of CPU per request
        metric = _per_krps_metric(source, metric, form, unit, target)
        return replace(_build(source, metric, form, op, float(number) * 1e6, "ns", None, per_hop), per_krps=True)
    return _build(source, metric, form, op, float(number), unit, target, per_hop)


# ----- parsing helpers ------------------------------------------------------------------
def _metric_kind(metric: str) -> Family:
    return metrics.get(metric).family


def _split_metric(raw: str, source: str) -> tuple[str, Form]:
    if "[" in raw:  # a metric of the system under test, scoped to nodes: cpu_per_request[edge]
        base = raw.split("[", 1)[0].lower()
        if not raw.endswith("]"):
            raise BudgetSyntaxError(
                f"budget {source!r}: close the brackets after the node names, without spaces, e.g. '{base}[app,db]'"
            )
        if base not in metrics.SYSTEM_METRICS:
            known_system = ", ".join(f"{m}[node]" for m in metrics.SYSTEM_METRICS)
            raise BudgetSyntaxError(
                f"unknown metric {raw!r} in budget {source!r}; only these take [nodes]: {known_system}"
            )
        try:
            return metrics.get(base + raw[len(base) :]).name, "value"
        except KeyError as exc:
            raise BudgetSyntaxError(f"budget {source!r}: {exc.args[0]}") from None
    name = raw.lower()
    if name in metrics.SYSTEM_METRICS:
        raise BudgetSyntaxError(
            f"budget {source!r}: {name} is read per node; name them, e.g. '{name}[edge]', '{name}[envoy-*]' "
            f"or '{name}[*]' for the whole system under test"
        )
    known = metrics.names()
    for suffix, form in (("_loss", "loss"), ("_added", "added")):
        if name.endswith(suffix) and name[: -len(suffix)] in known:
            return name[: -len(suffix)], form  # type: ignore[return-value]
    if name in known:
        return name, "value"
    expected = ", ".join(known + ("rps_loss", "<latency>_added") + tuple(f"{m}[node]" for m in metrics.SYSTEM_METRICS))
    raise BudgetSyntaxError(f"unknown metric {raw!r} in budget {source!r}; expected one of {expected}")


def _check_operator(op: Optional[str], source: str) -> str:
    if op is None:
        raise BudgetSyntaxError(
            f"budget {source!r} needs an operator after the metric; expected one of " + ", ".join(OPERATORS)
        )
    fixes = {"=": "==", "=<": "<=", "=>": ">="}
    if op in fixes:
        raise BudgetSyntaxError(f"operator {op!r} in budget {source!r}; did you mean {fixes[op]!r}?")
    if op == "!=":
        raise BudgetSyntaxError(
            f"operator '!=' is not supported in budget {source!r}; expected one of " + ", ".join(OPERATORS)
        )
    return op


def _split_unit(unit: str, rest: str, source: str) -> tuple[str, str]:
    """Separate the unit from qualifiers written without a space (``1.2xreference``)."""
    if unit == "" or unit in _KNOWN_UNITS or unit.lower() in _BYTE_UNITS:
        return unit, rest
    if _qualifiers_parse(unit + rest):  # no unit at all: "rps >= 5 reference"
        return "", unit + rest
    for known in _KNOWN_UNITS:
        if unit.startswith(known):
            tail = unit[len(known) :] + rest
            if _qualifiers_parse(tail):
                return known, tail
    if unit.lower() in _TIME_UNITS:
        return unit.lower(), rest
    raise BudgetSyntaxError(
        f"unknown unit {unit!r} in budget {source!r}; expected ns, us, ms, s (latency), k or M (counts), % or x"
    )


def _qualifiers_parse(rest: str) -> bool:
    squeezed = re.sub(r"\s+", "", rest).lower()
    position = 0
    while position < len(squeezed):
        found = _QUALIFIER_RE.match(squeezed, position)
        if found is None or found.end() == position:
            return False
        position = found.end()
    return True


def _parse_qualifiers(rest: str, source: str) -> tuple[Optional[str], bool, bool]:
    squeezed = re.sub(r"\s+", "", rest).lower()
    target: Optional[str] = None
    per_hop = per_krps = False
    position = 0
    while position < len(squeezed):
        found = _QUALIFIER_RE.match(squeezed, position)
        if found is None:
            raise BudgetSyntaxError(
                f"unexpected {rest.strip()!r} in budget {source!r}; expected nothing, "
                "'reference', 'baseline', 'base', 'vs base', 'per hop' or 'per 1k rps'"
            )
        if found.group("target"):
            if target is not None:
                raise BudgetSyntaxError(f"budget {source!r} names what to compare with twice")
            # "base": the base revision (--netperf-base), else the stored baseline
            target = "baseline" if found.group("target") in ("baseline", "base") else "reference"
        elif found.group("krps"):
            if per_krps:
                raise BudgetSyntaxError(f"budget {source!r} says 'per 1k rps' twice")
            per_krps = True
        else:
            if per_hop:
                raise BudgetSyntaxError(f"budget {source!r} says 'per hop' twice")
            per_hop = True
        position = found.end()
    return target, per_hop, per_krps


def _per_krps_metric(source: str, metric: str, form: Form, unit: str, target: Optional[str]) -> str:
    """``cpu[X] <= 0.6 per 1k rps`` is judged as ``cpu_per_request[X]``; anything else is an error."""
    scoped = metrics.split_scoped(metric)
    if scoped is None or scoped[0] != "cpu" or form != "value" or target is not None or unit != "":
        raise BudgetSyntaxError(
            f"{source!r}: 'per 1k rps' takes an absolute number of cores, e.g. 'cpu[*] <= 0.6 per 1k rps'; "
            "for a comparison write 'cpu_per_request[edge] <= 1.05x base'"
        )
    return metrics.get("cpu_per_request[" + ",".join(scoped[1]) + "]").name


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
    kind = _metric_kind(metric)
    if unit.lower() == "x" or unit == "×":
        form = _check_ratio(source, metric, form, kind, target)
        threshold = number
        if threshold <= 0:
            raise BudgetSyntaxError(f"ratio in budget {source!r} must be above 0x")
    elif form == "loss":
        threshold = _check_loss(source, metric, unit, number)
    elif form == "added":
        threshold = _check_added(source, metric, kind, unit, number)
    else:
        threshold = _check_value(source, metric, op, kind, unit, number, target)
    if per_hop and form != "added":
        raise BudgetSyntaxError(
            f"'per hop' in budget {source!r} applies to added latency only, e.g. 'p90_added <= 1ms per hop'"
        )
    if op == "==" and not metrics.get(metric).exact:
        raise BudgetSyntaxError(
            f"'==' in budget {source!r} is only for counts (errors, error_rate, sockets); use <, <=, > or >="
        )
    _check_satisfiable(source, metric, form, op, float(threshold))
    if form in ("loss", "added", "ratio"):
        comparison: Comparison = "baseline" if target == "baseline" else "reference"
    else:
        comparison = "absolute"
    return Budget(source, metric, op, float(threshold), comparison, form, per_hop)


def _check_satisfiable(source: str, metric: str, form: Form, op: str, threshold: float) -> None:
    """Reject thresholds that overflow, counts that are not whole, and budgets that can never hold."""
    if not math.isfinite(threshold):
        raise BudgetSyntaxError(f"{source!r}: the threshold is too large to represent; write a finite number")
    family = metrics.get(metric).family
    if form == "value" and family is Family.COUNT and not threshold.is_integer():
        raise BudgetSyntaxError(f"{source!r}: {metric} is a count of whole {metric}; write a whole number")
    never = form == "value" and (
        (op == "<" and threshold <= 0) or (op == "<=" and threshold <= 0 and family is Family.LATENCY)
    )
    if never:
        raise BudgetSyntaxError(
            f"{source!r} can never hold: {metric} is never below 0"
            + (" and a latency is never 0" if family is Family.LATENCY else "")
            + {
                Family.COUNT: f"; for none at all write '{metric} == 0'",
                Family.FRACTION: f"; write '{metric} == 0%'",
            }.get(family, "")
        )


_RATIO_FAMILIES = (
    Family.LATENCY,
    Family.RATE,
    Family.CPU_TIME,
    Family.CORES,
    Family.BYTES,
    Family.BITRATE,
    Family.PACKET_RATE,
    Family.INSTRUCTIONS,
    Family.SYSCALLS,
)


def _check_ratio(source: str, metric: str, form: Form, kind: Family, target: Optional[str]) -> Form:
    if form == "loss":
        raise BudgetSyntaxError(f"{source!r}: a loss is a percentage, e.g. 'rps_loss <= 10%'")
    if form == "added":
        raise BudgetSyntaxError(
            f"{source!r}: added latency takes a time unit (ns, us, ms, s); "
            f"for a factor write '{metric} <= 1.2x reference'"
        )
    if kind not in _RATIO_FAMILIES:
        raise BudgetSyntaxError(
            f"{source!r}: a ratio applies to rps, latency, CPU, memory, gbps and pps metrics; "
            f"{metric} budgets are absolute, e.g. 'errors == 0'"
        )
    if target is None:
        raise BudgetSyntaxError(
            f"{source!r}: a ratio needs what it is relative to; "
            f"expected '{metric} ... x reference', '... x base' or '... x baseline'"
        )
    return "ratio"


def _check_loss(source: str, metric: str, unit: str, number: float) -> float:
    if metrics.get(metric).exact:
        raise BudgetSyntaxError(
            f"{source!r}: a loss applies to rps; {metric} budgets are absolute, "
            "e.g. 'errors == 0' or 'error_rate <= 1%'"
        )
    if metrics.get(metric).family in (Family.BITRATE, Family.PACKET_RATE):
        raise BudgetSyntaxError(f"{source!r}: a loss applies to rps; write '{metric} >= 0.9x reference'")
    if metric != "rps":
        raise BudgetSyntaxError(
            f"{source!r}: a loss applies to rps; for latency write "
            f"'{metric}_added <= 1ms' or '{metric} <= 1.1x reference'"
        )
    if unit != "%":
        raise BudgetSyntaxError(f"{source!r}: a loss is a percentage, e.g. 'rps_loss <= 10%'")
    if number >= 100:
        raise BudgetSyntaxError(f"{source!r}: a loss must be below 100%")
    return number / 100.0


def _check_added(source: str, metric: str, kind: Family, unit: str, number: float) -> float:
    if kind != Family.LATENCY:
        hint = "rps_loss <= 10%' or 'rps >= 0.9x reference" if metric == "rps" else "errors == 0"
        raise BudgetSyntaxError(f"{source!r}: 'added' applies to latency metrics; use '{hint}'")
    if unit == "":
        raise BudgetSyntaxError(f"latency budget {source!r} needs a unit (ns, us, ms, s)")
    if unit.lower() not in _TIME_UNITS:
        raise BudgetSyntaxError(f"{source!r}: added latency takes a time unit (ns, us, ms, s), not {unit!r}")
    return number * _TIME_UNITS[unit.lower()]


def _check_value(
    source: str,
    metric: str,
    op: str,
    kind: Family,
    unit: str,
    number: float,
    target: Optional[str],
) -> float:
    if target is not None:
        raise BudgetSyntaxError(
            f"{source!r}: a comparison with the {target} takes a factor, e.g. "
            f"'{metric} {op} {number:g}x {target}'"
            + (f", or write '{metric}_added <= 1ms vs {target}'" if kind == Family.LATENCY else "")
        )
    if kind == Family.BYTES:
        if unit.lower() not in _BYTE_UNITS:
            raise BudgetSyntaxError(
                f"{source!r}: a memory limit takes a unit (B, KB, MB, GB; binary, so MB = MiB), not {unit!r}"
            )
        return number * _BYTE_UNITS[unit.lower()]
    if kind == Family.CORES and unit != "":
        raise BudgetSyntaxError(
            f"{source!r}: {metric} is a number of cores, written without a unit (e.g. 'cpu[*] <= 1.5'), "
            "or per throughput: 'cpu[*] <= 0.6 per 1k rps'"
        )
    if kind == Family.CPU_TIME and unit.lower() not in _TIME_UNITS:
        raise BudgetSyntaxError(
            f"{source!r}: CPU per request takes a time unit (ns, us, ms, s), e.g. '{metric} <= 50us', "
            f"or a factor: '{metric} <= 1.05x base'"
        )
    if kind in (Family.LATENCY, Family.CPU_TIME):
        if unit == "":
            raise BudgetSyntaxError(f"latency budget {source!r} needs a unit (ns, us, ms, s)")
        if unit.lower() not in _TIME_UNITS:
            raise BudgetSyntaxError(
                f"{source!r}: a latency limit takes a time unit (ns, us, ms, s), not {unit!r}; "
                f"for a relative limit write '{metric} <= 1.1x reference'"
            )
        return number * _TIME_UNITS[unit.lower()]
    if kind == Family.FRACTION:
        if unit != "%":
            raise BudgetSyntaxError(f"{source!r}: {metric} is a percentage, e.g. '{metric} <= 0.1%'")
        if number > 100:
            raise BudgetSyntaxError(f"{source!r}: {metric} cannot exceed 100%")
        return number / 100.0
    if kind == Family.BITRATE:
        if unit.lower() not in ("", "gbps"):
            raise BudgetSyntaxError(
                f"{source!r}: {metric} is in gigabits per second; write a plain number, e.g. '{metric} >= 9.5', "
                f"or a factor: '{metric} >= 0.9x reference'"
            )
        return number
    if unit in _COUNT_SUFFIXES:
        return number * _COUNT_SUFFIXES[unit]
    what = {Family.RATE: "a rate (requests per second)", Family.PACKET_RATE: "a rate (packets per second)"}.get(
        kind, "a count"
    )
    if unit == "m":
        raise BudgetSyntaxError(f"{source!r}: write M for millions ('m' would be milli)")
    if unit == "%":
        hint = "; for a relative limit write 'rps_loss <= 10%'" if kind == Family.RATE else ""
        raise BudgetSyntaxError(f"{source!r}: {metric} is {what}, not a percentage{hint}")
    raise BudgetSyntaxError(f"{source!r}: {metric} is {what}; write a plain number (k and M allowed), not {unit!r}")


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
