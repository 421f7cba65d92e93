"""How counted costs read in a report: the fact of a series' counting pass, and the notes of a
counted budget (what was counted, and where the cost went against the other side)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional

from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.results.counted import SYSCALLS, CountedCost, changed_most, counting_tool, part_floors
from pytest_netperf.results.runner import MEASURED_AGAIN
from pytest_netperf.runtime.trace_output import UNRESOLVED

if TYPE_CHECKING:
    from pytest_netperf.measure.model import Measurement
    from pytest_netperf.measure.outcomes import BudgetOutcome

#: tool -> node -> cost per request, as a series keeps them.
CountedCosts = Mapping[str, Mapping[str, CountedCost]]

#: The fact a series gets from its counting pass.
COUNTED_FACT = "counted per request"
#: A change of one part smaller than this share of the whole cost is not named.
NAMED_SHARE = 0.002
#: The most parts a comparison note names.
NAMED_PARTS = 3


def counted_notes(
    budget: Budget, candidate: CountedCosts, other: Optional[CountedCosts], other_label: str
) -> list[str]:
    """What the counting pass did for ``budget``'s series, whether its count depends on timing
    (naming the parts that moved), and where the cost went against the other side."""
    tool = counting_tool(metrics.tool_of(budget.metric))
    notes = []
    timing = []
    for label, counted in (("candidate", candidate), (other_label, other)):
        for node, cost in sorted((counted or {}).get(tool.name, {}).items()):
            low, high = cost.requests
            notes.append(
                f"counting pass of {node} ({label}): {tool.name} under {tool.program}, "
                f"{len(cost.per_request)} x ({high} - {low}) requests, {cost.seconds:.1f}s; "
                f"{cost.median:,.1f} per request, spread {cost.spread:.2%}"
            )
            if cost.timing_dependent:
                timing.append(timing_note(cost, label))
    notes.extend(timing)
    if other:
        for node, cost in sorted(candidate.get(tool.name, {}).items()):
            before = other.get(tool.name, {}).get(node)
            if before is None:
                continue
            floor, floors = named_floors(cost, before)
            changes = changed_most(cost.by_name, before.by_name, limit=NAMED_PARTS, floor=floor, floors=floors)
            if changes:
                listed = ", ".join(f"{name} {tool.format_change(delta)}" for name, delta in changes)
                unresolved = [name for name, _ in changes if name.startswith(UNRESOLVED)]
                if unresolved:
                    listed += (
                        f" ({', '.join(unresolved)}: code without symbols, a stripped binary or library, run by "
                        "the program in brackets; install its debug symbols in the image to name the function)"
                    )
                notes.append(
                    f"{node}: {tool.parts} whose {tool.name} per request changed most vs {other_label}: {listed}"
                )
            else:
                notes.append(f"{node}: no {tool.parts} changed by {floor:.3g} or more per request vs {other_label}")
    return notes


def named_floors(cost: CountedCost, before: CountedCost) -> tuple[float, dict[str, float]]:
    """The smallest per-request change of one part worth naming between ``cost`` and
    ``before``: the tool's own floor or a share of the cost, and, for each part that moved
    between the repetitions of either side, what it moved by (a change inside a part's own
    spread is not named as one; a part that held still is named even when others moved, as
    ``connect`` +1.00 beside a ``readv`` that moved by 1.18)."""
    tool = counting_tool(cost.tool)
    floor = max(tool.named_floor, NAMED_SHARE * before.median)
    return floor, part_floors(cost, before, floor)


def timing_note(cost: CountedCost, label: str) -> str:
    """``syscalls per request of edge (candidate) depend on timing: …; the system calls that
    moved between repetitions: readv 0.58 to 1.00``."""
    tool = counting_tool(cost.tool)
    decimals = max(tool.decimals, 0)
    values = ", ".join(f"{v:,.{decimals}f}" for v in cost.per_request)
    text = (
        f"{tool.name} per request of {cost.node} ({label}) depend on timing: they moved {cost.spread:.2%} "
        f"between the {len(cost.per_request)} repetitions ({values}), more than a count's resolution; "
        "periodic work (timers, health checks, DNS re-resolution) or reads that split differently"
    )
    if cost.varying:
        moved = ", ".join(
            f"{name} {low:,.{decimals}f} to {high:,.{decimals}f}" for name, (low, high) in cost.varying.items()
        )
        text += f"; the {tool.parts} that moved: {moved}"
    if cost.uneven_runs:
        text += (
            f"; its runs counted different numbers of processes ({cost.uneven_runs}), so a process's start-up "
            "and exit did not cancel"
        )
    return text


def counted_fact(counted: CountedCosts, limit: int = 6) -> str:
    """``edge 25,088 instructions; 8.00 system calls (epoll_wait 2.00, recvfrom 2.00, …)`` per node."""
    parts = []
    nodes = sorted({node for costs in counted.values() for node in costs})
    for node in nodes:
        figures = []
        for tool in (counting_tool(name) for name in sorted(counted)):
            cost = counted[tool.name].get(node)
            if cost is None:
                continue
            if tool.name == SYSCALLS:
                named = sorted(cost.by_name.items(), key=lambda item: (-item[1], item[0]))
                listed = ", ".join(f"{name} {value:.2f}" for name, value in named[:limit] if value >= 0.005)
                figures.append(f"{cost.median:.2f} {tool.family} ({listed})")
            else:
                figures.append(f"{cost.median:,.0f} {tool.family}")
        parts.append(f"{node} " + "; ".join(figures))
    return "; ".join(parts)


def outcome_notes(outcome: BudgetOutcome, m: Optional[Measurement]) -> list[str]:
    """The notes of ``outcome`` as a report shows them: for a counted budget of ``m``, what its
    counting passes counted and where the cost went come first, then the verdict's notes, and
    the timed rounds' "measured again" notes are left out (no round judges a counted cost)."""
    if m is None or not metrics.get(outcome.budget.metric).counted:
        return list(outcome.notes)
    other = m.judged_series(outcome.budget)
    passes = counted_notes(
        outcome.budget,
        m.candidate.counted,
        other.counted if other is not None else None,
        outcome.reference_label or "reference",
    )
    return passes + [n for n in outcome.notes if MEASURED_AGAIN not in n]
