"""What the system under test spent, summarised per node for the reports: CPU per request,
cores and memory, the median over a series' rounds."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_netperf.budget.families import format_bytes, format_duration_ns
from pytest_netperf.results.model import RoundResult

#: The name of the fact that carries the per-node summary into every report.
SYSTEM_FACT = "system under test (median per round)"


@dataclass(frozen=True)
class NodeSummary:
    """One node's costs over a series: medians of its rounds."""

    cpu_per_request_ns: float
    cores: float
    mem_bytes: float
    mem_peak_bytes: float
    rounds: int

    def describe(self) -> str:
        """``45.2us CPU/request, 0.09 cores, 3.6MiB``."""
        return (
            f"{format_duration_ns(self.cpu_per_request_ns)} CPU/request, {self.cores:.2g} cores, "
            f"{format_bytes(self.mem_bytes)}"
        )


def node_costs(rounds: Sequence[RoundResult]) -> dict[str, NodeSummary]:
    """Per node, the medians over the rounds that recorded costs (empty when none did)."""
    per_node: dict[str, list[tuple[float, float, float, float]]] = {}
    for r in rounds:
        system = r.system
        if system is None or not system.served:
            continue
        for node, spent in system.nodes.items():
            per_request = spent.cpu_ns / system.served
            per_node.setdefault(node, []).append(
                (per_request, per_request * r.achieved_rps / 1e9, spent.mem_bytes, spent.mem_peak_bytes)
            )
    return {
        node: NodeSummary(
            cpu_per_request_ns=statistics.median(v[0] for v in values),
            cores=statistics.median(v[1] for v in values),
            mem_bytes=statistics.median(v[2] for v in values),
            mem_peak_bytes=max(v[3] for v in values),
            rounds=len(values),
        )
        for node, values in per_node.items()
    }


def costs_fact(rounds: Sequence[RoundResult]) -> str:
    """``edge 45.2us CPU/request, 0.09 cores, 3.6MiB; app …`` (empty without costs)."""
    return "; ".join(f"{node} {summary.describe()}" for node, summary in node_costs(rounds).items())


def costs_json(rounds: Sequence[RoundResult]) -> dict[str, Any]:
    """The per-node summary for the JSON report (canonical units: ns, cores, bytes)."""
    return {node: asdict(summary) for node, summary in node_costs(rounds).items()}
