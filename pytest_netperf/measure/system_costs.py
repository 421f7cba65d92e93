"""Budgets on what the system under test spent (``cpu_per_request[edge]`` …): which targets
must carry a cost probe, reading it around each round, and what to say about the rounds.

A target of a running topology or Compose stack carries a probe (``target.costs``, see
:mod:`pytest_netperf.runtime.costs`); a plain URL has none. Rounds of a target with a probe
always record their costs (the reports show them); a probe that cannot be read invalidates
the round only when a budget of the test needs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fnmatch import fnmatchcase
from typing import Optional, Protocol

from pytest_netperf.budget import metrics
from pytest_netperf.budget.families import Family
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.budget.metrics import metric_value
from pytest_netperf.errors import CgroupError, InvalidMeasurement, NetperfError, ServiceRestarted
from pytest_netperf.results.model import RoundResult, SystemCosts

#: Families whose budgets are advised to be judged at a fixed rate below the knee.
CPU_FAMILIES = (Family.CPU_TIME, Family.CORES)


class RoundCosts(Protocol):
    """The counters of one round, opened by :meth:`CostProbe.begin`."""

    def cancel(self) -> None: ...

    def end(self, served: int) -> SystemCosts: ...


class CostProbe(Protocol):
    """Reads what the containers of a system under test spend, by node name."""

    @property
    def nodes(self) -> tuple[str, ...]: ...

    def begin(self) -> RoundCosts: ...


def system_budgets(budgets: Sequence[Budget]) -> list[Budget]:
    """The budgets read from the system under test's cgroups."""
    return [b for b in budgets if metrics.get(b.metric).scope and not metrics.get(b.metric).counted]


def probe_problem(test_id: str, budget: Budget, label: str, url: str, probe: Optional[CostProbe]) -> Optional[str]:
    """Why ``budget`` cannot be read from the series ``label`` (no probe, or no node matches
    its scope), naming the test, the budget and the known nodes; None when it can."""
    metric = metrics.get(budget.metric)
    if probe is None:
        return (
            f"{test_id}: budget {budget.text!r} reads what the system under test spends, but the {label} "
            f"{url} is a plain URL: measure an endpoint of netperf_topology or netperf_compose, whose "
            "containers the gate can read"
        )
    nodes = probe.nodes
    unmatched = [p for p in metric.scope if not any(fnmatchcase(n, p) for n in nodes)]
    if unmatched:
        return (
            f"{test_id}: budget {budget.text!r}: no node of the {label} matches "
            f"{', '.join(repr(p) for p in unmatched)}; the nodes are {', '.join(nodes)}"
        )
    return None


def check_probes(
    test_id: str, budgets: Sequence[Budget], series: Sequence[tuple[str, str, Optional[CostProbe]]]
) -> None:
    """Raise NetperfError before any load when a budget on the system under test cannot be
    read from a series it judges (``series``: label, url, probe of each)."""
    for budget in system_budgets(budgets):
        for label, url, probe in series:
            problem = probe_problem(test_id, budget, label, url, probe)
            if problem:
                raise NetperfError(problem)


def run_with_costs(
    run: Callable[[], RoundResult],
    probe: Optional[CostProbe],
    where: str,
    required: bool,
    notes: list[str],
) -> RoundResult:
    """``run()`` one round with the probe's counters read around it (``result.system``).

    A probe that cannot be read (a cgroup gone, a container restarted mid-round) makes the
    round INVALID when ``required``; otherwise the round keeps no costs and a note says why.
    """
    if probe is None:
        return run()
    try:
        opened: Optional[RoundCosts] = probe.begin()
    except CgroupError as exc:
        if required:
            raise InvalidMeasurement(f"{where}: cannot read what the system under test spends: {exc}") from exc
        _note_once(notes, f"system-under-test costs not recorded: {exc}")
        opened = None
    try:
        result = run()
    except BaseException:
        if opened is not None:
            opened.cancel()
        raise
    if opened is None:
        return result
    for restart in getattr(opened, "restarts", ()):  # between rounds: this round's counters are whole
        _note_once(notes, f"{where}: {restart}")
    served = result.completed_total
    if served is None:  # a driver that does not count the whole run: its rate over warmup and window
        warmup_s = float(result.config.get("warmup_s") or 0.0)
        served = round(result.achieved_rps * (result.duration_s + warmup_s))
    try:
        result.system = opened.end(served)
    except ServiceRestarted as exc:
        if required:
            raise InvalidMeasurement(f"{where}: {exc}") from exc
        _note_once(notes, f"{where}: {exc}; that round's system-under-test costs are not recorded")
    except CgroupError as exc:
        if required:
            raise InvalidMeasurement(f"{where}: {exc}") from exc
        _note_once(notes, f"system-under-test costs not recorded: {exc}")
    return result


def _note_once(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)


def closed_loop_note(budget: Budget, rounds: Sequence[RoundResult]) -> Optional[str]:
    """A warning for a CPU budget judged on closed-loop rounds, where the system under test
    runs flat out and CPU per request includes its contention; None otherwise."""
    if metrics.get(budget.metric).family not in CPU_FAMILIES:
        return None
    closed = [r for r in rounds if r.mode == "closed"]
    if not closed:
        return None
    cores = []
    for r in closed:
        try:
            cores.append(metric_value(r, "cpu[*]"))
        except KeyError:
            continue
    busy = f" (the system under test used {max(cores):.2f} cores)" if cores else ""
    return (
        f"judged on {len(closed)} closed-loop rounds, which drive the system under test as hard as it goes{busy}: "
        "CPU per request then includes its queueing and contention; judge it at a fixed rate below the knee "
        "(rate=...) for a steadier verdict"
    )
