"""The run's own noise floor under ``--netperf-base``: stacks whose files are the same at the
base revision and in the working tree were measured against an identical twin, so the
spread of their ``base`` budgets is what this machine's noise does to a verdict right now.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.errors import BudgetSyntaxError
from pytest_netperf.report.rows import ReportRow, as_rows
from pytest_netperf.revision.diff import CHANGES_FACT, UNCHANGED


def is_aa_control(row: ReportRow) -> bool:
    """True for a budget judged against an unchanged base twin."""
    return row.reference == "base" and row.facts.get("candidate", {}).get(CHANGES_FACT, "").endswith(UNCHANGED)


def noise_floor_note(rows: Iterable[Any]) -> str | None:
    """``A/A noise floor of this run …: rps ±6.1% (2 budgets)`` from the unchanged stacks' base
    budgets (the widest half-interval per metric); None when no stack was unchanged."""
    widest: dict[str, tuple[float, int, Any]] = {}
    for row in as_rows(rows):
        if not is_aa_control(row) or row.raw.get("exact"):
            continue
        low, high = row.raw.get("ci_low"), row.raw.get("ci_high")
        if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
            continue
        try:
            budget = parse_budget(row.budget)
        except BudgetSyntaxError:
            continue
        if budget.form in ("ratio", "loss"):
            centre = 1.0 if budget.form == "ratio" else 0.0
            half = max(abs(high - centre), abs(centre - low))
        else:
            half = (high - low) / 2
        if not math.isfinite(half):
            continue
        name = f"{budget.metric} {budget.form}" if budget.form != "ratio" else budget.metric
        previous = widest.get(name)
        count = previous[1] + 1 if previous else 1
        widest[name] = (max(half, previous[0]) if previous else half, count, budget)
    if not widest:
        return None
    parts = []
    for name, (half, count, budget) in sorted(widest.items()):
        shown = f"{half:.1%}" if budget.form in ("ratio", "loss") else budget.format_value(half)
        parts.append(f"{name} ±{shown} ({count} budget{'s' if count > 1 else ''})")
    return (
        "A/A noise floor of this run (stacks unchanged since the base, measured against their twin): "
        + ", ".join(parts)
        + "; a base budget tighter than this cannot be decided here"
    )
