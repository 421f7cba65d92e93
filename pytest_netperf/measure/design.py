"""How the sides of a comparison share the runner's time: the measurement designs.

``alternate``: one side at a time, in ABBA order (R C, C R, R C …); each pair's rounds are
a few seconds apart, so what the runner does to time between them (a neighbour's burst,
CPU frequency, steal) lands on one side of the pair only.

``simultaneous``: every side of a round is loaded at the same moment, each by its own driver
process at the same load shape, with the same CPU placement; what the runner does to time
hits both sides within the same second and cancels in their ratio. It needs sides that are
distinct systems when the system under test's costs are judged (two sides on one set of
containers would each be charged for both loads) and drivers that can run side by side;
otherwise the gate measures in alternating rounds and says why.

``turns``: two closed loops share each round in fine turns: both sides' Rust drivers run at
once, each sending only in its own slots of :data:`~pytest_netperf.defaults.TURN_S` (10 ms,
ABBA, aligned on the host's monotonic clock), so a neighbour's burst longer than a few slots
lands on both sides alike, and neither side's closed loop competes with the other's for the
cores. Rates are per second of a side's own slots. A closed loop whose queue at the server
(its median latency) is longer than 30% of a slot would run on into the other side's slot;
the gate then measures in alternating rounds and says why.

``auto`` measures simultaneously one target at two revisions at a fixed rate (head and its
base twin under ``--netperf-base``, each on containers of its own), two closed loops of the
Rust driver over HTTP/1.1 or raw TCP in fine turns (alternating rounds from the first whose
queue outlasts a turn), and alternates otherwise: different systems loaded at once (two paths
through one stack, a host path against a container path) would each carry or feel the other's
load, which changes what each measures.
Rates of false FAILs and detections of both designs on the same work:
``benchmarks/gate_power.py --design``. :func:`choose_design` is the one place a design is
chosen; the queue check that ends fine turns runs with the rounds (``measure/rounds.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Optional, Protocol, TypeVar, cast

from pytest_netperf import defaults

ALTERNATE = "alternate"
SIMULTANEOUS = "simultaneous"
TURNS = "turns"
#: Simultaneous for one system at two revisions (a target and its base twin, each on
#: containers of its own) at a fixed rate; fine turns for two closed loops that can take
#: them (:func:`turn_problem`), which go on in alternating rounds from the first round whose
#: queue outlasts a turn; alternate otherwise. Different systems loaded at once (two paths
#: through one stack, the host path against a container path, a reference beside a base
#: twin) would each measure the other's load too; two closed loops loaded at once would split
#: the shared cores as the scheduler pleases (a CPU-hungry head starves its twin: Envoy with
#: one request per upstream connection gave 0.24x [0.09x, 0.61x] loaded together, 0.13x FAIL
#: alternating), while in turns each side has the cores in its own slots; plain URLs and the
#: Locust driver cannot be measured side by side. Whole rounds in turns spread 11-18% a pair
#: beside a busy neighbour where fine turns spread 2-5% (docs/budgets.md).
AUTO = "auto"
#: Every design name, the default first.
DESIGNS: tuple[str, ...] = (defaults.DESIGN,) + tuple(
    d for d in (AUTO, ALTERNATE, SIMULTANEOUS, TURNS) if d != defaults.DESIGN
)
#: Designs whose sides meet the runner's neighbours within the same second (their ratio
#: cancels what the neighbours do), unlike whole rounds taken in turns.
SHARE_THE_RUNNER = frozenset({SIMULTANEOUS, TURNS})
#: What the report says about rounds measured in each design.
DESCRIPTIONS = {
    ALTERNATE: "alternating (one side at a time, ABBA order)",
    SIMULTANEOUS: "simultaneous (loaded at once, one driver process each)",
    TURNS: f"in fine turns (both drivers at once, each sending in its own {defaults.TURN_S * 1000:g} ms slots, ABBA)",
}
#: The driver that can take fine turns (``--turn``).
TURN_DRIVERS = frozenset({"rust"})
#: Drivers whose runs are independent processes, so two may measure at the same moment
#: (a Locust session shares one master and its workers between runs).
SIDE_BY_SIDE_DRIVERS = frozenset({"rust", "iperf3"})

T = TypeVar("T")


class SideLike(Protocol):
    """What the choice of design reads of each measured side."""

    label: str
    url: str
    driver: str

    @property
    def costs(self) -> object: ...


def design_problem(sides: Sequence[SideLike], reads_costs: bool) -> Optional[str]:
    """Why these sides cannot be measured simultaneously (so they alternate), or None."""
    if len(sides) < 2:
        return None
    serial = sorted({s.driver for s in sides if s.driver not in SIDE_BY_SIDE_DRIVERS})
    if serial:
        return f"the {', '.join(serial)} driver measures one load at a time"
    if reads_costs:
        for i, first in enumerate(sides):
            for second in sides[i + 1 :]:
                if first.costs is not None and first.costs is second.costs:
                    return (
                        f"{first.label} and {second.label} run on the same containers, whose costs would "
                        "include both loads"
                    )
    return None


class ShapeLike(Protocol):
    """What the choice of fine turns reads of the load."""

    @property
    def rate(self) -> Optional[float]: ...

    @property
    def http2(self) -> bool: ...


def turn_problem(sides: Sequence[SideLike], shape: ShapeLike) -> Optional[str]:
    """Why these sides cannot share each round in fine turns, or None."""
    if len(sides) != 2:
        return f"fine turns share a round between two sides, not {len(sides)}"
    others = sorted({s.driver for s in sides if s.driver not in TURN_DRIVERS})
    if others:
        return f"the {', '.join(others)} driver does not take fine turns"
    if shape.rate:
        return "a fixed-rate load keeps its timetable"
    if shape.http2:
        return "HTTP/2 and gRPC loads do not take fine turns"
    return None


def fine_turns(setting: str, sides: Sequence[SideLike], reads_costs: bool, shape: ShapeLike) -> tuple[bool, str]:
    """Whether the sides share each round in fine turns under the design ``setting``
    (``turns`` asks for them; ``auto`` takes them where they are possible), and (asked for by
    name but impossible) why they are measured in alternating rounds instead ("" else)."""
    if setting not in (TURNS, AUTO):
        return False, ""
    problem = turn_problem(sides, shape) or design_problem(sides, reads_costs)
    if problem is None:
        return True, ""
    if setting == AUTO:
        return False, ""
    return False, f"measured in alternating rounds, not in fine turns: {problem}"


def queue_outlasts_turn(latencies_s: Mapping[str, float], turn_s: float) -> Optional[str]:
    """Why fine turns of ``turn_s`` did not keep the sides apart, given each side's median
    latency (s) in a round (its closed loop's queue, which drains into the other side's slot
    after its own ends), or None when every side's is within
    :data:`~pytest_netperf.defaults.TURN_LATENCY_SHARE` of a slot."""
    bound = turn_s * defaults.TURN_LATENCY_SHARE
    long = {label: latency for label, latency in latencies_s.items() if latency > bound}
    if not long:
        return None
    each = ", ".join(f"{label} {latency * 1e3:.3g} ms" for label, latency in long.items())
    return (
        f"the closed loops' requests queue longer than fine turns of {turn_s * 1e3:g} ms allow (median "
        f"latency {each}, above {bound * 1e3:.3g} ms): each side's queue would run on into the other's turn"
    )


def own_systems(sides: Sequence[SideLike]) -> bool:
    """Whether every side is known to run on containers of its own (its own cost probe)."""
    probes = [s.costs for s in sides]
    return all(p is not None for p in probes) and len({id(p) for p in probes}) == len(probes)


S = TypeVar("S", bound=SideLike)


def round_groups(
    setting: str, sides: Sequence[S], reads_costs: bool, auto_together: bool = False
) -> tuple[list[list[S]], str]:
    """The sides loaded together in each round under the design ``setting`` (a :data:`DESIGNS`
    name): one group of all of them when they are simultaneous, one group per side when they
    alternate; never some together and others apart, which would measure the sides of one
    comparison under different conditions (a candidate loaded beside its base twin gets half
    the runner, a reference alone all of it). Also why they alternate although
    ``simultaneous`` was asked for ("" otherwise). ``auto_together``: the sides are what
    ``auto`` loads together (see :data:`AUTO`): one target at two revisions at a fixed rate."""
    if setting not in DESIGNS:
        raise ValueError(f"unknown design {setting!r}; expected one of {', '.join(DESIGNS)}")
    apart = [[side] for side in sides]
    if setting in (ALTERNATE, TURNS) or len(sides) < 2:
        return apart, ""
    problem = design_problem(sides, reads_costs)
    if problem is None and (setting == SIMULTANEOUS or (auto_together and own_systems(sides))):
        return [list(sides)], ""
    note = f"measured in alternating rounds, not simultaneously: {problem}" if setting == SIMULTANEOUS else ""
    return apart, note


@dataclass(frozen=True)
class DesignChoice(Generic[S]):
    """How a measurement's sides share the runner: the groups loaded together in each round,
    the fine turns' slot (s) when the one group takes turns (None else), and why the design
    asked for by name could not be used ("" when it could)."""

    groups: list[list[S]]
    turn_s: Optional[float]
    note: str


def choose_design(
    setting: str, sides: Sequence[S], reads_costs: bool, shape: ShapeLike, base_twin: bool
) -> DesignChoice[S]:
    """The one place a design is chosen: ``setting`` (a :data:`DESIGNS` name) as far as the
    sides and the load allow. ``base_twin``: the sides are one target and its base twin (no
    reference), which ``auto`` loads together at a fixed rate (:data:`AUTO`)."""
    turns, why_not = fine_turns(setting, sides, reads_costs, shape)
    if turns:
        return DesignChoice([list(sides)], defaults.TURN_S, "")
    together = base_twin and shape.rate is not None
    groups, note = round_groups(setting, sides, reads_costs, together)
    return DesignChoice(groups, None, why_not or note)


def run_side_by_side(tasks: Sequence[Callable[[], T]]) -> list[T]:
    """Run every task at the same moment, one thread each, and return their results in order.

    Every task starts once all threads are ready; every thread is waited for even when one
    fails, then the first failure (in task order) is raised."""
    if len(tasks) == 1:
        return [tasks[0]()]
    start = threading.Barrier(len(tasks))
    results: list[Optional[T]] = [None] * len(tasks)
    failures: list[Optional[BaseException]] = [None] * len(tasks)

    def work(index: int) -> None:
        try:
            start.wait()
            results[index] = tasks[index]()
        except BaseException as exc:  # re-raised in the caller's thread below
            failures[index] = exc

    threads = [threading.Thread(target=work, args=(i,), name=f"netperf-side-{i}") for i in range(len(tasks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for failure in failures:
        if failure is not None:
            raise failure
    return cast("list[T]", results)  # every task returned: no failure was recorded
