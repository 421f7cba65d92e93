"""The gate's own figures on real containers, per measurement design: false FAILs on A/A,
detection of injected 5% regressions, and seconds of measurement to a verdict, per metric.

Two single-node echo topologies (``ref`` and ``cand``, each its own container limited to
--fixed-cores in the fixed-rate gates and --cores in the closed-loop ones, each with its own
cost probe, as a pull request's base and head stacks are) are stood up once; every gate is
the real :class:`~pytest_netperf.measure.gate.Gate` with the Rust driver, the sequential
procedure (rounds of --duration seconds, --min-rounds first, up to --max-rounds) and each
--design (alternate: ABBA rounds, one side at a time; simultaneous: both sides loaded at
once; turns: both closed loops at once, each in its own 10 ms slots). Scenarios, each run --gates times per design:

===========  ==============================================================  ====================================
scenario     candidate vs reference                                          gate budget
===========  ==============================================================  ====================================
cpu A/A      cand vs ref at a fixed --rate, both ?burn=F (--fixed-burn)      cpu_per_request[echo] <= 1.025x
cpu +5%      cand?burn=F+X vs ref?burn=F; X is 5% of ref's CPU per request   cpu_per_request[echo] <= 1.025x
             (--calibrate-burn: X scaled until it adds 5% as measured)
p90 A/A      cand vs ref at a fixed --rate                                   p90 <= 1.025x reference
p90 +5%      cand?burn=X vs ref; X is 5% of ref's measured P90 (CPU spin)    p90 <= 1.025x reference
             (--calibrate-burn: X scaled until it adds 5% as measured)
rps A/A      cand?burn=B vs ref?burn=B, closed loop, --closed-connections    rps >= 0.975x reference
rps -5%      cand?burn=B+X vs ref?burn=B; X cuts cand's requests/s by 5%     rps >= 0.975x reference
             (--calibrate-burn: X scaled until it does as measured)
===========  ==============================================================  ====================================

The rps rows (--rps-placement pinned, the default) put both echo containers on
--sut-cores with no CPU quota and the drivers on --driver-cores; each server spends
--rps-burn B per request, so one driver outruns one server. ``quota`` keeps the former
layout: --cores of CPU quota per container, cand's quota cut by 5% for the injected row;
``float`` is the plugin's own layout below 4 cores (no quota, any core, drivers unpinned). A
CFS quota made two containers loaded at once differ by a fixed 1.5-4% for as long as they
ran, and spread each pair's ratio 5-11%; on a shared core without a quota, 2-3% and no bias.

With --neighbour (a comma list: ``idle``, ``light``, ``busy``, ``heavy``, ``LEVEL:N`` for N
loopback TCP pairs; see benchmarks/_neighbour.py) every row runs once per scenario, with
``shared/noise/busy-neighbor --level LEVEL`` running throughout that row's gates (started
before its first gate, stopped after its last, again if its --neighbour-seconds ran out); the
calibrations run with no neighbour, so every scenario judges the same injected change. The
default is ``idle,busy,heavy:2``.

The defaults are the gate's own table (docs/budgets.md, issue #38): 40 gates per row, each
design ``auto`` (the plugin's choice for a base twin: simultaneous rounds at a fixed rate,
fine turns in a closed loop; alternating whole rounds before 2026-12-01), the injections
calibrated (--calibrate-burn), 1 us of burn on both sides of the fixed-rate rows and the
pinned layout (both echo containers on --sut-cores, the drivers on --driver-cores). Before
2026-11-29 the defaults were 20 gates, both designs, no calibration, no fixed burn, the quota
layout and ``idle`` alone.

A gate's verdict is its own budget's, after the default final-INCONCLUSIVE policy. Each
budget lies halfway between no change and the injected regression. On the same rounds the
script also judges the other metrics once (``cpu_per_request[*] <= 1.05x``, ``p90 <= 1.05x``,
``rps >= 0.95x``, all vs the reference) to show what they say about the same work. The
calibration (ref's CPU per request and P90, under the row's load) is measured just before each injected row;
each injection is then scaled in simultaneous pairs, or in fine turns when every --design
judges the row in turns (a burn moves two servers sharing a core further when they are
loaded together than in turns).
A gate is red when it FAILs (an INCONCLUSIVE included when the policy turns it red) or is
INVALID (a saturated driver, a vanished target): a merge is blocked either way, so the
table's red rate counts both and gives each count beside it.

Usage: python benchmarks/gate_power.py [--gates 40] [--only cpu,p90,rps] [--design auto,alternate,simultaneous]
       [--rate 2000] [--arrival poisson|constant] [--no-calibrate-burn] [--calibration-pairs 32]
       [--fixed-burn 1] [--fixed-placement pinned|quota|float|twins] [--rps-placement pinned|quota|float]
       [--rps-burn 30] [--driver-cores 0] [--sut-cores 1]
       [--cores 0.25] [--fixed-cores 1] [--skip-aa] [--skip-cut] [--swap-sides] [--cand-first]
       [--fresh-pair (with --skip-cut)] [--duration 0.5] [--min-rounds 6]
       [--max-rounds alternate:32,simultaneous:64] [--rounds-out rounds.jsonl]
       [--neighbour idle,busy,heavy:2] [--neighbour-seconds 7200] [--neighbour-seed 1]
       python benchmarks/gate_power.py --summarize rounds.jsonl [more.jsonl ...]
Needs Docker and the local images (`netperf images build`). Everything started is removed.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from _neighbour import (
    IDLE,
    MATRIX,
    Neighbour,
    NeighbourMissing,
    NeighbourReport,
    add_neighbour_options,
    find_program,
    parse_scenarios,
)
from scipy.stats import beta

from pytest_netperf import defaults
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.cpusets import cpuset_text
from pytest_netperf.drivers import make_driver
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import InvalidMeasurement
from pytest_netperf.images.resolve import resolve_image
from pytest_netperf.measure.design import AUTO, DESIGNS, SIMULTANEOUS, TURNS
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.model import Measurement
from pytest_netperf.measure.targets import with_query
from pytest_netperf.report.failure import inconclusive_fails
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.commands import LocalRunner
from pytest_netperf.runtime.cpu_priority import CpuPriority, PriorityUnavailable, raise_priority
from pytest_netperf.runtime.docker import DockerRuntime
from pytest_netperf.runtime.resources import usable_cores
from pytest_netperf.runtime.running import RunningTopology
from pytest_netperf.topology.model import Node, Target, Topology
from pytest_netperf.verdict import stats
from pytest_netperf.verdict.status import Status

#: Each gate budget lies halfway to the regression injected for it, so A/A should pass it
#: and the regressions fail it.
BUDGETS = {
    "cpu": "cpu_per_request[echo] <= 1.025x reference",
    "p90": "p90 <= 1.025x reference",
    "rps": "rps >= 0.975x reference",
}
#: The injected regression of each metric.
INJECTED = 0.05
#: Judged once on the rounds of every gate, beside the gate's own budget.
SIDE_BUDGETS = {
    "cpu": "cpu_per_request[*] <= 1.05x reference",
    "p90": "p90 <= 1.05x reference",
    "rps": "rps >= 0.95x reference",
}
#: CFS period of the containers' CPU quota: Docker's default. With short periods two
#: containers throttled at once did not share alike: at 10 ms and 20 ms the second container
#: of the pair ran 3-4% fewer requests/s than the first in either role (closed loop, a quarter
#: core each, loaded together), so unchanged rps gates went red; at 100 ms, 0.98x-1.02x.
CPU_PERIOD_US = 100_000
#: Layouts of the rps rows (--rps-placement): both servers on --sut-cores without a quota
#: (drivers on --driver-cores), or a CFS quota of --cores each. Loaded at once under a quota,
#: two containers of one image differed by a fixed 1.5-4% for their lifetime (the bias
#: followed the container when the roles swapped) and each pair's ratio spread 5-11%;
#: sharing one core without a quota, 1.00x +- 0.4% and 2-3% per pair.
PINNED, QUOTA, FLOAT, TWINS = "pinned", "quota", "float", "twins"


def resolve_design(design: str, group: str) -> str:
    """The design a gate of ``group`` runs: ``auto`` is the plugin's choice for a target and its
    base twin (each on containers of its own), simultaneous at a fixed rate (cpu, p90) and in
    fine turns in a closed loop (rps), where a loaded-together pair would split the cores
    between them (pytest_netperf/measure/design.py)."""
    if design != AUTO:
        return design
    return TURNS if group == "rps" else SIMULTANEOUS


@dataclass
class GateRun:
    design: str
    scenario: str
    status: Status
    rounds: int
    seconds: float
    estimate: float
    side: dict[str, Status]
    #: The gate metric's value per round of each side, in round order (--rounds-out).
    values: dict[str, list[float]] = field(default_factory=dict)
    #: The busy-neighbor scenario running beside the gate (--neighbour).
    neighbour: str = IDLE
    #: Whether the gate went on in the other design (its drivers saturated loaded together).
    switched: bool = False
    #: The budget's verdict before the final-INCONCLUSIVE policy, and its notes (why undecided).
    verdict: str = ""
    notes: list[str] = field(default_factory=list)
    #: Cores other processes used during each round of each side (None where unread), in
    #: the order of ``values``: what a busy runner's turns met.
    outside: dict[str, list[Optional[float]]] = field(default_factory=dict)
    #: The other metrics' estimates on the same rounds (candidate over reference), by name.
    side_estimate: dict[str, float] = field(default_factory=dict)
    #: The hypervisor's steal (share of the machine's CPU time) during each round, likewise.
    steal: dict[str, list[Optional[float]]] = field(default_factory=dict)


def topology(name: str) -> Topology:
    """One echo container: each side is its own system, as a pull request's base and head stacks are."""
    return Topology(f"power-{name}", (Node("echo", "echo", 8080),), (Target("direct", "echo", 8080),))


def settings(args: argparse.Namespace, design: str) -> GateSettings:
    return GateSettings(
        rounds_min=args.min_rounds,
        rounds_max=args.max_rounds.get(design, args.max_rounds["*"]),
        round_duration_s=args.duration,
        warmup_s=args.warmup,
        round_warmup_s=args.round_warmup,
        design=design,
    )


def run_gate(args: argparse.Namespace, design: str, row: Row) -> GateRun:
    budgets = [parse_budget(row.budget)]
    gate = Gate(f"gate_power::{row.scenario}", budgets, settings(args, design), drivers(args, row.group))
    started = time.monotonic()
    try:
        measurement = gate.compare(row.candidate, row.reference, **row.shape)
    except InvalidMeasurement as exc:  # a saturated driver, a vanished target: no verdict
        print(f"{design} {row.scenario}: INVALID: {exc}", flush=True)
        return GateRun(design, row.scenario, Status.INVALID, 0, time.monotonic() - started, float("nan"), {})
    seconds = time.monotonic() - started
    (outcome,) = gate.finish()
    status = outcome.status
    if status is Status.INCONCLUSIVE:  # the default final-INCONCLUSIVE policy decides red or green
        status = Status.FAIL if inconclusive_fails(outcome, defaults.INCONCLUSIVE) else Status.PASS
    estimate = outcome.verdict.estimate if outcome.verdict is not None else float("nan")
    rounds = len(measurement.candidate.rounds)
    switched = design != AUTO and measurement.design != design  # e.g. drivers saturated loaded together
    if switched:  # the plugin goes on in the other design and its verdict counts, as a user's would
        print(f"{design} {row.scenario}: went on as {measurement.design}: {measurement.design_note}", flush=True)
    metric = budgets[0].metric
    assert measurement.reference is not None
    values = {"candidate": measurement.candidate.values(metric), "reference": measurement.reference.values(metric)}
    outside = {
        "candidate": [r.runner.outside_cores if r.runner else None for r in measurement.candidate.rounds],
        "reference": [r.runner.outside_cores if r.runner else None for r in measurement.reference.rounds],
    }
    steal = {
        "candidate": [r.runner.steal_share if r.runner else None for r in measurement.candidate.rounds],
        "reference": [r.runner.steal_share if r.runner else None for r in measurement.reference.rounds],
    }
    side = side_verdicts(measurement)
    run = GateRun(
        design, row.scenario, status, rounds, seconds, estimate, {k: v.status for k, v in side.items()}, values
    )
    run.side_estimate = {k: v.estimate for k, v in side.items()}
    run.switched = switched
    run.verdict, run.notes, run.outside = outcome.status.value, list(outcome.notes), outside
    run.steal = steal
    return run


def drivers(args: argparse.Namespace, group: str) -> Callable[[Optional[str], object], object]:
    """The gates' driver factory: the Rust driver, on --driver-cores for the pinned rps rows."""
    pinned = is_pinned(args, group)

    def factory(name: Optional[str], runner: object) -> object:
        if pinned and runner is None:
            runner = LocalRunner(cpus=args.driver_cores)
        return make_driver("rust", runner)

    return factory


def side_verdicts(m: Measurement) -> dict[str, stats.Verdict]:
    """What the other metrics say about the same rounds (one look, no sequential stopping)."""
    out = {}
    assert m.reference is not None
    for name, text in SIDE_BUDGETS.items():
        budget = parse_budget(text)
        try:
            verdict = stats.evaluate(budget, m.candidate.values(budget.metric), m.reference.values(budget.metric))
        except (KeyError, ValueError):
            continue
        out[name] = verdict
    return out


def calibrate(args: argparse.Namespace, ref: object, group: str) -> tuple[float, float]:
    """The reference's CPU per request (ns) and P90 (us) under ``group``'s load, from a short A/A gate."""
    gate = Gate(
        "gate_power::calibrate", [parse_budget(BUDGETS["cpu"])], settings(args, "alternate"), drivers(args, group)
    )
    m = gate.compare(ref, ref, rounds=6, **shape_of(args, group))
    assert m.reference is not None
    cpu_ns = statistics.median(m.reference.values("cpu_per_request[echo]"))
    p90_us = statistics.median(m.reference.values("p90")) / 1e3
    return cpu_ns, p90_us


def calibration_design(args: argparse.Namespace, group: str) -> str:
    """The design ``group``'s injections are calibrated in: fine turns when every design asked
    for judges the group in turns, else simultaneous pairs. Both pair the sides closely in
    time; a burn calibrated with both servers loaded together on one core moved throughput
    more than it does in turns (+2.30 us: 5% together, 3.6% as gates in turns read it)."""
    judged = {resolve_design(design, group) for design in args.designs}
    return TURNS if judged == {TURNS} else SIMULTANEOUS


def effect_of_burn(args: argparse.Namespace, ref: object, cand: object, burn_us: float, group: str) -> float:
    """How much ``burn_us`` more per request moves ``group``'s metric (cpu, p90 up; rps down),
    in --calibration-pairs pairs of :func:`calibration_design`, as the gate estimates it (the
    median of the pairs' ratios read a P90 spin ~2 points lower than the gates did: 2.62 us
    calibrated to +5%, gates 1.049x-1.123x)."""
    budget = parse_budget(BUDGETS[group])
    design = calibration_design(args, group)
    gate = Gate("gate_power::burn", [budget], settings(args, design), drivers(args, group))
    burnt = with_base_burn(args, cand, group, burn_us)
    m = gate.compare(burnt, with_base_burn(args, ref, group), rounds=args.calibration_pairs, **shape_of(args, group))
    assert m.reference is not None
    estimate = stats.evaluate(budget, m.candidate.values(budget.metric), m.reference.values(budget.metric)).estimate
    return 1.0 - estimate if group == "rps" else estimate - 1.0


def calibrated_burn(args: argparse.Namespace, ref: object, cand: object, burn_us: float, group: str) -> float:
    """The burn (us) that moves ``group``'s metric by :data:`INJECTED` as measured, not as
    asked, from the first guess ``burn_us``: a spin moves P90 by its own length plus what
    queues behind it, and asking for a burn at all costs CPU (reading the query, the clock):
    on a core per container 0.55 us added 6.6% of 24.8 us, 1.24 us 10.4%. Three tries: the
    first guess scaled, then where the least-squares line through every try so far (with its
    intercept) crosses 5%. One try's effect is off by about a point (32 pairs); a secant
    through the last two alone amplified that (1.75 us measured +5.8%, 1.44 us +3.3%). Where
    the tries' noise hides the slope (a line that falls), the line through the origin decides:
    on an Intel Xeon VM 4.72, 2.91 and 5.81 us of P90 spin read +8.1%, +10.7% and +10.0%, and
    doubling the burn instead gave 12.6 us, which the gates read as +25%."""
    tried: list[tuple[float, float]] = []
    in_design = calibration_design(args, group)
    for _ in range(3):
        effect = effect_of_burn(args, ref, cand, burn_us, group)
        print(f"calibration: burn +{burn_us:.3f}us moves {group} by {effect:+.1%} ({in_design})", flush=True)
        tried.append((burn_us, effect))
        burn_us = next_burn(tried, burn_us)
    return burn_us


def next_burn(tried: list[tuple[float, float]], last_us: float) -> float:
    """The next burn to try (us) from the (burn, effect) pairs tried so far: where the
    least-squares line with an intercept crosses :data:`INJECTED`, or, where that line does not
    rise, where the line through the origin does; twice ``last_us`` when nothing moved."""
    burns, effects = [b for b, _ in tried], [e for _, e in tried]
    guess = 0.0
    if len(set(burns)) >= 2:
        slope, intercept = statistics.linear_regression(burns, effects)
        if slope > 0:
            guess = (INJECTED - intercept) / slope
    if guess <= 0:
        through_origin = sum(b * e for b, e in tried) / sum(b * b for b in burns)
        guess = INJECTED / through_origin if through_origin > 0 else last_us * 2
    return guess if guess > 0 else min(burns) / 2


def fixed_shape(args: argparse.Namespace) -> dict:
    """The load of the cpu and p90 gates: a fixed rate over --connections, --arrival gaps."""
    return {"rate": args.rate, "connections": args.connections, "arrival": args.arrival}


def shape_of(args: argparse.Namespace, group: str) -> dict:
    """The load of ``group``'s gates: closed loop for rps, the fixed rate for the others."""
    return {"connections": args.closed_connections} if group == "rps" else fixed_shape(args)


def base_burn_us(args: argparse.Namespace, group: str) -> float:
    """What every server of ``group``'s rows spends per request before any injection (us)."""
    if group == "rps":
        return args.rps_burn if args.rps_placement in (PINNED, FLOAT) else 0.0
    return args.fixed_burn


def with_base_burn(args: argparse.Namespace, target: object, group: str, extra_us: float = 0.0) -> object:
    """``target`` spending :func:`base_burn_us` (plus ``extra_us``) per request; with a base
    burn the query's own cost lands on both sides."""
    burn = base_burn_us(args, group) + extra_us
    return with_query(target, burn=f"{burn:.3f}us") if burn else target


@dataclass
class Row:
    """One scenario: its gate budget, the two sides and their load."""

    group: str
    scenario: str
    budget: str
    candidate: object
    reference: object
    shape: dict


def scenarios(args: argparse.Namespace, stacks: tuple[RunningTopology, RunningTopology]) -> Iterator[Row]:
    """The rows in order, each with the containers placed for it (``stacks``: ref, cand).
    Each injection is calibrated just before its row: a P90 spin calibrated before 40
    minutes of other gates measured +5.0% then and +8.3% in its row."""
    ref, cand = (stack.endpoint("direct") for stack in stacks)
    if args.swap_sides:  # the same containers in the other roles: does a bias follow the role?
        ref, cand = cand, ref
    for group in ("cpu", "p90", "rps"):
        if group not in args.only:
            continue
        place(args, stacks, group)
        shape = shape_of(args, group)
        if not args.skip_aa:
            both = with_base_burn(args, cand, group), with_base_burn(args, ref, group)
            yield Row(group, f"{group} A/A", BUDGETS[group], *both, shape)
        if args.skip_cut:
            continue
        if group == "rps" and args.rps_placement == QUOTA:
            place(args, stacks, group, quota_cut=True)
            yield Row(group, "rps -5% (cpu quota)", BUDGETS[group], cand, ref, shape)
            continue
        burn = injected_burn(args, ref, cand, group)
        name = f"{group} {'-' if group == 'rps' else '+'}5% (burn={base_burn_us(args, group) + burn:.3f}us)"
        burnt = with_base_burn(args, cand, group, burn)
        yield Row(group, name, BUDGETS[group], burnt, with_base_burn(args, ref, group), shape)


def injected_burn(args: argparse.Namespace, ref: object, cand: object, group: str) -> float:
    """The burn (us) added for ``group``'s injected row: 5% of ref's CPU per request or P90
    (for rps, what cuts a server-bound closed loop by 5%), scaled until it measures 5% with
    --calibrate-burn. A P90 spin is CPU, not a sleep: CPU spent per request adds to each
    response's time exactly, a sleep of a few microseconds lasts as long as the kernel's
    timer slack (+20-30% measured, not 5%)."""
    cost_ns, p90_us = calibrate(args, with_base_burn(args, ref, group), group)
    print(
        f"calibration: ref spends {cost_ns / 1e3:.1f} us of CPU per request, P90 {p90_us:.0f} us ({group} load)",
        flush=True,
    )
    if group == "p90":
        burn_us = p90_us * INJECTED
    elif group == "rps":
        burn_us = cost_ns / 1e3 * INJECTED / (1 - INJECTED)
    else:
        burn_us = cost_ns / 1e3 * INJECTED
    if args.calibrate_burn:
        burn_us = calibrated_burn(args, ref, cand, burn_us, group)
    return burn_us


def place(
    args: argparse.Namespace, stacks: tuple[RunningTopology, RunningTopology], group: str, quota_cut: bool = False
) -> None:
    """Give the echo containers (ref, cand) ``group``'s CPU: the pinned rps layout (a shared
    core, no quota) or a quota of --fixed-cores / --cores each (cand's cut by 5% with ``quota_cut``)."""
    for stack, cut in zip(stacks, (False, quota_cut), strict=True):
        container = stack.container("echo")
        if is_pinned(args, group):
            container.update(cpuset_cpus=args.sut_cores, cpu_period=CPU_PERIOD_US, cpu_quota=-1)
            continue
        if group != "rps" and args.fixed_placement == TWINS:
            container.update(cpuset_cpus=args.sut_cores, cpu_period=CPU_PERIOD_US, cpu_quota=-1)
            continue
        if (args.rps_placement if group == "rps" else args.fixed_placement) == FLOAT:
            container.update(cpuset_cpus=cpuset_text(usable_cores()), cpu_period=CPU_PERIOD_US, cpu_quota=-1)
            continue
        set_cpus(stack, (args.cores if group == "rps" else args.fixed_cores) * ((1 - INJECTED) if cut else 1.0))


def is_pinned(args: argparse.Namespace, group: str) -> bool:
    """Whether ``group``'s rows share --sut-cores between the echo containers (no quota) and
    run the drivers on --driver-cores."""
    return (args.rps_placement if group == "rps" else args.fixed_placement) == PINNED


def set_cpus(stack: RunningTopology, cores: float) -> None:
    """A CPU quota of ``cores`` for ``stack``'s echo container, on any core of the machine."""
    every_core = cpuset_text(usable_cores())
    stack.container("echo").update(
        cpuset_cpus=every_core, cpu_period=CPU_PERIOD_US, cpu_quota=int(cores * CPU_PERIOD_US)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gates", type=int, default=40, help="gates per scenario and design")
    parser.add_argument("--only", default="cpu,p90,rps", help="scenario groups: cpu, p90, rps")
    parser.add_argument(
        "--design",
        default=AUTO,
        help="designs compared: auto (the plugin's choice for a base twin: simultaneous at a fixed rate, "
        "fine turns in a closed loop), alternate, simultaneous, turns",
    )
    parser.add_argument("--rate", type=float, default=2000.0, help="fixed rate of the cpu and p90 gates")
    parser.add_argument(
        "--calibrate-burn",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="scale each burn until it adds 5%% to its metric as measured (three tries)",
    )
    # a P90 pair's ratio spreads 4-6% here: one try of 32 pairs is still off by about a point
    parser.add_argument("--calibration-pairs", type=int, default=32, help="pairs per calibration try")
    parser.add_argument(
        "--arrival", default=defaults.ARRIVAL, help="gaps of the fixed-rate loads (the gate checks the name)"
    )
    parser.add_argument("--skip-aa", action="store_true", help="only the injected rows (A/A figures of another run)")
    parser.add_argument("--skip-cut", action="store_true", help="only the A/A rows (injected figures of another run)")
    parser.add_argument(
        "--cand-first",
        action="store_true",
        help="stand up the candidate's stack before the reference's (A/A: does a bias follow the order of making?)",
    )
    parser.add_argument(
        "--swap-sides",
        action="store_true",
        help="the second stack's server as the reference and the first's as the candidate (A/A: a bias that "
        "follows the containers changes sign, one that follows the roles does not)",
    )
    parser.add_argument(
        "--fresh-pair",
        action="store_true",
        help="stand up both stacks afresh for every gate, as every CI run does (A/A only: does a bias between "
        "two identical containers draw at random with each pair?)",
    )
    parser.add_argument("--connections", type=int, default=8, help="connections at the fixed rate")
    parser.add_argument(
        "--cpu-weight",
        type=float,
        default=defaults.CPU_WEIGHT,
        help="CPU weight of the containers and drivers, as the plugin gives them (1: the default weight)",
    )
    parser.add_argument("--closed-connections", type=int, default=32, help="connections of the rps gates")
    parser.add_argument(
        "--rps-placement",
        choices=(PINNED, QUOTA, FLOAT),
        default=PINNED,
        help="CPU layout of the rps rows: float is the plugin's own below 4 cores (no quota, no pinning, "
        "the drivers on any core)",
    )
    # one driver on one core did not outrun a bare echo server on the other (saturated at
    # ~50k requests/s); at 10 us per request the same burn cut rps 3.4% in alternating
    # rounds and 4.9% in simultaneous ones (the lone server's driver near its limit); at
    # 30 us (~47 us per request in all) 5% in both
    # beside busy-neighbor --level busy, two unpinned containers' CPU per request differed
    # 25% (sd) from round to round (each core's neighbour bursts and cache sweeps its own)
    parser.add_argument(
        "--fixed-placement",
        choices=(PINNED, QUOTA, FLOAT, TWINS),
        default=PINNED,
        help="CPU layout of the cpu and p90 rows: quota (--fixed-cores each, any core), pinned (as rps) "
        "float (no quota, any core: the plugin's default on a machine it does not split) or twins (both "
        "echo containers on --sut-cores, the drivers on any core)",
    )
    parser.add_argument("--rps-burn", type=float, default=30.0, help="us every server spends per request (pinned rps)")
    # asking for a burn at all costs CPU (reading the query, the clock): a burn on the
    # candidate alone measured +6.5% at 0.18 us, so no burn injects +5%; a burn on both
    # sides puts that cost on the reference too
    parser.add_argument("--fixed-burn", type=float, default=1.0, help="us both sides spend per request (cpu, p90)")
    parser.add_argument("--driver-cores", default="0", help="cpuset of the drivers (pinned rps)")
    parser.add_argument("--sut-cores", default="1", help="cpuset shared by both echo containers (pinned rps)")
    # a quarter core: the echo server, not the driver, limits the closed-loop rps gates, with
    # both designs' loads (two drivers and two servers at once) inside the machine's 2 cores
    parser.add_argument("--cores", type=float, default=0.25, help="CPU quota of each echo container (quota rps)")
    # the fixed-rate gates need no quota to load the server; on a quarter core the P90 of
    # the same +5% burn spread wider (gate estimates 1.028x-1.093x, 9 of 10 caught; one core:
    # 1.039x-1.053x, 7 of 7), cause not pinned down
    parser.add_argument(
        "--fixed-cores", type=float, default=1.0, help="CPU quota of each echo container in the cpu and p90 gates"
    )
    # Short rounds: CPU per request moves ~8% from round to round here whether a round lasts
    # 0.5 s or 2 s (machine noise, not request count), so more, shorter rounds decide sooner.
    parser.add_argument("--duration", type=float, default=0.5, help="seconds of a round's window")
    parser.add_argument("--warmup", type=float, default=0.5, help="warmup of a target's first round")
    parser.add_argument("--round-warmup", type=float, default=0.25, help="warmup of every later round")
    parser.add_argument("--min-rounds", type=int, default=6)
    # ~0.8 s per simultaneous (or fine-turns) round and ~1.6 s per alternating pair here: all stay within 60 s
    parser.add_argument(
        "--max-rounds",
        type=max_rounds,
        default="alternate:32,simultaneous:64,turns:64",
        help="most rounds per side: N, or per design (alternate:32,simultaneous:64,turns:64)",
    )
    parser.add_argument(
        "--rounds-out",
        type=Path,
        help="append each gate's rounds (its metric per side, in order) to this JSON-lines file",
    )
    parser.add_argument(
        "--summarize",
        type=Path,
        nargs="+",
        metavar="ROUNDS_JSONL",
        help="print the table of gates that --rounds-out files hold (runs of their own, or one cut short) and exit",
    )
    add_neighbour_options(parser, "running every row", default=MATRIX)
    args = parser.parse_args()
    if args.summarize:
        runs = [run for path in args.summarize for run in read_runs(path)]
        summarize(runs, sum(run.seconds for run in runs))
        return
    if args.fresh_pair and not args.skip_cut:
        parser.error("--fresh-pair measures unchanged pairs only: add --skip-cut")
    args.only = {part.strip() for part in args.only.split(",")}
    designs = args.designs = [part.strip() for part in args.design.split(",")]
    unknown = sorted(set(designs) - set(DESIGNS))
    if unknown:
        parser.error(f"unknown design(s) {', '.join(unknown)}; expected {', '.join(DESIGNS)}")
    try:
        neighbours = parse_scenarios(args.neighbour)
        if any(not n.idle for n in neighbours):
            find_program()
    except (ValueError, NeighbourMissing) as exc:
        parser.error(str(exc))
    labelled = [n.name for n in neighbours] != [IDLE]  # the progress lines name the neighbour

    signal.signal(signal.SIGTERM, _interrupt)  # a killed benchmark still removes its containers
    session = f"power{uuid.uuid4().hex[:6]}"
    priority = weighted_cgroup(session, args.cpu_weight)
    runtime = DockerRuntime(session, {"echo": resolve_image("echo")}, core_split=None, priority=priority)
    outside = priority.home if priority is not None else None
    runs: list[GateRun] = []
    busy: dict[tuple[str, str], NeighbourReport] = {}
    started = time.monotonic()
    try:
        pairs = [range(args.gates)] if not args.fresh_pair else [range(i, i + 1) for i in range(args.gates)]
        for indices in pairs:
            stacks = stand_up_pair(args, runtime)
            for row in scenarios(args, stacks):  # calibrations run here, between neighbours
                for scenario in neighbours:
                    with Neighbour(scenario, args.neighbour_seconds, args.neighbour_seed, outside=outside) as neighbour:
                        run_row(args, row, designs, neighbour, runs, labelled, indices)
                    busy[(row.scenario, scenario.name)] = neighbour.report
                    if not scenario.idle:
                        print(
                            f"busy-neighbor {scenario.name} beside {row.scenario}: {neighbour.report.summary()}",
                            flush=True,
                        )
            for stack in stacks:
                stack.down()
    finally:
        runtime.down_all()
        clean_session(session, runtime.client)
        if priority is not None:
            for problem in priority.close():
                print(f"cpu weight: {problem}", flush=True)
    summarize(runs, time.monotonic() - started, busy)


def stand_up_pair(args: argparse.Namespace, runtime: DockerRuntime) -> tuple[RunningTopology, RunningTopology]:
    """The two stacks (ref, cand), made in the order --cand-first asks for."""
    if args.cand_first:  # the candidate's stack (network, container) made before the reference's
        cand_stack = runtime.up(topology("cand"))
        return runtime.up(topology("ref")), cand_stack
    return runtime.up(topology("ref")), runtime.up(topology("cand"))


def weighted_cgroup(session: str, factor: float) -> Optional[CpuPriority]:
    """The plugin's weighted cgroup for this benchmark's containers and drivers, or None
    (factor 1, or unavailable here: printed)."""
    if factor <= 1:
        return None
    try:
        priority = raise_priority(session, docker_client().info(), factor)
    except PriorityUnavailable as exc:
        print(f"cpu weight: {exc}", flush=True)
        return None
    print(f"cpu weight: {priority.describe()}", flush=True)
    return priority


def run_row(
    args: argparse.Namespace,
    row: Row,
    designs: list[str],
    neighbour: Neighbour,
    runs: list[GateRun],
    labelled: bool,
    indices: range,
) -> None:
    """The gates ``indices`` of ``row`` per design beside ``neighbour`` (running), appended to ``runs``."""
    name = neighbour.scenario.name
    for index in indices:
        for design in designs:  # the designs take turns, so drift of the machine reaches both
            if neighbour.ensure_running():
                print(f"busy-neighbor {name}: its --seconds ran out; started again", flush=True)
            run = run_gate(args, resolve_design(design, row.group), row)
            run.neighbour = name
            runs.append(run)
            if args.rounds_out is not None:
                with args.rounds_out.open("a") as out:
                    statuses = {"status": run.status.value, "side": {k: v.value for k, v in run.side.items()}}
                    out.write(json.dumps({**asdict(run), **statuses, "index": index}) + "\n")
            side = " ".join(f"{k}:{v.value}" for k, v in run.side.items())
            print(
                (f"{name:8} " if labelled else "")
                + f"{design:12} {row.scenario:28} #{index + 1:<3} {run.status.value:6} est {run.estimate:9.4g} "
                f"{run.rounds:3} rounds {run.seconds:5.1f}s  | same rounds: {side}",
                flush=True,
            )


def read_runs(path: Path) -> list[GateRun]:
    """The gates a --rounds-out file holds (the minutes in the table are then the gates' own)."""
    runs = []
    for line in path.read_text().splitlines():
        doc = json.loads(line)
        runs.append(
            GateRun(
                design=doc["design"],
                scenario=doc["scenario"],
                status=Status(doc["status"]),
                rounds=doc["rounds"],
                seconds=doc["seconds"],
                estimate=doc["estimate"],
                side={name: Status(value) for name, value in doc["side"].items()},
                values=doc.get("values", {}),
                neighbour=doc.get("neighbour", IDLE),
                switched=doc.get("switched", False),
                verdict=doc.get("verdict", ""),
                notes=doc.get("notes", []),
                outside=doc.get("outside", {}),
                steal=doc.get("steal", {}),
                side_estimate=doc.get("side_estimate", {}),
            )
        )
    return runs


def max_rounds(text: str) -> dict[str, int]:
    """``--max-rounds``: one number for every design ("*"), or ``design:N`` pairs (32 for the rest)."""
    if ":" not in text:
        return {"*": int(text)}
    plan = {"*": 32}
    for part in text.split(","):
        design, _, rounds = part.partition(":")
        plan[design.strip()] = int(rounds)
    return plan


def _interrupt(signum: int, frame: object) -> None:
    # a second signal (``timeout`` passes its own on) must not cut the cleanup short: it
    # once left both echo containers running
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt(f"signal {signum}")


def summarize(
    runs: list[GateRun], total_s: float, busy: Optional[dict[tuple[str, str], NeighbourReport]] = None
) -> None:
    """The table: one line per row, neighbour and design. Red is FAIL or INVALID (either blocks
    a merge), its rate over every gate; the other columns are over the judged gates."""
    busy = busy or {}
    by_cell: dict[tuple[str, str, str], list[GateRun]] = defaultdict(list)
    for run in runs:
        by_cell[(run.scenario, run.neighbour, run.design)].append(run)
    print()
    print(
        "| scenario | neighbour (workers busy) | design | gate budget | gates "
        "| red (FAIL+INVALID) (rate, 95% bound: upper for A/A, lower otherwise) | FAIL | INVALID "
        "| INCONCLUSIVE (before the policy) | median estimate (sd) "
        "| rounds (median, max) | s to verdict (median, max) | same rounds: cpu / p90 / rps FAIL "
        "| went on in the other design |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (scenario, neighbour, design), items in by_cell.items():
        budget = BUDGETS[scenario.split()[0]]
        invalid = sum(r.status is Status.INVALID for r in items)
        judged = [r for r in items if r.status is not Status.INVALID] or items
        fails = sum(r.status is Status.FAIL for r in judged)
        red = fails + invalid
        report = busy.get((scenario, neighbour))
        workers = f" ({report.mean_busy:.0%})" if report is not None and report.busy else ""
        rounds = [r.rounds for r in judged]
        seconds = [r.seconds for r in judged]
        estimates = [r.estimate for r in judged if r.estimate == r.estimate] or [float("nan")]
        spread = statistics.stdev(estimates) / statistics.median(estimates) if len(estimates) > 1 else float("nan")
        side = Counter(k for r in items for k, v in r.side.items() if v is Status.FAIL)
        recorded = [r for r in items if r.verdict]  # files written before 2026-11-29 lack it
        undecided = sum(r.verdict == Status.INCONCLUSIVE.value for r in recorded) if recorded else "?"
        print(
            f"| {scenario} | {neighbour}{workers} | {design} | `{budget}` | {len(items)} "
            f"| {red} ({red / len(items):.0%}, {rate_bound(red, len(items), upper='A/A' in scenario):.0%}) "
            f"| {fails} | {invalid} | {undecided} "
            f"| {statistics.median(estimates):.3f}x ({spread:.1%}) "
            f"| {statistics.median(rounds):g}, {max(rounds)} | {statistics.median(seconds):.0f}, {max(seconds):.0f} "
            f"| {side['cpu']} / {side['p90']} / {side['rps']} | {sum(r.switched for r in items)} |"
        )
    print(f"\n{len(runs)} gates in {total_s / 60:.1f} min")


def rate_bound(events: int, trials: int, upper: bool, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson bound (upper or lower) of a rate seen ``events`` times in ``trials``."""
    if upper:
        return 1.0 if events >= trials else float(beta.ppf(confidence, events + 1, trials - events))
    return 0.0 if events <= 0 else float(beta.ppf(1.0 - confidence, events, trials - events + 1))


if __name__ == "__main__":
    main()
