"""Budget text split into its parts: metric and form, operator, number, unit and qualifiers."""

from __future__ import annotations

import re
from typing import Optional

from pytest_netperf.budget import metrics
from pytest_netperf.budget.thresholds import BYTE_UNITS, TIME_UNITS, Form
from pytest_netperf.errors import BudgetSyntaxError

__all__ = [
    "OPERATORS",
    "check_operator",
    "match_budget",
    "parse_qualifiers",
    "per_krps_metric",
    "split_metric",
    "split_unit",
]

OPERATORS = ("<", "<=", ">", ">=", "==")

# Longest first, so "ms" wins over "m" and "s".
_KNOWN_UNITS = sorted(set(TIME_UNITS) | {"k", "K", "M", "m", "%", "x", "X", "×"}, key=len, reverse=True)

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


def match_budget(source: str) -> re.Match[str]:
    """``source`` matched into metric, op, number, unit and rest (node names in brackets squeezed)."""
    # node names in brackets may be written with spaces: cpu[app, db]
    match = _BUDGET_RE.match(re.sub(r"\[([^\]]*)\]", lambda m: "[" + "".join(m.group(1).split()) + "]", source))
    if match is None:  # pragma: no cover - the pattern accepts any non-empty text
        raise BudgetSyntaxError(f"cannot read budget {source!r}; expected e.g. 'p90 < 1ms'")
    return match


def split_metric(raw: str, source: str) -> tuple[str, Form]:
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
    if name in metrics.COUNTED_BY:
        raise BudgetSyntaxError(
            f"budget {source!r}: {name} is counted on one node, the one the target enters; name it, e.g. '{name}[edge]'"
        )
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


def check_operator(op: Optional[str], source: str) -> str:
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


def split_unit(unit: str, rest: str, source: str) -> tuple[str, str]:
    """Separate the unit from qualifiers written without a space (``1.2xreference``)."""
    if unit == "" or unit in _KNOWN_UNITS or unit.lower() in BYTE_UNITS:
        return unit, rest
    if _qualifiers_parse(unit + rest):  # no unit at all: "rps >= 5 reference"
        return "", unit + rest
    for known in _KNOWN_UNITS:
        if unit.startswith(known):
            tail = unit[len(known) :] + rest
            if _qualifiers_parse(tail):
                return known, tail
    if unit.lower() in TIME_UNITS:
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


def parse_qualifiers(rest: str, source: str) -> tuple[Optional[str], bool, bool]:
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


def per_krps_metric(source: str, metric: str, form: Form, unit: str, target: Optional[str]) -> str:
    """``cpu[X] <= 0.6 per 1k rps`` is judged as ``cpu_per_request[X]``; anything else is an error."""
    scoped = metrics.split_scoped(metric)
    if scoped is None or scoped[0] != "cpu" or form != "value" or target is not None or unit != "":
        raise BudgetSyntaxError(
            f"{source!r}: 'per 1k rps' takes an absolute number of cores, e.g. 'cpu[*] <= 0.6 per 1k rps'; "
            "for a comparison write 'cpu_per_request[edge] <= 1.05x base'"
        )
    return metrics.get("cpu_per_request[" + ",".join(scoped[1]) + "]").name
