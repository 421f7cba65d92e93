"""What the HTML report's picture of a counted instructions budget needs: both sides' call
stacks and functions per request, kept on the budget's row when the budget moved.

A budget moved when it FAILed (or was ACCEPTED), is INCONCLUSIVE, or its node's instructions
per request changed by more than a count's resolution; a budget that held still gets no
picture. Both sides need call stacks, measured in this run: the counting pass profiles them
when an HTML report is written and a budget on instructions is judged against a reference or
the base twin (measure/counting_step.py); an absolute budget or a stored baseline gets none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from pytest_netperf.budget import metrics
from pytest_netperf.report.cost_diff import moved, part_changes
from pytest_netperf.results.counted import INSTRUCTIONS, CountedCost

if TYPE_CHECKING:
    from pytest_netperf.measure.model import Measurement
    from pytest_netperf.measure.outcomes import BudgetOutcome

#: Functions in the diff table.
TABLE_LIMIT = 15


@dataclass(frozen=True)
class CostPicture:
    """Both sides of one node's counted instructions, per request, for a picture."""

    node: str
    #: what the candidate is compared with (``base``, ``reference``)
    reference: str
    head_total: float
    base_total: float
    head_stacks: Mapping[str, float]
    base_stacks: Mapping[str, float]
    head_functions: Mapping[str, float]
    base_functions: Mapping[str, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (rows travel between xdist workers as dicts)."""
        return {
            "node": self.node,
            "reference": self.reference,
            "head_total": self.head_total,
            "base_total": self.base_total,
            "head_stacks": dict(self.head_stacks),
            "base_stacks": dict(self.base_stacks),
            "head_functions": dict(self.head_functions),
            "base_functions": dict(self.base_functions),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> CostPicture:
        """Inverse of :meth:`to_dict`."""

        def numbers(key: str) -> dict[str, float]:
            return {str(k): float(v) for k, v in dict(doc.get(key) or {}).items()}

        return cls(
            node=str(doc["node"]),
            reference=str(doc.get("reference") or "reference"),
            head_total=float(doc.get("head_total", 0.0)),
            base_total=float(doc.get("base_total", 0.0)),
            head_stacks=numbers("head_stacks"),
            base_stacks=numbers("base_stacks"),
            head_functions=numbers("head_functions"),
            base_functions=numbers("base_functions"),
        )


def pictures_for(outcome: BudgetOutcome, m: Measurement) -> list[CostPicture]:
    """The pictures of ``outcome``'s budget, one per node it names whose two sides have call
    stacks, when it is a counted instructions budget that moved; else none."""
    budget = outcome.budget
    metric = metrics.get(budget.metric)
    if not metric.counted or metrics.tool_of(budget.metric) != INSTRUCTIONS:
        return []
    other = m.judged_series(budget)
    if other is None:
        return []
    heads = m.candidate.counted.get(INSTRUCTIONS, {})
    bases = other.counted.get(INSTRUCTIONS, {})
    nodes = sorted(n for n in heads if n in bases and any(fnmatchcase(n, p) for p in metric.scope))
    pairs = [(heads[n], bases[n]) for n in nodes if heads[n].stacks and bases[n].stacks]
    if not pairs or not moved(outcome.status.value, sum(h.median for h, _ in pairs), sum(b.median for _, b in pairs)):
        return []
    return [_picture(head, base, outcome.reference_label or other.label) for head, base in pairs]


def _picture(head: CountedCost, base: CountedCost, reference: str) -> CostPicture:
    return CostPicture(
        node=head.node,
        reference=reference,
        head_total=head.median,
        base_total=base.median,
        head_stacks=dict(head.stacks),
        base_stacks=dict(base.stacks),
        head_functions=dict(head.by_name),
        base_functions=dict(base.by_name),
    )


def function_changes(picture: CostPicture, limit: int = TABLE_LIMIT) -> list[tuple[str, float, float, float]]:
    """(function, base, head, change) per request of the ``limit`` functions that changed most
    (by absolute change; ties by name), like ``cg_annotate --diff``."""
    return part_changes(picture.head_functions, picture.base_functions, limit)
