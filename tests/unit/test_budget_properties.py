"""Property-based tests of the budget grammar (Hypothesis): round trips and rejection.

Every well-formed budget parses to the threshold it says, in canonical units, however
it is spaced; parsing the parsed budget's text gives the same budget; any other text is
a BudgetSyntaxError (never another exception), and nothing that parses has a threshold
that is infinite, a fractional count, or a limit that can never hold.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_netperf.budget import metrics
from pytest_netperf.budget.families import Family
from pytest_netperf.budget.grammar import Budget, parse_budget
from pytest_netperf.errors import BudgetSyntaxError

LATENCY = metrics.names(Family.LATENCY)
TIME_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
ORDER_OPS = ("<", "<=", ">", ">=")
TARGETS = {"reference": "reference", "baseline": "baseline", "vs reference": "reference", "vs baseline": "baseline"}

positive = st.decimals(min_value="0.001", max_value="100000", places=3).map(float).filter(lambda x: x > 0)
percent = st.decimals(min_value="0", max_value="99.9", places=1).map(float)


def num(x: float) -> str:
    """A number as a person writes it, exactly (no rounding to 6 digits like ``:g``)."""
    return f"{x:.3f}".rstrip("0").rstrip(".")


@st.composite
def well_formed(draw: st.DrawFn) -> tuple[str, dict]:
    """Budget text plus the fields it must parse to."""
    kind = draw(st.sampled_from(["latency", "rps", "count", "error_rate", "loss", "added", "ratio"]))
    if kind == "latency":
        metric, op, x = draw(st.sampled_from(LATENCY)), draw(st.sampled_from(ORDER_OPS)), draw(positive)
        unit = draw(st.sampled_from(sorted(TIME_UNITS)))
        return f"{metric} {op} {num(x)}{unit}", {"metric": metric, "op": op, "threshold": x * TIME_UNITS[unit]}
    if kind == "rps":
        op, n = draw(st.sampled_from(ORDER_OPS)), draw(st.integers(1, 999))
        suffix, factor = draw(st.sampled_from([("", 1), ("k", 1e3), ("M", 1e6)]))
        return f"rps {op} {n}{suffix}", {"metric": "rps", "op": op, "threshold": n * factor}
    if kind == "count":
        metric = draw(st.sampled_from(["errors", "sockets"]))
        op = draw(st.sampled_from(("<=", ">", ">=", "==")))
        n = draw(st.integers(0, 10_000))
        return f"{metric} {op} {n}", {"metric": metric, "op": op, "threshold": float(n)}
    if kind == "error_rate":
        op, pct = draw(st.sampled_from(("<=", ">", ">=", "=="))), draw(percent)
        return f"error_rate {op} {num(pct)}%", {"metric": "error_rate", "threshold": pct / 100}
    if kind == "loss":
        op, pct = draw(st.sampled_from(ORDER_OPS)), draw(percent)
        target = draw(st.sampled_from(sorted(TARGETS)))
        fields = {"metric": "rps", "form": "loss", "threshold": pct / 100, "comparison": TARGETS[target]}
        return f"rps_loss {op} {num(pct)}% {target}", fields
    if kind == "added":
        metric, x = draw(st.sampled_from(LATENCY)), draw(positive)
        unit, hop = draw(st.sampled_from(sorted(TIME_UNITS))), draw(st.booleans())
        target = draw(st.sampled_from(sorted(TARGETS)))
        text = f"{metric}_added <= {num(x)}{unit}{' per hop' if hop else ''} {target}"
        fields = {"metric": metric, "form": "added", "per_hop": hop, "comparison": TARGETS[target]}
        return text, {**fields, "threshold": x * TIME_UNITS[unit]}
    metric = draw(st.sampled_from(("rps", *LATENCY)))
    op, x, target = draw(st.sampled_from(ORDER_OPS)), draw(positive), draw(st.sampled_from(sorted(TARGETS)))
    return f"{metric} {op} {num(x)}x {target}", {
        "metric": metric,
        "form": "ratio",
        "threshold": x,
        "comparison": TARGETS[target],
    }


def _respace(text: str, draw_spaces: list[int]) -> str:
    """The same tokens with other whitespace between them (at least one where words meet)."""
    out = []
    for i, token in enumerate(text.split(" ")):
        if i:
            out.append(" " * max(1, draw_spaces[i % len(draw_spaces)]))
        out.append(token)
    return "".join(out)


@given(well_formed(), st.lists(st.integers(1, 3), min_size=1, max_size=5))
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_well_formed_budgets_parse_to_what_they_say(case: tuple[str, dict], spaces: list[int]) -> None:
    text, expected = case
    for variant in (text, _respace(text, spaces), f"  {text}\t"):
        budget = parse_budget(variant)
        for name, value in expected.items():
            actual = getattr(budget, name)
            if isinstance(value, float):
                assert actual == pytest.approx(value, rel=1e-9), (variant, name)
            else:
                assert actual == value, (variant, name)


@given(well_formed())
@settings(max_examples=300)
def test_the_text_of_a_parsed_budget_parses_to_the_same_budget(case: tuple[str, dict]) -> None:
    budget = parse_budget(case[0])
    assert parse_budget(str(budget)) == budget
    assert Budget.parse(budget.text) == budget


@given(well_formed())
@settings(max_examples=300)
def test_a_budget_describes_and_formats_its_threshold(case: tuple[str, dict]) -> None:
    budget = parse_budget(case[0])
    assert budget.format_value(budget.threshold) not in ("", "n/a", "inf")
    assert budget.describe()


@given(st.text(max_size=40))
@settings(max_examples=1000)
def test_any_text_parses_or_is_a_budget_syntax_error(text: str) -> None:
    try:
        budget = parse_budget(text)
    except BudgetSyntaxError:
        return
    _assert_sane(budget)


budget_like = st.builds(
    lambda m, op, num, unit, tail: f"{m} {op} {num}{unit}{tail}",
    st.sampled_from([*metrics.names(), "rps_loss", "p90_added", "errors_loss", "sockets_added", "p42", "RPS"]),
    st.sampled_from(["<", "<=", ">", ">=", "==", "=", "!=", "=<", ""]),
    st.one_of(st.integers(-5, 10**6).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr)),
    st.sampled_from(["", "ms", "us", "ns", "s", "%", "x", "k", "M", "m", "qps"]),
    st.sampled_from(["", " reference", " baseline", " per hop", " vs baseline per hop", " per hop per hop"]),
)


@given(budget_like)
@settings(max_examples=2000)
def test_near_misses_parse_sanely_or_are_rejected(text: str) -> None:
    try:
        budget = parse_budget(text)
    except BudgetSyntaxError as exc:
        message = str(exc)
    else:
        _assert_sane(budget)
        return
    assert text.strip() in message or "empty budget" in message, "a rejection names the text"


def _assert_sane(budget: Budget) -> None:
    assert math.isfinite(budget.threshold)
    assert budget.threshold >= 0
    metric = metrics.get(budget.metric)
    if budget.form == "value" and metric.family is Family.COUNT:
        assert budget.threshold.is_integer()
    if budget.form == "value" and budget.op == "<":
        assert budget.threshold > 0, "a '< 0' limit can never hold"
    if budget.per_hop:
        assert budget.form == "added"
    if budget.op == "==":
        assert metric.exact
