"""Budget grammar: every documented form parses to canonical units; mistakes are named."""

from __future__ import annotations

import pytest

from pytest_netperf.budget.families import format_duration_ns
from pytest_netperf.budget.grammar import (
    Budget,
    coerce_budget,
    parse_budget,
)
from pytest_netperf.errors import BudgetSyntaxError

MS = 1e6
US = 1e3

# text, metric, op, threshold (canonical), comparison, form, per_hop
VALID = [
    ("p90 < 1ms", "p90", "<", 1 * MS, "absolute", "value", False),
    ("p99 <= 2.5ms", "p99", "<=", 2.5 * MS, "absolute", "value", False),
    ("rps >= 5000", "rps", ">=", 5000, "absolute", "value", False),
    ("rps >= 5k", "rps", ">=", 5000, "absolute", "value", False),
    ("rps > 1.5M", "rps", ">", 1.5e6, "absolute", "value", False),
    ("errors == 0", "errors", "==", 0, "absolute", "value", False),
    ("error_rate <= 0.1%", "error_rate", "<=", 0.001, "absolute", "value", False),
    ("mean < 800us", "mean", "<", 800 * US, "absolute", "value", False),
    ("max < 2s", "max", "<", 2e9, "absolute", "value", False),
    ("p999 < 250000ns", "p999", "<", 250 * US, "absolute", "value", False),
    ("p50 < 300µs", "p50", "<", 300 * US, "absolute", "value", False),
    ("p50 < 300μs", "p50", "<", 300 * US, "absolute", "value", False),
    ("sockets <= 100", "sockets", "<=", 100, "absolute", "value", False),
    ("rps_loss <= 10%", "rps", "<=", 0.10, "reference", "loss", False),
    ("p90_added <= 1ms", "p90", "<=", 1 * MS, "reference", "added", False),
    ("p50_added < 300us", "p50", "<", 300 * US, "reference", "added", False),
    ("p99 <= 1.2x reference", "p99", "<=", 1.2, "reference", "ratio", False),
    ("rps >= 0.9x reference", "rps", ">=", 0.9, "reference", "ratio", False),
    ("p99 <= 1.2x baseline", "p99", "<=", 1.2, "baseline", "ratio", False),
    ("rps >= 0.95x baseline", "rps", ">=", 0.95, "baseline", "ratio", False),
    ("rps_loss <= 5% vs baseline", "rps", "<=", 0.05, "baseline", "loss", False),
    ("p90_added <= 200us vs baseline", "p90", "<=", 200 * US, "baseline", "added", False),
    ("p90_added <= 1ms per hop", "p90", "<=", 1 * MS, "reference", "added", True),
    ("p90_added <= 1ms per depth", "p90", "<=", 1 * MS, "reference", "added", True),
    ("p90_added <= 1ms per hop vs baseline", "p90", "<=", 1 * MS, "baseline", "added", True),
    ("rps_loss <= 10% vs reference", "rps", "<=", 0.10, "reference", "loss", False),
    ("p99 <= 1.2 x the reference", "p99", "<=", 1.2, "reference", "ratio", False),
    ("p99 <= 1.2× baseline", "p99", "<=", 1.2, "baseline", "ratio", False),
]


@pytest.mark.parametrize("text, metric, op, threshold, comparison, form, per_hop", VALID)
def test_documented_forms_parse_to_canonical_units(
    text: str, metric: str, op: str, threshold: float, comparison: str, form: str, per_hop: bool
) -> None:
    budget = parse_budget(text)
    assert (budget.metric, budget.op, budget.comparison, budget.form, budget.per_hop) == (
        metric,
        op,
        comparison,
        form,
        per_hop,
    )
    assert budget.threshold == pytest.approx(threshold)
    assert budget.text == text


@pytest.mark.parametrize(
    "variant",
    ["p90<1ms", "  P90   <   1 MS ", "p90 <1ms", "P90<1Ms"],
)
def test_whitespace_and_case_do_not_matter(variant: str) -> None:
    budget = parse_budget(variant)
    assert (budget.metric, budget.op, budget.threshold) == ("p90", "<", 1 * MS)


@pytest.mark.parametrize(
    "variant",
    ["RPS_LOSS<=10%VSBASELINE", "rps_loss<=10%vs baseline", "Rps_Loss <= 10 % vs Baseline"],
)
def test_qualifiers_may_be_squeezed_together(variant: str) -> None:
    budget = parse_budget(variant)
    assert (budget.form, budget.comparison, budget.threshold) == (
        "loss",
        "baseline",
        pytest.approx(0.1),
    )


def test_ratio_and_per_hop_squeezed() -> None:
    assert parse_budget("p99<=1.2xreference").form == "ratio"
    assert parse_budget("p90_added<=1msperhop").per_hop


# text, fragment that must appear in the message
INVALID = [
    ("p95x < 1ms", "unknown metric 'p95x' in budget 'p95x < 1ms'; expected one of"),
    ("latency < 1ms", "unknown metric 'latency'"),
    ("p90 < 5", "latency budget 'p90 < 5' needs a unit (ns, us, ms, s)"),
    ("p90_added <= 5", "needs a unit (ns, us, ms, s)"),
    ("rps_loss <= 10ms", "'rps_loss <= 10ms': a loss is a percentage"),
    ("rps_loss <= 1.1x reference", "a loss is a percentage"),
    ("rps_loss <= 10", "a loss is a percentage"),
    ("rps >= 5ms", "rps is a rate (requests per second)"),
    ("rps >= 10%", "not a percentage; for a relative limit write 'rps_loss <= 10%'"),
    ("p90 < 5%", "a latency limit takes a time unit"),
    ("p90 < 5k", "a latency limit takes a time unit"),
    ("p90 <= 1.2x", "a ratio needs what it is relative to"),
    ("rps >= 5 reference", "takes a factor"),
    ("p90 <= 1.2ms baseline", "takes a factor"),
    ("p90 = 1ms", "did you mean '=='"),
    ("p90 != 1ms", "'!=' is not supported"),
    ("p90 == 1ms", "'==' in budget 'p90 == 1ms' is only for counts"),
    ("p90 < 5 sec", "unknown unit 'sec'"),
    ("rps >= 5m", "write M for millions"),
    ("sockets <= 1.2x reference", "a ratio applies to rps, latency, CPU, memory, gbps and pps metrics"),
    ("errors <= 1ms", "errors is a count"),
    ("p90_loss <= 10%", "a loss applies to rps"),
    ("rps_added <= 5", "'added' applies to latency metrics"),
    ("p90_added <= 1.2x reference", "added latency takes a time unit"),
    ("p90_added <= 5%", "added latency takes a time unit"),
    ("error_rate <= 0.1", "error_rate is a percentage"),
    ("error_rate <= 120%", "cannot exceed 100%"),
    ("rps_loss <= 100%", "a loss must be below 100%"),
    (
        "rps_loss <= 10% per hop",
        "'per hop' in budget 'rps_loss <= 10% per hop' applies to added latency only",
    ),
    ("p90 < 1ms per hop", "applies to added latency only"),
    ("rps >= 0x reference", "must be above 0x"),
    ("p90 <", "needs a non-negative number after '<'"),
    ("p90_added <= -1ms", "needs a non-negative number"),
    ("p90 1ms", "needs an operator"),
    ("", "empty budget"),
    ("p90 < 1ms foo", "unexpected 'foo' in budget 'p90 < 1ms foo'"),
    ("p99 <= 1.2x reference baseline", "names what to compare with twice"),
    ("p90_added <= 1ms per hop per depth", "says 'per hop' twice"),
]


@pytest.mark.parametrize("text, fragment", INVALID)
def test_mistakes_raise_with_the_text_and_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(BudgetSyntaxError) as info:
        parse_budget(text)
    assert fragment in str(info.value)
    if text:
        assert repr(text.strip()) in str(info.value) or "needs" in str(info.value)


def test_direction_and_exactness() -> None:
    assert parse_budget("p90 < 1ms").direction == "higher"
    assert parse_budget("rps >= 5k").direction == "lower"
    assert parse_budget("rps_loss <= 10%").direction == "higher"
    assert parse_budget("errors == 0").direction == "both"
    assert parse_budget("errors == 0").exact and parse_budget("error_rate <= 1%").exact
    assert parse_budget("sockets <= 10").exact
    assert not parse_budget("rps >= 5k").exact
    assert parse_budget("p90_added <= 1ms").name == "p90_added"
    assert parse_budget("p99 <= 1.2x baseline").name == "p99"


def test_satisfied_by_follows_the_operator() -> None:
    assert parse_budget("p90 < 1ms").satisfied_by(0.9 * MS)
    assert not parse_budget("p90 < 1ms").satisfied_by(1 * MS)
    assert parse_budget("p90 <= 1ms").satisfied_by(1 * MS)
    assert parse_budget("errors == 0").satisfied_by(0)
    assert not parse_budget("errors == 0").satisfied_by(1)


def test_describe_names_metric_comparison_and_limit() -> None:
    assert parse_budget("rps_loss <= 10%").describe() == (
        "rps loss (1 - candidate/reference) vs the same-run reference ≤ 10%"
    )
    assert parse_budget("p90_added <= 1ms per hop").describe() == (
        "p90 added (candidate - reference) over the same-run reference ≤ 1ms per hop"
    )
    assert "stored baseline ≤ 1.200x" in parse_budget("p99 <= 1.2x baseline").describe()
    assert parse_budget("p90 < 800us").describe() == "p90 (absolute) < 800us"
    assert parse_budget("errors == 0").describe() == "errors summed over all rounds = 0"


def test_format_value_uses_the_budget_unit() -> None:
    assert parse_budget("rps_loss <= 10%").format_value(0.123) == "12.3%"
    assert parse_budget("p99 <= 1.2x reference").format_value(1.05) == "1.050x"
    assert parse_budget("p90 < 1ms").format_value(1_250_000) == "1.25ms"
    assert parse_budget("rps >= 5k").format_value(12_345.6) == "12,346 rps"
    assert format_duration_ns(850) == "850ns" and format_duration_ns(12_300) == "12.3us"
    assert format_duration_ns(2e9) == "2s"


def test_constructors_build_the_same_budgets_as_text() -> None:
    assert Budget.latency("p90", "<", "1ms") == parse_budget("p90 < 1ms")
    assert Budget.latency("p90", "<", 1e6).threshold == 1e6
    assert Budget.rps(">=", 5000).threshold == 5000
    loss = Budget.rps_loss(max_pct=10)
    assert (loss.form, loss.comparison, loss.threshold) == ("loss", "reference", pytest.approx(0.1))
    assert Budget.rps_loss(5, vs="baseline").comparison == "baseline"
    added = Budget.added("p90", "1ms", per_hop=True)
    assert (added.form, added.per_hop, added.threshold) == ("added", True, 1e6)
    ratio = Budget.ratio("p99", "<=", 1.2, vs="baseline")
    assert (ratio.form, ratio.comparison, ratio.threshold) == ("ratio", "baseline", 1.2)
    assert Budget.no_errors() == parse_budget("errors == 0")
    assert Budget.max_error_rate(0.5).threshold == pytest.approx(0.005)
    assert Budget.max_sockets(100).threshold == 100
    assert Budget.parse("p90 < 1ms") == parse_budget("p90 < 1ms")
    with pytest.raises(BudgetSyntaxError):
        Budget.rps_loss(max_pct=150)


def test_coerce_budget_accepts_text_and_budgets_only() -> None:
    budget = parse_budget("p90 < 1ms")
    assert coerce_budget(budget) is budget
    assert coerce_budget("p90 < 1ms") == budget
    with pytest.raises(TypeError, match="a budget is a string or a Budget"):
        coerce_budget(1.0)
    with pytest.raises(TypeError):
        parse_budget(None)  # type: ignore[arg-type]


def test_budget_is_frozen_and_hashable() -> None:
    budget = parse_budget("p90 < 1ms")
    with pytest.raises(AttributeError):
        budget.threshold = 2.0  # type: ignore[misc]
    assert len({budget, parse_budget("p90 < 1ms")}) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("errors == 0.5", "errors is a count of whole errors"),
        ("sockets == 0.5", "sockets is a count of whole sockets"),
        ("errors < 0", "can never hold"),
        ("p90 < 0ms", "can never hold"),
        ("p90 <= 0ms", "a latency is never 0"),
        ("p90 < 1e308s", "too large to represent"),
        ("rps < 0", "can never hold"),
    ],
)
def test_budgets_that_can_only_fail_or_overflow_are_rejected(text: str, message: str) -> None:
    with pytest.raises(BudgetSyntaxError, match=message):
        parse_budget(text)


def test_a_loss_of_errors_suggests_an_error_budget_not_added_latency() -> None:
    with pytest.raises(BudgetSyntaxError) as info:
        parse_budget("errors_loss <= 5%")
    assert "errors == 0" in str(info.value)
    assert "_added" not in str(info.value)
