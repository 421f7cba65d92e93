"""A budget's number and unit checked against its metric and turned into a canonical threshold."""

from __future__ import annotations

import math
from typing import Literal, Optional

from pytest_netperf.budget import metrics
from pytest_netperf.budget.families import Family
from pytest_netperf.errors import BudgetSyntaxError

__all__ = ["BYTE_UNITS", "COUNT_SUFFIXES", "TIME_UNITS", "Form", "threshold_of"]

Form = Literal["value", "loss", "added", "ratio"]

TIME_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}
#: Memory units, binary as Docker's limits are (``64m`` there, ``64MB`` or ``64MiB`` here).
BYTE_UNITS = {
    "b": 1.0,
    **{f"{p}{s}": float(1024**power) for power, p in enumerate("kmg", start=1) for s in ("", "b", "ib")},
}
COUNT_SUFFIXES = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6}


def threshold_of(
    source: str,
    metric: str,
    form: Form,
    op: str,
    number: float,
    unit: str,
    target: Optional[str],
    per_hop: bool,
) -> tuple[float, Form]:
    """The canonical threshold of a budget's number and unit, and its form (``x`` makes it a
    ratio); BudgetSyntaxError for a combination that cannot be judged or can never hold."""
    kind = metrics.get(metric).family
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
    return float(threshold), form


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
    if unit.lower() not in TIME_UNITS:
        raise BudgetSyntaxError(f"{source!r}: added latency takes a time unit (ns, us, ms, s), not {unit!r}")
    return number * TIME_UNITS[unit.lower()]


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
        if unit.lower() not in BYTE_UNITS:
            raise BudgetSyntaxError(
                f"{source!r}: a memory limit takes a unit (B, KB, MB, GB; binary, so MB = MiB), not {unit!r}"
            )
        return number * BYTE_UNITS[unit.lower()]
    if kind == Family.CORES and unit != "":
        raise BudgetSyntaxError(
            f"{source!r}: {metric} is a number of cores, written without a unit (e.g. 'cpu[*] <= 1.5'), "
            "or per throughput: 'cpu[*] <= 0.6 per 1k rps'"
        )
    if kind == Family.CPU_TIME and unit.lower() not in TIME_UNITS:
        raise BudgetSyntaxError(
            f"{source!r}: CPU per request takes a time unit (ns, us, ms, s), e.g. '{metric} <= 50us', "
            f"or a factor: '{metric} <= 1.05x base'"
        )
    if kind in (Family.LATENCY, Family.CPU_TIME):
        if unit == "":
            raise BudgetSyntaxError(f"latency budget {source!r} needs a unit (ns, us, ms, s)")
        if unit.lower() not in TIME_UNITS:
            raise BudgetSyntaxError(
                f"{source!r}: a latency limit takes a time unit (ns, us, ms, s), not {unit!r}; "
                f"for a relative limit write '{metric} <= 1.1x reference'"
            )
        return number * TIME_UNITS[unit.lower()]
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
    if unit in COUNT_SUFFIXES:
        return number * COUNT_SUFFIXES[unit]
    what = {Family.RATE: "a rate (requests per second)", Family.PACKET_RATE: "a rate (packets per second)"}.get(
        kind, "a count"
    )
    if unit == "m":
        raise BudgetSyntaxError(f"{source!r}: write M for millions ('m' would be milli)")
    if unit == "%":
        hint = "; for a relative limit write 'rps_loss <= 10%'" if kind == Family.RATE else ""
        raise BudgetSyntaxError(f"{source!r}: {metric} is {what}, not a percentage{hint}")
    raise BudgetSyntaxError(f"{source!r}: {metric} is {what}; write a plain number (k and M allowed), not {unit!r}")
