"""The cost pass: what a target's entry node does per request, counted under a tracer.

For each tool a budget needs (instructions under valgrind, system calls under strace) the
pass runs the node's clone twice per repetition, serving ``high`` exact requests as fast as
it answers and then ``low`` paced over the same time, with the test's own request (path,
query, headers, body, keep-alive) over one connection, so every request is handled alone
and the count does not depend on timing. The marginal cost per request is
(count(high) - count(low)) / (high - low): start-up, shut-down and the work a server does
per second (timers) cancel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Optional, Protocol
from urllib.parse import urlsplit, urlunsplit

from pytest_netperf import defaults
from pytest_netperf.budget import metrics
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.results.model import RoundResult
from pytest_netperf.results.traced import (
    INSTRUCTIONS,
    SYSCALLS,
    MarginalCost,
    TraceCount,
    changed_most,
    implausible,
    marginal,
)


class Tracer(Protocol):
    """Runs the entry node of a target under a counting tool (see runtime/traced_clone.py)."""

    @property
    def node(self) -> str:
        """The node that is traced: the one the target's URL enters."""
        ...

    def prepare(self) -> None:
        """Before any load: make sure the node can be traced (its cost image), else raise."""
        ...

    def count(self, tool: str, load: Callable[[str], int], requests: int, time_limit_s: float) -> TraceCount:
        """One traced run: ``load("host:port")`` sends ``requests`` requests to the clone."""
        ...


@dataclass(frozen=True)
class CostPassPlan:
    """How much the cost pass counts: two request counts, repeated, each run bounded in time."""

    low: int = round(defaults.COST_PASS_REQUESTS * defaults.COST_PASS_LOW_SHARE)
    high: int = defaults.COST_PASS_REQUESTS
    repetitions: int = defaults.COST_PASS_REPETITIONS
    time_limit_s: float = defaults.COST_PASS_TIME_LIMIT_S

    @classmethod
    def of(cls, requests: int, repetitions: int, time_limit_s: float) -> CostPassPlan:
        """The plan counting ``requests`` (and a fifth of them) ``repetitions`` times."""
        return cls(max(1, round(requests * defaults.COST_PASS_LOW_SHARE)), requests, repetitions, time_limit_s)


#: A larger count answered faster than this is not paced against (nothing periodic fits in it).
MIN_PACED_S = 0.05


def exact_shape(shape: LoadShape, requests: int, time_limit_s: float, rate: Optional[float] = None) -> LoadShape:
    """``shape``'s request sent exactly ``requests`` times over one connection: closed loop, or
    paced at ``rate`` per second."""
    extra = {k: v for k, v in shape.extra.items() if k not in ("realtime", "max_lag")}
    extra["requests"] = requests
    if rate:
        extra["max_lag"] = "1s"  # a traced server is slow; pacing, not latency, is the point
    return replace(shape, connections=1, threads=1, rate=rate, warmup_s=0.0, duration_s=time_limit_s, extra=extra)


def at_address(url: str, address: str) -> str:
    """``url`` sent to ``address`` (``host:port``) instead, path and query kept."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=address))


def run_cost_pass(
    tracer: Tracer,
    tools: Iterable[str],
    run: Callable[[str, LoadShape], RoundResult],
    url: str,
    shape: LoadShape,
    plan: Optional[CostPassPlan] = None,
    progress: Callable[[str], None] = lambda _: None,
    parallel: bool = False,
) -> dict[str, MarginalCost]:
    """tool -> marginal cost per request of ``tracer``'s node; ``run(url, shape)`` is the driver.

    With ``parallel`` each tool's repetitions run in a thread of their own, beside the other
    tool's (each run has a clone and a connection of its own): the pass takes as long as its
    slower tool instead of both, and its counts spread as they do alone
    (benchmarks/cost_gate_power.py --both-tools).
    """
    plan = plan or CostPassPlan()
    tools = list(tools)

    def repetitions_of(tool: str) -> list[tuple[TraceCount, TraceCount]]:
        pairs = []
        for repetition in range(plan.repetitions):
            # the larger count first, as fast as the traced server answers; then the smaller one
            # paced over the same time, so that work a server does per second (timers, stats
            # flushes, DNS refreshes) is the same in both runs and cancels with start-up
            high, loaded_s = _traced_run(tracer, tool, run, url, shape, plan, plan.high, None)
            pace = plan.low / loaded_s if loaded_s > MIN_PACED_S else None
            low, _ = _traced_run(tracer, tool, run, url, shape, plan, plan.low, pace)
            pairs.append((low, high))
            progress(
                f"cost pass {tracer.node} {tool} repetition {repetition + 1}/{plan.repetitions}: "
                f"{low.seconds + high.seconds:.1f}s"
            )
        return pairs

    if parallel and len(tools) > 1:
        with ThreadPoolExecutor(max_workers=len(tools), thread_name_prefix="netperf-cost") as pool:
            futures = {tool: pool.submit(repetitions_of, tool) for tool in tools}
            pairs = {tool: future.result() for tool, future in futures.items()}
    else:
        pairs = {tool: repetitions_of(tool) for tool in tools}
    costs = {tool: marginal(tracer.node, pairs[tool]) for tool in tools}
    for cost in costs.values():
        problem = implausible(cost)
        if problem:
            raise ValueError(problem)
    return costs


def _traced_run(
    tracer: Tracer,
    tool: str,
    run: Callable[[str, LoadShape], RoundResult],
    url: str,
    shape: LoadShape,
    plan: CostPassPlan,
    requests: int,
    rate: Optional[float],
) -> tuple[TraceCount, float]:
    """One traced run of ``requests`` requests (paced at ``rate`` when given) and the seconds
    its load took."""
    loaded_s = [0.0]

    def load(address: str) -> int:
        result = run(at_address(url, address), exact_shape(shape, requests, plan.time_limit_s, rate))
        if result.achieved_rps > 0:
            loaded_s[0] = result.ok / result.achieved_rps
        return int(result.ok)

    return tracer.count(tool, load, requests, plan.time_limit_s), loaded_s[0]


def cost_pass_problem(url: str, tracer: Optional[Tracer], driver: str) -> str:
    """Why a series cannot have a cost pass, or "" when it can."""
    if tracer is None:
        return (
            f"{url} cannot be traced: the cost pass clones the node that serves a target, so it needs an endpoint "
            "of netperf_topology or netperf_compose whose node has a network namespace a clone can take (not a "
            "plain URL or a node on the host network)"
        )
    if driver != "rust":
        return f"the cost pass sends exact request counts with the rust driver; this series uses {driver}"
    return ""


#: Smallest per-request change worth naming, by tool, and as a share of the whole cost.
_NAMED_FLOOR = {INSTRUCTIONS: 1.0, SYSCALLS: 0.05}
NAMED_SHARE = 0.002


def _format_change(tool: str, delta: float) -> str:
    return f"{delta:+,.0f}" if tool == INSTRUCTIONS else f"{delta:+.2f}"


def cost_pass_notes(
    budget_text: object,
    candidate: Mapping[str, Mapping[str, MarginalCost]],
    other: Optional[Mapping[str, Mapping[str, MarginalCost]]],
    other_label: str,
) -> list[str]:
    """What the cost pass did for a budget's series, and where the cost went against the other side."""
    metric = getattr(budget_text, "metric", str(budget_text))
    tool = metrics.tool_of(metric)
    notes = []
    for label, traced in (("candidate", candidate), (other_label, other)):
        for node, cost in sorted((traced or {}).get(tool, {}).items()):
            low, high = cost.requests
            notes.append(
                f"cost pass of {node} ({label}): {tool} under {'valgrind' if tool == INSTRUCTIONS else 'strace'}, "
                f"{len(cost.per_request)} x ({high} - {low}) requests, {cost.seconds:.1f}s; "
                f"{cost.median:,.1f} per request, spread {cost.spread:.2%}"
            )
    if other:
        for node, cost in sorted(candidate.get(tool, {}).items()):
            before = other.get(tool, {}).get(node)
            if before is None:
                continue
            # a change smaller than the repetitions' own resolution is not named
            floor = max(_NAMED_FLOOR[tool], NAMED_SHARE * before.median)
            changes = changed_most(cost.by_name, before.by_name, floor=floor)
            what = "functions" if tool == INSTRUCTIONS else "system calls"
            if changes:
                listed = ", ".join(f"{name} {_format_change(tool, delta)}" for name, delta in changes)
                notes.append(f"{node}: {what} whose {tool} per request changed most vs {other_label}: {listed}")
            else:
                notes.append(f"{node}: no {what} changed by {floor:.3g} or more per request vs {other_label}")
    return notes


#: The fact a series gets from its cost pass.
COST_FACT = "cost per request"


def cost_fact(traced: Mapping[str, Mapping[str, MarginalCost]], limit: int = 6) -> str:
    """``edge 25,088 instructions; 8.00 system calls (epoll_wait 2.00, recvfrom 2.00, …)`` per node."""
    parts = []
    nodes = sorted({node for costs in traced.values() for node in costs})
    for node in nodes:
        counted = []
        instructions = traced.get(INSTRUCTIONS, {}).get(node)
        if instructions is not None:
            counted.append(f"{instructions.median:,.0f} instructions")
        syscalls = traced.get(SYSCALLS, {}).get(node)
        if syscalls is not None:
            named = sorted(syscalls.by_name.items(), key=lambda item: (-item[1], item[0]))
            listed = ", ".join(f"{name} {value:.2f}" for name, value in named[:limit] if value >= 0.005)
            counted.append(f"{syscalls.median:.2f} system calls ({listed})")
        parts.append(f"{node} " + "; ".join(counted))
    return "; ".join(parts)
