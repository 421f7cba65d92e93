"""Counted costs of one node: what a counted run counted, and the marginal cost per request.

A counted run (:class:`CountedRun`) is the node's own process under valgrind (instructions) or
strace (system calls) serving an exact number of requests. Two runs with different counts
give the marginal cost per request, in which start-up and shut-down cancel
(:class:`CountedCost`); repeating the pair shows how deterministic the count is.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from pytest_netperf import defaults
from pytest_netperf.results.stacks import heaviest, marginal_stacks


@dataclass(frozen=True)
class CountingTool:
    """One tool of a counting pass: what it counts, under which program, as which metric."""

    #: What it counts, the key of its counts everywhere (``instructions``, ``syscalls``).
    name: str
    #: The program that counts (valgrind's cachegrind, strace).
    program: str
    #: The budget metric it feeds (``instructions_per_request``).
    metric: str
    #: The value of the metric's family in the metrics registry.
    family: str
    #: What its counts are broken down by (``functions``, ``system calls``).
    parts: str
    #: Below this a count per request is not the request's work: a server cannot parse, route
    #: and answer an HTTP request in fewer instructions, nor without a receive and a send (even
    #: batched by epoll over one connection). A count under the floor means the processes that
    #: served the requests were not the ones counted (workers outside the trace, a second listener).
    plausible_floor: float
    #: The smallest per-request change of one part worth naming in a comparison.
    named_floor: float
    #: Decimal places a per-request figure of one part is shown with.
    decimals: int

    def format_change(self, delta: float) -> str:
        """A signed per-request change of one part (``+664``, ``-1.00``)."""
        return f"{delta:+,.{self.decimals}f}"


#: The tools of a counting pass, by what they count.
INSTRUCTIONS = "instructions"
SYSCALLS = "syscalls"
COUNTING_TOOLS: Mapping[str, CountingTool] = {
    tool.name: tool
    for tool in (
        CountingTool(INSTRUCTIONS, "valgrind", "instructions_per_request", "instructions", "functions", 1000.0, 1.0, 0),
        CountingTool(SYSCALLS, "strace", "syscalls_per_request", "system calls", "system calls", 0.5, 0.05, 2),
    )
}
TOOLS = tuple(COUNTING_TOOLS)
#: The profiling run of valgrind's callgrind: instructions by call stack, for the report's flame
#: graph. It feeds no budget (its count is not the budget's: docs/budgets.md, "Where the cost
#: went, as a picture"); its stacks go on the ``instructions`` cost of the same node.
STACKS = "stacks"
#: Every tool a counting clone can run.
PROFILE_TOOLS = (*TOOLS, STACKS)


def counting_tool(name: str) -> CountingTool:
    """The counting tool called ``name``; KeyError naming the known ones otherwise."""
    try:
        return COUNTING_TOOLS[name]
    except KeyError:
        raise KeyError(f"unknown counting tool {name!r}; expected one of {', '.join(TOOLS)}") from None


def relative_spread(values: Sequence[float]) -> float:
    """(largest - smallest) / median of repetitions: how deterministic a count was (0 for one value)."""
    middle = float(statistics.median(values))
    return (max(values) - min(values)) / middle if middle else 0.0


def timing_dependent(values: Sequence[float], resolution: float = defaults.COUNTED_RESOLUTION) -> bool:
    """Whether repetitions of one count spread wider than a count's resolution: what the
    server did per request then depended on timing (how its reads and timers fell), not on
    the requests alone."""
    return len(values) > 1 and relative_spread(values) > resolution


#: At most this many parts are kept as varying between repetitions (the widest).
VARYING_LIMIT = 8


@dataclass(frozen=True)
class CountedRun:
    """One counted run: the node's processes in total while serving ``requests`` requests."""

    tool: str
    requests: int
    total: float
    #: instructions by function (valgrind) or calls by system call name (strace)
    by_name: Mapping[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    #: processes whose counts were read (nginx master and workers, …)
    processes: int = 1
    #: instructions by folded call stack ``root;…;leaf`` (the ``stacks`` tool only)
    stacks: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class CountedCost:
    """Cost per request of one node under one tool, one value per repetition."""

    node: str
    tool: str
    per_request: tuple[float, ...]
    #: per-request cost by function or system call name (median over the repetitions)
    by_name: Mapping[str, float] = field(default_factory=dict)
    #: the two request counts whose difference each repetition measured
    requests: tuple[int, int] = (0, 0)
    #: wall time of every counted run of this node and tool together
    seconds: float = 0.0
    #: the parts (functions, system calls) whose count per request moved between repetitions
    #: by at least the tool's ``named_floor``: name -> (smallest, largest), widest first
    varying: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    #: instructions per request by folded call stack ``root;…;leaf`` (the heaviest, the rest as
    #: one ``[other stacks]``); empty when no profiling run gave stacks
    stacks: Mapping[str, float] = field(default_factory=dict)
    #: the processes each repetition's (smaller, larger) run counted; empty where not recorded
    processes: tuple[tuple[int, int], ...] = ()

    @property
    def median(self) -> float:
        """The median over repetitions."""
        return float(statistics.median(self.per_request))

    @property
    def spread(self) -> float:
        """(largest - smallest) / median over repetitions: how deterministic the count was."""
        return relative_spread(self.per_request)

    @property
    def timing_dependent(self) -> bool:
        """Its repetitions spread wider than a count's resolution (:func:`timing_dependent`)."""
        return timing_dependent(self.per_request)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "node": self.node,
            "tool": self.tool,
            "per_request": list(self.per_request),
            "by_name": dict(self.by_name),
            "requests": list(self.requests),
            "seconds": self.seconds,
            "varying": {name: list(span) for name, span in self.varying.items()},
            "stacks": dict(self.stacks),
            "processes": [list(pair) for pair in self.processes],
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> CountedCost:
        """Inverse of :meth:`to_dict`."""
        low, high = doc.get("requests", (0, 0))
        return cls(
            node=str(doc["node"]),
            tool=str(doc["tool"]),
            per_request=tuple(float(v) for v in doc["per_request"]),
            by_name={str(k): float(v) for k, v in dict(doc.get("by_name", {})).items()},
            requests=(int(low), int(high)),
            seconds=float(doc.get("seconds", 0.0)),
            varying={
                str(k): (float(v[0]), float(v[1]))
                for k, v in dict(doc.get("varying") or {}).items()
                if isinstance(v, (list, tuple)) and len(v) == 2
            },
            stacks={str(k): float(v) for k, v in dict(doc.get("stacks") or {}).items()},
            processes=tuple(
                (int(pair[0]), int(pair[1]))
                for pair in doc.get("processes") or ()
                if isinstance(pair, (list, tuple)) and len(pair) == 2
            ),
        )

    @property
    def uneven_runs(self) -> str:
        """``repetition 1: 3 and 2``: the repetitions whose smaller and larger runs counted
        different numbers of processes (one counted in one run alone: its start-up and exit did
        not cancel), or "" when none did."""
        return ", ".join(
            f"repetition {index}: {low} and {high}"
            for index, (low, high) in enumerate(self.processes, 1)
            if low != high
        )


def marginal(node: str, pairs: Sequence[tuple[CountedRun, CountedRun]]) -> CountedCost:
    """The cost per request from repetitions of (fewer requests, more requests) counted runs."""
    if not pairs:
        raise ValueError("no counted runs to take a marginal cost from")
    per_request = []
    names = {name for low, high in pairs for name in (*low.by_name, *high.by_name)}
    per_name: dict[str, list[float]] = {name: [] for name in names}
    for low, high in pairs:
        extra = high.requests - low.requests
        if extra <= 0:
            raise ValueError(f"the second run must serve more requests ({low.requests} then {high.requests})")
        per_request.append((high.total - low.total) / extra)
        for name in names:  # a name a repetition did not count changed by 0 in it
            per_name[name].append((high.by_name.get(name, 0.0) - low.by_name.get(name, 0.0)) / extra)
    first_low, first_high = pairs[0]
    return CountedCost(
        node=node,
        tool=first_low.tool,
        per_request=tuple(per_request),
        by_name={name: float(statistics.median(values)) for name, values in per_name.items()},
        requests=(first_low.requests, first_high.requests),
        seconds=sum(low.seconds + high.seconds for low, high in pairs),
        varying=varying_parts(per_name, counting_tool(_counted_as(first_low.tool)).named_floor),
        stacks=heaviest(
            marginal_stacks([(low.stacks, high.stacks, high.requests - low.requests) for low, high in pairs])
        ),
        processes=tuple((low.processes, high.processes) for low, high in pairs),
    )


def _counted_as(tool: str) -> str:
    """The counting tool whose floors a tool's counts are held to (``stacks``: instructions')."""
    return INSTRUCTIONS if tool == STACKS else tool


def varying_parts(per_name: Mapping[str, Sequence[float]], floor: float) -> dict[str, tuple[float, float]]:
    """name -> (smallest, largest) per-request count of the parts that moved between repetitions
    by ``floor`` or more, the :data:`VARYING_LIMIT` widest first."""
    spans = {name: (min(values), max(values)) for name, values in per_name.items() if len(values) > 1}
    moved = [(name, span) for name, span in spans.items() if span[1] - span[0] >= max(floor, 1e-9)]
    moved.sort(key=lambda item: (-(item[1][1] - item[1][0]), item[0]))
    return {name: (float(low), float(high)) for name, (low, high) in moved[:VARYING_LIMIT]}


def parts_changed(
    candidate: Mapping[str, CountedCost], reference: Mapping[str, CountedCost], floor: float
) -> Optional[list[tuple[str, float]]]:
    """The parts (``node: part``) whose per-request count changed from ``reference`` to
    ``candidate`` by ``floor`` or more, and by more than the part moved between either side's
    own repetitions, largest first; None when the sides did not count the same nodes (nothing
    can be said of their parts)."""
    if not candidate or set(candidate) != set(reference):
        return None
    changed: list[tuple[str, float]] = []
    for node, cost in sorted(candidate.items()):
        before = reference[node]
        floors = part_floors(cost, before, floor)
        changed.extend(
            (f"{node}: {name}", delta)
            for name, delta in changed_most(
                cost.by_name, before.by_name, limit=VARYING_LIMIT, floor=floor, floors=floors
            )
        )
    return sorted(changed, key=lambda item: (-abs(item[1]), item[0]))


def part_floors(cost: CountedCost, before: CountedCost, floor: float) -> dict[str, float]:
    """For each part that moved between the repetitions of either side, the smallest change of
    it between the sides that is one: ``floor`` or what it moved by, whichever is larger (a
    change inside a part's own spread is not a change)."""
    floors: dict[str, float] = {}
    for side in (cost, before):
        for name, (low, high) in side.varying.items():
            floors[name] = max(floors.get(name, floor), high - low)
    return floors


def implausible(cost: CountedCost) -> str:
    """Why ``cost`` cannot be a count of the requests' work (a repetition under the tool's
    plausibility floor, zero or negative), or "" when it can."""
    floor = counting_tool(_counted_as(cost.tool)).plausible_floor
    low = min(cost.per_request)
    if low >= floor and low > 0:
        return ""
    values = ", ".join(f"{value:.3g}" for value in cost.per_request)
    return (
        f"{cost.tool} per request of {cost.node} counted {values} over {cost.requests[1] - cost.requests[0]} "
        f"requests, below the {floor:g} any server spends on a request: the processes that served "
        "them were not the ones counted (workers outside the trace, another listener on the port)"
    )


def changed_most(
    candidate: Mapping[str, float],
    reference: Mapping[str, float],
    limit: int = 3,
    floor: float = 0.5,
    floors: Optional[Mapping[str, float]] = None,
) -> list[tuple[str, float]]:
    """The names whose per-request cost changed most (candidate - reference), largest first;
    a change smaller than its name's entry in ``floors`` (``floor`` for a name without one) per
    request is left out."""
    deltas = {name: candidate.get(name, 0.0) - reference.get(name, 0.0) for name in set(candidate) | set(reference)}
    ranked = sorted(deltas.items(), key=lambda item: (-abs(item[1]), item[0]))
    named = (floors or {}).get
    return [(name, delta) for name, delta in ranked if abs(delta) >= named(name, floor)][:limit]
