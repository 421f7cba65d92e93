"""The counting pass: what a target's entry node does per request, counted under a counter.

For each tool a budget needs (instructions under valgrind, system calls under strace) the
pass runs the node's clone twice per repetition, serving ``high`` exact requests as fast as
it answers and then ``low`` paced over the same time, with the test's own request (path,
query, headers, body, keep-alive) over one connection, so every request is handled alone
and the count does not depend on timing. The marginal cost per request is
(count(high) - count(low)) / (high - low): start-up, shut-down and the work a server does
per second (timers) cancel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Optional, Protocol
from urllib.parse import urlsplit, urlunsplit

from pytest_netperf import defaults
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import NetperfError
from pytest_netperf.results.counted import CountedCost, CountedRun, counting_tool, implausible, marginal
from pytest_netperf.results.model import RoundResult


class CountingRun(Protocol):
    """A running clone of a node under a counting tool (see runtime/counting_clone.py)."""

    @property
    def address(self) -> str:
        """``host:port`` the counted requests go to."""
        ...

    def counts(self, requests: int) -> CountedRun:
        """Stop the clone and read what the tool counted while it served ``requests`` requests."""
        ...


class CountingNode(Protocol):
    """Runs the entry node of a target under a counting tool (see runtime/counting_clone.py)."""

    @property
    def node(self) -> str:
        """The node that is counted: the one the target's URL enters."""
        ...

    def prepare(self) -> None:
        """Before any load: make sure the node can be counted (its counting image), else raise."""
        ...

    def clone(self, tool: str, time_limit_s: float) -> AbstractContextManager[CountingRun]:
        """A clone of the node under ``tool``, ready for load; removed when the block ends."""
        ...


class CountingPassError(NetperfError):
    """A counting pass could not count: a clone did not start or serve every request, the driver
    failed, or the counts cannot be the requests' work. The budgets it serves are INVALID."""


@dataclass(frozen=True)
class CountingPlan:
    """How much the counting pass counts: two request counts, repeated, each run bounded in time."""

    low: int = round(defaults.COUNTING_REQUESTS * defaults.COUNTING_LOW_SHARE)
    high: int = defaults.COUNTING_REQUESTS
    repetitions: int = defaults.COUNTING_REPETITIONS
    time_limit_s: float = defaults.COUNTING_TIME_LIMIT_S

    @classmethod
    def of(cls, requests: int, repetitions: int, time_limit_s: float) -> CountingPlan:
        """The plan counting ``requests`` (and a fifth of them) ``repetitions`` times."""
        return cls(max(1, round(requests * defaults.COUNTING_LOW_SHARE)), requests, repetitions, time_limit_s)


#: A larger count answered faster than this is not paced against (nothing periodic fits in it).
MIN_PACED_S = 0.05


def exact_shape(shape: LoadShape, requests: int, time_limit_s: float, rate: Optional[float] = None) -> LoadShape:
    """``shape``'s request sent exactly ``requests`` times over one connection: closed loop, or
    paced at ``rate`` per second."""
    extra = {k: v for k, v in shape.extra.items() if k not in ("realtime", "max_lag")}
    extra["requests"] = requests
    if rate:
        extra["max_lag"] = "1s"  # a counted server is slow; pacing, not latency, is the point
    return replace(shape, connections=1, threads=1, rate=rate, warmup_s=0.0, duration_s=time_limit_s, extra=extra)


def at_address(url: str, address: str) -> str:
    """``url`` sent to ``address`` (``host:port``) instead, path and query kept."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=address))


def run_counting_pass(
    counter: CountingNode,
    tools: Iterable[str],
    run: Callable[[str, LoadShape], RoundResult],
    url: str,
    shape: LoadShape,
    plan: Optional[CountingPlan] = None,
    progress: Callable[[str], None] = lambda _: None,
    parallel: bool = False,
) -> dict[str, CountedCost]:
    """tool -> marginal cost per request of ``counter``'s node; ``run(url, shape)`` is the driver.

    With ``parallel`` each tool's repetitions run in a thread of their own, beside the other
    tool's (each run has a clone and a connection of its own): the pass takes as long as its
    slower tool instead of both, and its counts spread as they do alone
    (benchmarks/counting_gate_power.py --both-tools). Raises CountingPassError when it cannot count.
    """
    plan = plan or CountingPlan()
    tools = list(tools)

    def repetitions_of(tool: str) -> list[tuple[CountedRun, CountedRun]]:
        pairs = []
        for repetition in range(plan.repetitions):
            # the larger count first, as fast as the counted server answers; then the smaller one
            # paced over the same time, so that work a server does per second (timers, stats
            # flushes, DNS refreshes) is the same in both runs and cancels with start-up
            high, loaded_s = _counted_run(counter, tool, run, url, shape, plan, plan.high, None)
            pace = plan.low / loaded_s if loaded_s > MIN_PACED_S else None
            low, _ = _counted_run(counter, tool, run, url, shape, plan, plan.low, pace)
            pairs.append((low, high))
            progress(
                f"counting pass {counter.node} {tool} repetition {repetition + 1}/{plan.repetitions}: "
                f"{low.seconds + high.seconds:.1f}s"
            )
        return pairs

    try:
        if parallel and len(tools) > 1:
            with ThreadPoolExecutor(max_workers=len(tools), thread_name_prefix="netperf-cost") as pool:
                futures = {tool: pool.submit(repetitions_of, tool) for tool in tools}
                pairs = {tool: future.result() for tool, future in futures.items()}
        else:
            pairs = {tool: repetitions_of(tool) for tool in tools}
    except CountingPassError:
        raise
    except NetperfError as exc:  # the clone (CountingError, a missing counting image) or the driver
        raise CountingPassError(str(exc)) from exc
    costs = {tool: marginal(counter.node, pairs[tool]) for tool in tools}
    for cost in costs.values():
        problem = implausible(cost)
        if problem:
            raise CountingPassError(problem)
    return costs


def _counted_run(
    counter: CountingNode,
    tool: str,
    run: Callable[[str, LoadShape], RoundResult],
    url: str,
    shape: LoadShape,
    plan: CountingPlan,
    requests: int,
    rate: Optional[float],
) -> tuple[CountedRun, float]:
    """One counted run of ``requests`` requests (paced at ``rate`` when given) and the seconds
    its load took."""
    with counter.clone(tool, plan.time_limit_s) as clone:
        result = run(at_address(url, clone.address), exact_shape(shape, requests, plan.time_limit_s, rate))
        answered = int(result.ok)
        if answered != requests:
            raise CountingPassError(
                f"{counter.node}: {answered} of {requests} requests answered under "
                f"{counting_tool(tool).program} within the {plan.time_limit_s:g}s limit; a count over fewer "
                "requests than sent would be too small"
            )
        count = clone.counts(requests)
    return count, (result.ok / result.achieved_rps if result.achieved_rps > 0 else 0.0)


def counting_problem(url: str, counter: Optional[CountingNode], driver: str) -> str:
    """Why a series cannot have a counting pass, or "" when it can."""
    if counter is None:
        return (
            f"{url} cannot be counted: the counting pass clones the node that serves a target, so it needs an endpoint "
            "of netperf_topology or netperf_compose whose node has a network namespace a clone can take (not a "
            "plain URL or a node on the host network)"
        )
    if driver != "rust":
        return f"the counting pass sends exact request counts with the rust driver; this series uses {driver}"
    return ""
