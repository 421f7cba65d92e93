"""The counting pass: what a target's entry node does per request, counted under a counter.

For each tool a budget needs (instructions under valgrind, system calls under strace) the
pass runs the node's clone twice per repetition, serving ``high`` exact requests as fast as
it answers and then ``low`` requests, with the test's own request (path, query, headers, body,
keep-alive) over one connection, so every request is handled alone and the count does not
depend on timing. The marginal cost per request is (count(high) - count(low)) / (high - low):
start-up and shut-down cancel.

Periodic work (DNS re-resolution of HAProxy's ``resolvers``, health checks, Envoy's stats
flush, timers) scales with the time a server runs, not with its requests: it cancels only when
both runs of a repetition live equally long. A run's life is counted from the moment its
server first accepts a connection (its event loop and timers run from then; what start-up
costs before it cancels on its own) to its stop signal. Pacing the smaller count over the
larger one's load window alone is not enough: the wait until a clone's processes are idle
differs from clone to clone (a resolver that wakes the server every second makes it long
and erratic), and HAProxy with ``resolvers docker`` measured instructions per request 1.3-6.5%
apart between repetitions of an unchanged config (0.40% without). So the smaller count is
paced over what its own idle wait left of the larger one's life and stopped when that life is
over; a clone whose idle wait outlasted the other's life makes the shorter-lived run count
again, living as long. This was chosen over the alternatives: reading the config for periodic
sources (``resolvers``, ``check inter``) names them but leaves them in the count and misses
other proxies' timers; counting an idle clone and subtracting adds runs and its own noise.
What equal lives cannot cancel (a timer's phase: at most one firing per run) still shows as
spread between repetitions, which the verdict reads (verdict/counted.py) and the notes name,
with the functions or system calls that moved (report/counted.py).

The sides of a comparison (the candidate and the base revision's twin, or another path) are
counted in turn, repetition by repetition, in the order A B B A A B ... (:func:`count_sides`),
as the timed rounds are: what changes on the machine during the pass (a neighbour's load, a
test on the other CI worker) then reaches every side, and a step in it shows as a spread of at
least one side's repetitions, which the verdict widens its interval by. Counted one side after
the other, a count that depends on timing can differ between the sides while each side's own
repetitions agree: an unchanged nginx without an upstream keep-alive pool counted 15.0 and 14.8
system calls per request (``readv``: a response that arrives in one piece or two), each side's
two repetitions within 0.5%, and its gate went red (CI, 2026-12-07).

Start-up and exit cancel only when both runs counted the same processes (valgrind writes one
file a process: nginx's master and workers, HAProxy's master and worker). A repetition whose
two runs counted different numbers of processes is counted again (at most
:data:`PROCESS_REDOS` times); where they still differ, the notes say so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Optional, Protocol
from urllib.parse import urlsplit, urlunsplit

from pytest_netperf import defaults
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import NetperfError
from pytest_netperf.results.counted import (
    INSTRUCTIONS,
    STACKS,
    CountedCost,
    CountedRun,
    counting_tool,
    implausible,
    marginal,
)
from pytest_netperf.results.model import RoundResult


class CountingRun(Protocol):
    """A running clone of a node under a counting tool (see runtime/counting_clone.py)."""

    @property
    def address(self) -> str:
        """``host:port`` the counted requests go to."""
        ...

    @property
    def ready_at(self) -> float:
        """When (monotonic seconds) the server first accepted a connection: its life starts."""
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
    """How much the counting pass counts: two request counts, repeated, each run bounded in time;
    with ``stacks``, one more pair of runs under callgrind gives the instructions' call stacks
    (for the report's flame graph; the budget is judged on cachegrind's counts alone)."""

    low: int = round(defaults.COUNTING_REQUESTS * defaults.COUNTING_LOW_SHARE)
    high: int = defaults.COUNTING_REQUESTS
    repetitions: int = defaults.COUNTING_REPETITIONS
    time_limit_s: float = defaults.COUNTING_TIME_LIMIT_S
    stacks: bool = False

    @classmethod
    def of(cls, requests: int, repetitions: int, time_limit_s: float, stacks: bool = False) -> CountingPlan:
        """The plan counting ``requests`` (and a fifth of them) ``repetitions`` times."""
        return cls(max(1, round(requests * defaults.COUNTING_LOW_SHARE)), requests, repetitions, time_limit_s, stacks)


#: A larger count answered faster than this is not paced against (nothing periodic fits in it).
MIN_PACED_S = 0.05


@dataclass(frozen=True)
class Clock:
    """The pass's time: ``now`` (monotonic seconds) and ``sleep``."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


DEFAULT_CLOCK = Clock()
#: The two runs of a repetition live equally long when their lives differ by at most this
#: share of the longer one plus LIFE_TOLERANCE_S; otherwise the shorter-lived one is counted
#: again, at most LIFE_REDOS times.
LIFE_TOLERANCE = 0.02
LIFE_TOLERANCE_S = 0.05
LIFE_REDOS = 2
#: A repetition whose two runs counted different numbers of processes is counted again at most
#: this many times.
PROCESS_REDOS = 2
#: A driver run that lasted this share of the counting time limit was cut by it.
LIMIT_REACHED = 0.95
#: Seconds a counted request may take at least (the test's own timeout when longer): the first
#: TLS handshake of a clone under valgrind translates the server's crypto code first, and took
#: more than the default 5 s timeout here (no answer to the ClientHello within 5s).
COUNTED_REQUEST_TIMEOUT_S = 60.0


def exact_shape(shape: LoadShape, requests: int, time_limit_s: float, rate: Optional[float] = None) -> LoadShape:
    """``shape``'s request sent exactly ``requests`` times over one connection (a new one per
    request with ``new_connection_per_request``; TLS options kept): closed loop, or paced at
    ``rate`` per second. A request may take up to :data:`COUNTED_REQUEST_TIMEOUT_S` (within the
    time limit): what a counted request costs does not depend on how long it took."""
    extra = {k: v for k, v in shape.extra.items() if k not in ("realtime", "max_lag")}
    extra["requests"] = requests
    if rate:
        extra["max_lag"] = "1s"  # a counted server is slow; pacing, not latency, is the point
    timeout = min(max(shape.timeout_s, COUNTED_REQUEST_TIMEOUT_S), time_limit_s)
    return replace(
        shape,
        connections=1,
        threads=1,
        rate=rate,
        warmup_s=0.0,
        duration_s=time_limit_s,
        timeout_s=timeout,
        extra=extra,
    )


def at_address(url: str, address: str) -> str:
    """``url`` sent to ``address`` (``host:port``) instead, path and query kept."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=address))


@dataclass(frozen=True)
class CountedSide:
    """One side of a counting pass: the node ``counter`` clones, reached by the driver's ``run``
    at ``url`` with the test's request ``shape``; ``label`` names it in the progress lines."""

    counter: CountingNode
    run: Callable[[str, LoadShape], RoundResult]
    url: str
    shape: LoadShape
    label: str = ""


#: What a side's counting pass gave: tool -> cost, and tool -> why it could not count.
SideCounts = tuple[dict[str, CountedCost], dict[str, str]]


def run_counting_pass(
    counter: CountingNode,
    tools: Iterable[str],
    run: Callable[[str, LoadShape], RoundResult],
    url: str,
    shape: LoadShape,
    plan: Optional[CountingPlan] = None,
    progress: Callable[[str], None] = lambda _: None,
    parallel: bool = False,
    clock: Clock = DEFAULT_CLOCK,
) -> dict[str, CountedCost]:
    """tool -> marginal cost per request of ``counter``'s node; ``run(url, shape)`` is the driver.

    Raises CountingPassError when a tool cannot count (the first one's reason); see
    :func:`count_tools` for the counts and reasons of every tool.
    """
    costs, errors = count_tools(counter, tools, run, url, shape, plan, progress, parallel, clock)
    if errors:
        raise CountingPassError(next(iter(errors.values())))
    return costs


def count_tools(
    counter: CountingNode,
    tools: Iterable[str],
    run: Callable[[str, LoadShape], RoundResult],
    url: str,
    shape: LoadShape,
    plan: Optional[CountingPlan] = None,
    progress: Callable[[str], None] = lambda _: None,
    parallel: bool = False,
    clock: Clock = DEFAULT_CLOCK,
) -> SideCounts:
    """(tool -> marginal cost per request, tool -> why it could not count) of ``counter``'s node:
    :func:`count_sides` of one side."""
    return count_sides([CountedSide(counter, run, url, shape)], tools, plan, progress, parallel, clock)[0]


def count_sides(
    sides: Sequence[CountedSide],
    tools: Iterable[str],
    plan: Optional[CountingPlan] = None,
    progress: Callable[[str], None] = lambda _: None,
    parallel: bool = False,
    clock: Clock = DEFAULT_CLOCK,
) -> list[SideCounts]:
    """Each side's (tool -> marginal cost per request, tool -> why it could not count).

    Each tool counts on its own, its repetitions taking the sides in turn (A B B A ...: see the
    module's docstring): one that cannot count (a clone that dies under valgrind, a count below
    any request's work) leaves the other tool's counts and the other sides' standing, and its
    reason names only itself. With ``parallel`` each tool's repetitions run in a thread of their
    own, beside the other tool's (each run has a clone and a connection of its own): the pass
    takes as long as its slower tool instead of both, and its counts spread as they do alone
    (benchmarks/counting_gate_power.py --both-tools). With ``plan.stacks`` the instructions
    get their call stacks from one profiling pair of runs a side (:func:`with_stacks`): with
    ``parallel``, beside the tools' counts, which then run one after the other (a pass that
    profiles takes about as long as the counts alone, not the counts and the profile); else
    after them.
    """
    plan = plan or CountingPlan()
    tools = list(tools)
    profiles = (
        [_ToolCount(side, STACKS, replace(plan, repetitions=1), clock) for side in sides]
        if plan.stacks and INSTRUCTIONS in tools
        else []
    )

    def count(tool: str) -> list[CountedCost | str]:
        return _in_turn([_ToolCount(side, tool, plan, clock) for side in sides], progress)

    def profiled() -> list[dict[str, float] | str]:
        """Each side's call stacks per request from its profiling pair, or why there are none."""
        found: list[dict[str, float] | str] = []
        for profile in profiles:
            try:
                found.append(dict(marginal(profile.side.counter.node, profile.repetitions(progress)).stacks))
            except NetperfError as exc:
                found.append(str(exc))
        return found

    stacks: list[dict[str, float] | str] = []
    if parallel and profiles:
        # the profiles beside the tools' counts, one after the other: system calls under strace
        # beside two valgrind runs on two cores spread wider between repetitions (median 0.35%
        # against 0.16% beside one, six passes each); instructions did not
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="netperf-cost") as pool:
            profiling = pool.submit(profiled)
            results = {tool: count(tool) for tool in tools}
            stacks = profiling.result()
    elif parallel and len(tools) > 1:
        with ThreadPoolExecutor(max_workers=len(tools), thread_name_prefix="netperf-cost") as pool:
            counting = {tool: pool.submit(count, tool) for tool in tools}
            results = {tool: future.result() for tool, future in counting.items()}
    else:
        results = {tool: count(tool) for tool in tools}
        if profiles and any(isinstance(r, CountedCost) for r in results.get(INSTRUCTIONS, [])):
            stacks = profiled()
    counted: list[SideCounts] = []
    for index in range(len(sides)):
        of_side = {tool: found[index] for tool, found in results.items()}
        costs = {tool: r for tool, r in of_side.items() if isinstance(r, CountedCost)}
        errors = {tool: r for tool, r in of_side.items() if isinstance(r, str)}
        if INSTRUCTIONS in costs and stacks:
            costs[INSTRUCTIONS] = with_stacks(costs[INSTRUCTIONS], stacks[index], progress)
        counted.append((costs, errors))
    return counted


def _in_turn(counts: Sequence[_ToolCount], progress: Callable[[str], None]) -> list[CountedCost | str]:
    """One tool's cost of each side, or why it could not count: repetition by repetition, the
    sides in turn, in order on even repetitions and reversed on odd ones (A B B A A B ...). A side
    whose run failed is counted no more; the others go on."""
    pairs: list[list[tuple[CountedRun, CountedRun]]] = [[] for _ in counts]
    failed: dict[int, str] = {}
    repetitions = counts[0].plan.repetitions if counts else 0
    for repetition in range(repetitions):
        order = range(len(counts)) if repetition % 2 == 0 else reversed(range(len(counts)))
        for index in order:
            if index in failed:
                continue
            try:  # too few answers, the clone (CountingError, its image) or the driver
                pairs[index].append(counts[index].repetition(repetition, progress))
            except NetperfError as exc:
                failed[index] = str(exc)
    found: list[CountedCost | str] = []
    for index, count in enumerate(counts):
        if index in failed:
            found.append(failed[index])
            continue
        try:
            cost = marginal(count.side.counter.node, pairs[index])
        except NetperfError as exc:
            found.append(str(exc))
            continue
        found.append(implausible(cost) or cost)
    return found


def with_stacks(
    cost: CountedCost, stacks: dict[str, float] | str, progress: Callable[[str], None] = lambda _: None
) -> CountedCost:
    """``cost`` with the profiling pair's call stacks per request; ``cost`` as it is when the
    profiling failed (``stacks`` is then its reason: the picture is left out, never the verdict)."""
    if isinstance(stacks, str):
        progress(f"counting pass {cost.node}: no call stacks ({stacks})")
        return cost
    return replace(cost, stacks=stacks)


@dataclass(frozen=True)
class _ToolCount:
    """The counted runs of one tool on ``side``'s node."""

    side: CountedSide
    tool: str
    plan: CountingPlan
    clock: Clock

    def repetitions(self, progress: Callable[[str], None]) -> list[tuple[CountedRun, CountedRun]]:
        """The (smaller, larger) counted runs of every repetition."""
        return [self.repetition(index, progress) for index in range(self.plan.repetitions)]

    def repetition(self, index: int, progress: Callable[[str], None]) -> tuple[CountedRun, CountedRun]:
        """The (smaller, larger) counted runs of repetition ``index``, counted again while they
        counted different numbers of processes (at most :data:`PROCESS_REDOS` times)."""
        side = f"{self.side.counter.node} ({self.side.label})" if self.side.label else self.side.counter.node
        name = f"counting pass {side} {self.tool} repetition {index + 1}/{self.plan.repetitions}"
        low, high = self.pair()
        for _ in range(PROCESS_REDOS):
            if low.processes == high.processes:
                break
            progress(f"{name}: its runs counted {low.processes} and {high.processes} processes; counted again")
            low, high = self.pair()
        progress(f"{name}: {low.seconds + high.seconds:.1f}s, {_processes(low, high)}")
        return low, high

    def pair(self) -> tuple[CountedRun, CountedRun]:
        """The (smaller, larger) counted runs of one repetition, living equally long.

        The larger count goes first, as fast as the counted server answers; the smaller one is
        paced over the rest of the larger one's life and stopped when that life is over. A clone
        whose own idle wait outlasted the other's life cannot be fitted: the shorter-lived run is
        counted again, made to live as long as the longer (at most :data:`LIFE_REDOS` times)."""
        plan = self.plan
        high, high_life = self.counted_run(plan.high, None)
        low, low_life = self.counted_run(plan.low, high_life)
        for _ in range(LIFE_REDOS):
            longer = max(high_life, low_life)
            if longer - min(high_life, low_life) <= LIFE_TOLERANCE_S + LIFE_TOLERANCE * longer:
                break
            if high_life < low_life:
                high, high_life = self.counted_run(plan.high, low_life)
            else:
                low, low_life = self.counted_run(plan.low, high_life)
        return low, high

    def counted_run(self, requests: int, life: Optional[float]) -> tuple[CountedRun, float]:
        """One counted run of ``requests`` requests, and its life: the seconds from the moment its
        server listened to its stop.

        The larger count goes as fast as the server answers; the smaller one is paced over what its
        own idle wait left of ``life``. Given a ``life``, the stop waits until it is over."""
        plan, clock = self.plan, self.clock
        side = self.side
        with side.counter.clone(self.tool, plan.time_limit_s) as clone:
            rate = None
            if life is not None and requests < plan.high:
                window = life - (clock.now() - clone.ready_at)
                rate = requests / window if window > MIN_PACED_S else None
            result = side.run(
                at_address(side.url, clone.address), exact_shape(side.shape, requests, plan.time_limit_s, rate)
            )
            answered = int(result.ok)
            if answered != requests:
                raise CountingPassError(_short_answer(side.counter.node, self.tool, answered, requests, result, plan))
            if life is not None:
                left = clone.ready_at + life - clock.now()
                if left > 0:
                    clock.sleep(left)
            lived = clock.now() - clone.ready_at
            count = clone.counts(requests)
        return count, lived


def _processes(low: CountedRun, high: CountedRun) -> str:
    """``2 processes`` (``1 process``) or, where the runs differ, ``1 and 2 processes``."""
    if low.processes == high.processes:
        return f"{low.processes} process{'' if low.processes == 1 else 'es'}"
    return f"{low.processes} and {high.processes} processes"


def _short_answer(node: str, tool: str, answered: int, requests: int, result: RoundResult, plan: CountingPlan) -> str:
    """Why a counted run that answered fewer requests than it sent cannot count: its time limit
    (naming the option that raises it), or the errors the driver saw."""
    program = counting_tool(tool).program
    problems = {**result.errors, **{f"HTTP {c}": n for c, n in result.status_codes.items() if not c.startswith("2")}}
    if not problems and result.duration_s >= LIMIT_REACHED * plan.time_limit_s:
        return (
            f"{node}: the counted run hit the counting time limit of {plan.time_limit_s:g}s: {answered} of "
            f"{requests} requests answered under {program}, which runs a server many times slower; raise the "
            f"limit with --netperf-counting-time-limit (ini netperf_counting_time_limit) or count fewer requests "
            "with --netperf-counting-requests"
        )
    listed = ", ".join(f"{kind}: {count}" for kind, count in sorted(problems.items())) or "no error reported"
    return (
        f"{node}: {answered} of {requests} requests answered under {program} ({listed}); a count over fewer "
        "requests than sent would be too small"
    )


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
