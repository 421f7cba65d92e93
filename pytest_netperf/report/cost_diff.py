"""Where a counted budget's cost went, as a table for the pull-request comment: per node, the
parts (functions, system calls) whose count per request changed most against the other side,
like ``cg_annotate --diff`` and a system-call diff side by side.

A budget gets one when it moved (:func:`moved`: FAIL, ACCEPTED, INCONCLUSIVE, or a total
beyond a count's resolution; the HTML report's flame graph follows the same rule); unlike the
flame graph it needs no call stacks, so a stored baseline's counts serve as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from pytest_netperf import defaults
from pytest_netperf.budget import metrics
from pytest_netperf.results.counted import counting_tool
from pytest_netperf.verdict.status import Status

if TYPE_CHECKING:
    from pytest_netperf.measure.model import Measurement
    from pytest_netperf.measure.outcomes import BudgetOutcome

#: Parts listed per node in the comment.
COMMENT_LIMIT = 10
#: Verdicts of a counted budget that always count as moved.
MOVED = {Status.FAIL.value, Status.INCONCLUSIVE.value, Status.ACCEPTED.value}


@dataclass(frozen=True)
class CostDiff:
    """One node's counted cost per request on both sides, and its parts that changed most."""

    node: str
    #: What was counted (``instructions``, ``syscalls``).
    tool: str
    #: What the candidate is compared with (``base``, ``reference``, ``baseline``).
    reference: str
    base_total: float
    head_total: float
    #: (part, base, head, change) per request, largest change first.
    changes: tuple[tuple[str, float, float, float], ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (rows travel between xdist workers as dicts)."""
        return {
            "node": self.node,
            "tool": self.tool,
            "reference": self.reference,
            "base_total": self.base_total,
            "head_total": self.head_total,
            "changes": [list(change) for change in self.changes],
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> CostDiff:
        """Inverse of :meth:`to_dict`."""
        return cls(
            node=str(doc["node"]),
            tool=str(doc["tool"]),
            reference=str(doc.get("reference") or "reference"),
            base_total=float(doc.get("base_total", 0.0)),
            head_total=float(doc.get("head_total", 0.0)),
            changes=tuple((str(n), float(b), float(h), float(c)) for n, b, h, c in doc.get("changes") or []),
        )


def moved(verdict: str, head_total: float, base_total: float) -> bool:
    """Whether a budget's picture is worth drawing: its verdict, or a change of the node's
    instructions per request beyond a count's resolution."""
    if verdict in MOVED:
        return True
    return bool(base_total) and abs(head_total - base_total) / base_total > defaults.COUNTED_RESOLUTION


def part_changes(
    head: Mapping[str, float], base: Mapping[str, float], limit: int
) -> list[tuple[str, float, float, float]]:
    """(part, base, head, change) per request of the ``limit`` parts whose count changed most
    (by absolute change, ties by name); unchanged parts are left out."""
    rows = [(name, base.get(name, 0.0), head.get(name, 0.0)) for name in set(head) | set(base)]
    changes = [(name, before, after, after - before) for name, before, after in rows]
    changes.sort(key=lambda row: (-abs(row[3]), row[0]))
    return [row for row in changes[:limit] if row[3] != 0]


def cost_diffs_for(outcome: BudgetOutcome, m: Measurement, limit: int = COMMENT_LIMIT) -> list[CostDiff]:
    """The tables of ``outcome``'s budget, one per node it names that both sides counted, when
    it is a counted budget that moved; else none."""
    budget = outcome.budget
    metric = metrics.get(budget.metric)
    other = m.judged_series(budget) if metric.counted else None
    if other is None:
        return []
    tool = counting_tool(metrics.tool_of(budget.metric))
    heads = m.candidate.counted.get(tool.name, {})
    bases = other.counted.get(tool.name, {})
    nodes = sorted(n for n in heads if n in bases and any(fnmatchcase(n, p) for p in metric.scope))
    if not nodes or not moved(
        outcome.status.value, sum(heads[n].median for n in nodes), sum(bases[n].median for n in nodes)
    ):
        return []
    label = outcome.reference_label or other.label
    return [
        CostDiff(
            node,
            tool.name,
            label,
            bases[node].median,
            heads[node].median,
            tuple(part_changes(heads[node].by_name, bases[node].by_name, limit)),
        )
        for node in nodes
    ]
