"""Whether measured rounds may be judged at all, budget by budget: no verdict without data.

A saturated load driver spoils some figures of its round and not others
(:data:`SPOILED_FAMILIES`): a driver behind its timetable (schedule lag, a thread waiting
for a CPU) adds its own wait to every latency (coordinated omission), but the requests it
sent were still served, counted and paid for, so throughput at a fixed rate, errors, CPU per
request and the counted costs stand. A driver whose own CPU was the limit measured itself
in rates and latencies; one that could not send the scheduled requests owns the shortfall
in the sent rate and the client-side errors.

A round kept with such a :class:`Disturbance` is left out of the budgets it spoils. When the
driver waited for CPUs something else held (the runner was busy), those budgets are judged on
the remaining rounds, and undecided on this runner when none remain. When the driver's own
CPU was the limit, or it could not even send what was scheduled (a busy runner delays sends,
an impossible rate drops them), they are INVALID: the load asks more than the driver can give.

A latency budget is INVALID (never a PASS or a FAIL) when a round has too few latency
samples (2xx responses) for its metric: a percentile ``q`` needs at least
``ceil(100 / (100 - q))`` latency samples (p50: 2, p90: 10, p99: 100, p99.9: 1000), so that
at least one sample lies at or above it; the mean and the maximum need one. An empty
histogram is never a latency of 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Optional

from pytest_netperf.budget import metrics
from pytest_netperf.budget.families import Family
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.results.model import ClientHealth, RoundResult
from pytest_netperf.results.runner import RunnerState, outside_cores_beside
from pytest_netperf.verdict import stats
from pytest_netperf.verdict.status import Status

#: Fewest kept rounds a budget is judged on once spoiled rounds are left out.
MIN_KEPT_ROUNDS = 2


class Shortfall(str, Enum):
    """What a saturated load driver fell short in (the driver's ``saturation_kinds``)."""

    #: A load thread's own CPU was the limit.
    CLIENT_CPU = "client_cpu"
    #: The load loop ran behind its timetable, or never idled waiting for a CPU.
    SCHEDULE = "schedule"
    #: Scheduled requests never left the client (or datagrams were never sent).
    SEND_RATE = "send_rate"


_RATES = frozenset({Family.RATE, Family.BITRATE, Family.PACKET_RATE, Family.CORES})

#: The kinds of quantity each shortfall spoils. CPU per request, memory and the counted
#: costs are never spoiled: whatever the driver managed to send was served and paid for.
SPOILED_FAMILIES: dict[Shortfall, frozenset[Family]] = {
    Shortfall.CLIENT_CPU: _RATES | {Family.LATENCY},
    Shortfall.SCHEDULE: frozenset({Family.LATENCY}),
    Shortfall.SEND_RATE: _RATES | {Family.COUNT, Family.FRACTION},
}


@dataclass(frozen=True)
class Disturbance:
    """Why a kept round's load driver was saturated, and which figures that spoils."""

    kinds: frozenset[Shortfall]
    #: The driver's reasons, in words.
    reason: str
    #: The driver only ran behind its timetable, waiting for CPUs that something else held
    #: (a busy runner); False when its own CPU was the limit or it could not even send what
    #: was scheduled (the load asks more than the driver can give).
    by_runner: bool

    def spoils(self, metric: str) -> bool:
        """Whether ``metric``'s value of this round includes the driver's shortfall."""
        family = metrics.get(metric).family
        return any(family in SPOILED_FAMILIES[kind] for kind in self.kinds)

    def describe(self) -> str:
        """``the load driver was saturated (waiting for CPUs others held): ...``."""
        if self.by_runner:
            whose = "waiting for CPUs others held"
        elif Shortfall.CLIENT_CPU in self.kinds:
            whose = "its own CPU was the limit"
        else:
            whose = "it could not send what was scheduled"
        return f"the load driver was saturated ({whose}): {self.reason}"


def shortfalls(client: ClientHealth) -> frozenset[Shortfall]:
    """The kinds of ``client``'s saturation; every kind when the driver did not say (a
    driver that names no kind may have spoiled anything)."""
    known = {kind.value: kind for kind in Shortfall}
    kinds = frozenset(known[k] for k in client.saturation_kinds if k in known)
    return kinds if kinds else frozenset(Shortfall)


def disturbance(result: RoundResult) -> Optional[Disturbance]:
    """The :class:`Disturbance` of ``result``'s saturated driver, or None when it was healthy."""
    client = result.client
    if not client.saturated:
        return None
    kinds = shortfalls(client)
    return Disturbance(
        kinds=kinds,
        reason="; ".join(client.saturation_reasons) or "no reason given",
        by_runner=kinds == {Shortfall.SCHEDULE} and not client.cpu_bound,
    )


def samples_needed(metric: str) -> int:
    """Latency samples a round needs before ``metric`` means anything (0 for non-latency)."""
    known = metrics.get(metric)
    if not known.from_histogram:
        return 0
    q = known.percentile  # None for the mean and the maximum: one sample will do
    return 1 if q is None else math.ceil(100.0 / (100.0 - q) - 1e-9)


def samples_problem(rounds: Iterable[RoundResult], metric: str) -> Optional[str]:
    """Why ``metric`` cannot be judged on ``rounds`` (too few latency samples), or None."""
    needed = samples_needed(metric)
    for index, result in enumerate(rounds, start=1):
        if result.latency.count < needed:
            return (
                f"round {index} has {result.latency.count} latency sample(s), fewer than the {needed} "
                f"that {metric} needs ({result.requests} requests completed, {result.ok} answered 2xx, "
                f"{result.error_count} errors, {result.censored} still unanswered at the end): "
                "no verdict without data"
            )
    return None


def left_out_note(metric: str, spoiled: dict[int, Disturbance], rounds: int) -> str:
    """``2 of 8 rounds left out of p90: the load driver was saturated (...): ...`` (the last one's reason)."""
    last = spoiled[max(spoiled)]
    return f"{len(spoiled)} of {rounds} round(s) left out of {metric}: {last.describe()}"


def undecided_on_this_runner(
    budget: Budget, why: str, confidence: float, busy: bool = True, measured: Optional[stats.Verdict] = None
) -> stats.Verdict:
    """The INCONCLUSIVE verdict of a budget the busy runner left fewer than
    :data:`MIN_KEPT_ROUNDS` rounds to judge on, or whose miss the runner explains (``why``
    says how; ``busy`` False: not its neighbours but its speed; ``measured``: the verdict on
    the rounds as measured, whose figure, interval and rounds it shows): undecided here, said
    in words, never a verdict on the change (``excused``)."""
    nan = math.nan
    lead = f"this runner was too busy to measure {budget.metric}: " if busy else ""
    return stats.Verdict(
        budget=budget,
        status=Status.INCONCLUSIVE,
        estimate=measured.estimate if measured is not None else nan,
        ci_low=measured.ci_low if measured is not None else nan,
        ci_high=measured.ci_high if measured is not None else nan,
        threshold=budget.threshold,
        n_rounds=measured.n_rounds if measured is not None else 0,
        p_value=nan,  # out of the Holm family: no test of the change was made
        method=measured.method if measured is not None else "not judged",
        confidence=confidence,
        excused=True,
        undecidable=(f"{lead}{why}; undecided on this runner, not a verdict on the change"),
    )


# ----- a busy runner and absolute wall-clock budgets ------------------------------------
#: A round's runner was busy when other processes (outside the test's drivers and stacks)
#: used at least this share of its cores (a neighbour at busy-neighbor's ``light`` level uses 0.25 of each core)...
BUSY_OUTSIDE_SHARE = 0.25
#: ... or the hypervisor stole at least this share of its CPU time.
BUSY_STEAL_SHARE = 0.05
#: The kinds of quantity whose absolute budgets (``p99 < 1ms``, ``loss <= 1%``) and budgets
#: against a stored baseline a busy runner can miss on its own: wall-clock figures.
#: Comparisons measured in this run (a reference, the base twin) share the runner's
#: neighbours in interleaved or simultaneous rounds; counts, errors and CPU per request are
#: what the stack did whoever else ran.
CONTENDED_FAMILIES = frozenset({Family.LATENCY, Family.RATE, Family.BITRATE, Family.PACKET_RATE})
CONTENDED_METRICS = frozenset({"loss"})


def contention_matters(budget: Budget, paired: bool = False, together: bool = True) -> bool:
    """Whether a busy runner alone can make ``budget`` miss: a wall-clock budget that is
    absolute, against a stored baseline (measured on a quiet runner, not beside this run:
    ``paired`` is True when the base revision's twin was measured in this run's rounds), or
    against a side of this run measured in turns (``together`` False: the neighbours of one
    side's rounds are not the other's; beside ``busy-neighbor --level heavy --net-pairs 2`` an
    unchanged echo container's P90 measured 5.8x its twin's in alternating rounds)."""
    same_run = budget.comparison == "reference" or (budget.comparison == "baseline" and paired)
    if same_run and together:
        return False
    return budget.metric in CONTENDED_METRICS or metrics.get(budget.metric).family in CONTENDED_FAMILIES


#: Rates (throughput, bit and packet rates: a round's mean over a second or more) of two sides
#: measured in turns: a pair of rounds is left out only when its sides met different
#: neighbours, other processes apart by at least this share of the cores; an even neighbour
#: (``busy-neighbor --level light``) slows both turns alike, and leaving out every busy round
#: there left Envoy's 0.3x throughput regression undecided. Latency and loss react to a
#: neighbour's bursts, not its average, and keep to the quiet rounds.
UNEVEN_OUTSIDE_SHARE = 0.125
#: The families judged on evenly contended pairs of rounds when measured in turns.
EVEN_PAIR_FAMILIES = frozenset({Family.RATE, Family.BITRATE, Family.PACKET_RATE})


def judged_on_even_pairs(budget: Budget, together: bool) -> bool:
    """Whether ``budget``, against a side measured in turns (``together`` False), is judged on
    the pairs of rounds whose sides met alike neighbours rather than on the quiet rounds
    (:data:`EVEN_PAIR_FAMILIES`)."""
    return (
        not together
        and budget.metric not in CONTENDED_METRICS
        and (metrics.get(budget.metric).family in EVEN_PAIR_FAMILIES)
    )


def unevenly_busy(one: RoundResult, other: RoundResult) -> Optional[str]:
    """Why two rounds measured in turns met different neighbours (other processes apart by
    :data:`UNEVEN_OUTSIDE_SHARE` of the cores or more, or one of them under steal), or None
    when they met alike ones or either reading is missing."""
    a, b = one.runner, other.runner
    if a is None or b is None or a.stack_cores is None or b.stack_cores is None:
        return None
    apart = abs(a.outside_cores - b.outside_cores)
    steal = max(a.steal_share, b.steal_share) >= BUSY_STEAL_SHARE
    if apart < UNEVEN_OUTSIDE_SHARE * max(a.cores, b.cores) and not steal:
        return None
    return (
        f"other processes used {a.outside_cores:.2f} and {b.outside_cores:.2f} of the {a.cores} cores in "
        f"its two turns{f', steal {max(a.steal_share, b.steal_share):.1%}' if steal else ''}"
    )


def _outside_cores(result: RoundResult, overlapping: Sequence[RoundResult]) -> Optional[tuple[RunnerState, float]]:
    """``result``'s runner state and the cores other processes used beside it, or None when
    unknown (no reading, or a plain URL's server among the other processes)."""
    state = result.runner
    if state is None or state.stack_cores is None:
        return None
    return state, outside_cores_beside(state, [r.runner for r in overlapping if r.runner is not None])


def runner_busy(result: RoundResult, overlapping: Sequence[RoundResult] = ()) -> Optional[str]:
    """Why ``result``'s runner was busy (other processes, steal), or None when it was quiet or
    its state is unknown (no reading, or a plain URL's server among the other processes).
    ``overlapping``: rounds of the same test loaded at the same time (their drivers and
    stacks are the test's own)."""
    known = _outside_cores(result, overlapping)
    if known is None:
        return None
    state, outside = known
    if outside < BUSY_OUTSIDE_SHARE * state.cores and state.steal_share < BUSY_STEAL_SHARE:
        return None
    return (
        f"other processes used {outside:.2f} of the {state.cores} cores"
        f"{f', steal {state.steal_share:.1%}' if state.steal_share else ''}"
    )


# ----- a rate the runner's contention explains -------------------------------------------
#: A rate (throughput, bit or packet rate) against a stored baseline, or an absolute one, that
#: misses is undecided on this runner when the CPU that other processes and the hypervisor
#: took during its rounds, given back, would put it within the budget; only where they took
#: at least this share of the cores on average (idle runs of the example job here: 0.03-0.05;
#: beside ``busy-neighbor --level busy``, whose bursts the stack's CPU weight holds back, 0.10-0.17
#: while its closed loops measured 0.56x-0.67x of the quiet runner's baseline). Below it the
#: runner was quiet and the budget is judged as measured.
EXPLAINING_TAKEN_SHARE = 0.10
#: A round whose runner lost more than this share of its cores is not scaled (no figure of the
#: stack's own could be had from the little that was left).
MAX_TAKEN_SHARE = 0.75


def explains_rates(budget: Budget, paired: bool) -> bool:
    """Whether a miss of ``budget`` may be explained by the runner's contention: a rate budget
    with no side of this run to compare with (absolute, or against a stored baseline)."""
    if paired:
        return False
    return metrics.get(budget.metric).family in EVEN_PAIR_FAMILIES and budget.comparison in ("absolute", "baseline")


def taken_cores(result: RoundResult, overlapping: Sequence[RoundResult] = ()) -> Optional[tuple[float, int]]:
    """The cores that other processes and steal took during ``result`` and the runner's core
    count, or None when unknown (no reading, or a plain URL's server among the other processes)."""
    known = _outside_cores(result, overlapping)
    if known is None:
        return None
    state, outside = known
    return outside + state.steal_share * state.cores, state.cores


def given_back(
    values: Sequence[float], taken: Sequence[tuple[float, int]], idle: Optional[tuple[float, int]] = None
) -> Optional[list[float]]:
    """Each round's rate as if the cores taken from it had been the test's (value x cores /
    (cores - taken)), or None when the runner was quiet or a round lost more than
    :data:`MAX_TAKEN_SHARE` of them.

    ``idle``: what other processes took while the test sent no load (runner_watch.outside_when_idle).
    Where that is at least :data:`BUSY_OUTSIDE_SHARE` of the cores, the runner is busy whatever
    its rounds read, and each round is given back the larger of what it lost and what the others
    wanted: the stack's CPU weight holds a neighbour back during the rounds, not its cache and
    memory traffic (beside ``busy-neighbor --level busy`` a closed loop read 0.612x-0.792x of its
    quiet baseline while others took 0.15-0.16 of 2 cores, and wanted 0.59 left alone). Else
    the runner was quiet when less than :data:`EXPLAINING_TAKEN_SHARE` of the cores were taken
    on average during the rounds."""
    if not values or len(values) != len(taken):
        return None
    cores = max(c for _, c in taken)
    if busy_when_idle(idle):
        assert idle is not None
        # what others wanted, up to the most a round may lose and still be scaled: a runner
        # busier than that is explained at least as well as one that busy
        wanted = min(idle[0], MAX_TAKEN_SHARE * idle[1])
        taken = [(max(t, wanted), c) for t, c in taken]
    elif sum(t for t, _ in taken) / len(taken) < EXPLAINING_TAKEN_SHARE * cores:
        return None
    return scaled_up(values, taken)


def busy_when_idle(idle: Optional[tuple[float, int]]) -> bool:
    """Whether other processes and steal took at least :data:`BUSY_OUTSIDE_SHARE` of the cores
    while the test sent no load (``idle``: cores taken, cores; None: not watched)."""
    return idle is not None and idle[0] >= BUSY_OUTSIDE_SHARE * idle[1]


def scaled_up(values: Sequence[float], taken: Sequence[tuple[float, int]]) -> Optional[list[float]]:
    """Each round's rate x cores / (cores - taken): what it would have measured had the cores
    taken from it been the test's, at most (a round loses less than that to a neighbour: the
    stack never uses every core). None when a round lost more than :data:`MAX_TAKEN_SHARE` of
    them or the lengths differ."""
    if len(values) != len(taken) or any(t > MAX_TAKEN_SHARE * c for t, c in taken):
        return None
    return [v * c / (c - t) for v, (t, c) in zip(values, taken, strict=True)]


def taken_text(taken: Sequence[tuple[float, int]]) -> str:
    """``other processes and steal took 0.32 of the 2 cores on average (at most 0.49)``."""
    amounts = [t for t, _ in taken]
    cores = max(c for _, c in taken)
    return (
        f"other processes and steal took {sum(amounts) / len(amounts):.2f} of the {cores} cores on average "
        f"(at most {max(amounts):.2f})"
    )
