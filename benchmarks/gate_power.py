"""The gate's own figures on real containers: false FAILs on A/A, detection of injected
regressions, and seconds of measurement to a verdict, per metric.

One topology of two echo servers (``ref`` and ``cand``, each limited to one core) is stood
up once; every gate is the real :class:`~pytest_netperf.measure.gate.Gate` with the Rust
driver, interleaved rounds and the sequential procedure (rounds of --duration seconds,
--min-rounds first, up to --max-rounds). Scenarios, each run --gates times:

==================  =========================================================  =============================
scenario            candidate vs reference                                     gate budget
==================  =========================================================  =============================
cpu A/A             ref vs ref at a fixed --rate                               cpu_per_request[ref] <= 1.025x
cpu +5%, +10%       ref?burn=X vs ref; X is 5% / 10% of ref's measured          cpu_per_request[ref] <= 1.025x
                    CPU per request (calibrated first)
latency A/A         ref vs ref at a fixed --rate                               p90_added <= 25us
latency +50/100us   ref?delay=50us / 100us vs ref                               p90_added <= 25us
rps A/A             cand vs ref, closed loop, --connections                     rps >= 0.95x reference
rps cpus -10%       cand limited to 0.9 cores vs ref at 1.0                     rps >= 0.95x reference
==================  =========================================================  =============================

A gate's verdict is its own budget's, after the default final-INCONCLUSIVE policy.
Each gate budget lies halfway to the smallest regression injected for its metric. On the same
rounds the script also judges the other metrics once (``cpu_per_request[*] <= 1.05x``,
``p90 <= 1.05x``, ``rps >= 0.95x``, all vs the reference) to show what they say about the
same work.

Usage: python benchmarks/gate_power.py [--gates 20] [--only cpu,latency,rps] [--rate 2000]
       [--duration 0.5] [--min-rounds 6] [--max-rounds 32]
Needs Docker and the local images (`netperf images build`). Everything started is removed.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass

from pytest_netperf import defaults
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers import make_driver
from pytest_netperf.errors import InvalidMeasurement
from pytest_netperf.images.resolve import resolve_image
from pytest_netperf.measure.gate import Gate, Measurement
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.targets import with_query
from pytest_netperf.report.failure import inconclusive_fails
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.docker import DockerRuntime, RunningTopology
from pytest_netperf.topology.model import Node, Target, Topology
from pytest_netperf.verdict import stats
from pytest_netperf.verdict.status import Status

#: Each gate budget lies halfway to the smallest regression injected for it, so A/A should
#: pass it and the regressions fail it.
CPU_BUDGET = "cpu_per_request[ref] <= 1.025x reference"
LATENCY_BUDGET = "p90_added <= 25us"
RPS_BUDGET = "rps >= 0.95x reference"
#: Judged once on the rounds of every gate, beside the gate's own budget.
SIDE_BUDGETS = {"cpu": "cpu_per_request[*] <= 1.05x reference", "p90": "p90 <= 1.05x reference", "rps": RPS_BUDGET}


@dataclass
class GateRun:
    scenario: str
    status: Status
    rounds: int
    seconds: float
    estimate: float
    side: dict[str, Status]


def topology() -> Topology:
    nodes = (Node("ref", "echo", 8080), Node("cand", "echo", 8080))  # one core each: set_cpus()
    return Topology("gate-power", nodes, (Target("ref", "ref", 8080), Target("cand", "cand", 8080)))


def settings(args: argparse.Namespace) -> GateSettings:
    return GateSettings(
        rounds_min=args.min_rounds,
        rounds_max=args.max_rounds,
        round_duration_s=args.duration,
        warmup_s=args.warmup,
        round_warmup_s=args.round_warmup,
    )


def run_gate(args: argparse.Namespace, scenario: str, budget: str, candidate, reference, **shape) -> GateRun:
    gate = Gate(f"gate_power::{scenario}", [parse_budget(budget)], settings(args), lambda n, r: make_driver("rust", r))
    started = time.monotonic()
    try:
        measurement = gate.compare(candidate, reference, **shape)
    except InvalidMeasurement as exc:  # a saturated driver, a vanished target: no verdict
        print(f"{scenario}: INVALID: {exc}", flush=True)
        return GateRun(scenario, Status.INVALID, 0, time.monotonic() - started, float("nan"), {})
    seconds = time.monotonic() - started
    (outcome,) = gate.finish()
    status = outcome.status
    if status is Status.INCONCLUSIVE:  # the default final-INCONCLUSIVE policy decides red or green
        status = Status.FAIL if inconclusive_fails(outcome, defaults.INCONCLUSIVE) else Status.PASS
    estimate = outcome.verdict.estimate if outcome.verdict is not None else float("nan")
    rounds = len(measurement.candidate.rounds)
    return GateRun(scenario, status, rounds, seconds, estimate, side_verdicts(measurement))


def side_verdicts(m: Measurement) -> dict[str, Status]:
    """What the other metrics say about the same rounds (one look, no sequential stopping)."""
    out = {}
    assert m.reference is not None
    for name, text in SIDE_BUDGETS.items():
        budget = parse_budget(text)
        try:
            verdict = stats.evaluate(budget, m.candidate.values(budget.metric), m.reference.values(budget.metric))
        except (KeyError, ValueError):
            continue
        out[name] = verdict.status
    return out


def calibrate_cpu(args: argparse.Namespace, running: RunningTopology) -> float:
    """The reference's CPU per request at the benchmark's rate (ns), from a short A/A gate."""
    ref = running.endpoint("ref")
    gate = Gate(
        "gate_power::calibrate", [parse_budget(CPU_BUDGET)], settings(args), lambda n, r: make_driver("rust", r)
    )
    m = gate.compare(ref, ref, rate=args.rate, connections=args.connections, rounds=4)
    return statistics.median(m.reference.values("cpu_per_request[ref]"))


def scenarios(args: argparse.Namespace, running: RunningTopology) -> list[tuple[str, str, object, object, dict]]:
    ref, cand = running.endpoint("ref"), running.endpoint("cand")
    fixed = {"rate": args.rate, "connections": args.connections}
    plan = []
    if "cpu" in args.only:
        cost_ns = calibrate_cpu(args, running)
        print(f"calibration: ref spends {cost_ns / 1e3:.1f} us of CPU per request at {args.rate:g} rps")
        for label, share in (("cpu +5%", 0.05), ("cpu +10%", 0.10)):
            burn = f"{cost_ns * share / 1e3:.2f}us"
            plan.append((f"{label} (burn={burn})", CPU_BUDGET, with_query(ref, burn=burn), ref, fixed))
        plan.insert(0, ("cpu A/A", CPU_BUDGET, ref, ref, fixed))
    if "latency" in args.only:
        plan.append(("latency A/A", LATENCY_BUDGET, ref, ref, fixed))
        for delay in ("50us", "100us"):
            plan.append((f"latency +{delay}", LATENCY_BUDGET, with_query(ref, delay=delay), ref, fixed))
    if "rps" in args.only:
        closed = {"connections": args.closed_connections}
        plan.append(("rps A/A", RPS_BUDGET, cand, ref, closed))
        plan.append(("rps cpus -10%", RPS_BUDGET, cand, ref, closed))
    return plan


def set_cpus(running: RunningTopology, node: str, cpus: float) -> None:
    period = 100_000
    running.container(node).update(cpu_period=period, cpu_quota=int(cpus * period))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gates", type=int, default=20, help="gates per scenario")
    parser.add_argument("--only", default="cpu,latency,rps", help="scenario groups: cpu, latency, rps")
    parser.add_argument("--rate", type=float, default=2000.0, help="fixed rate of the cpu and latency gates")
    parser.add_argument("--connections", type=int, default=8, help="connections at the fixed rate")
    parser.add_argument("--closed-connections", type=int, default=32, help="connections of the rps gates")
    # Short rounds: CPU per request moves ~8% from round to round here whether a round lasts
    # 0.5 s or 2 s (machine noise, not request count), so more, shorter rounds decide sooner.
    parser.add_argument("--duration", type=float, default=0.5, help="seconds of a round's window")
    parser.add_argument("--warmup", type=float, default=0.5, help="warmup of a target's first round")
    parser.add_argument("--round-warmup", type=float, default=0.25, help="warmup of every later round")
    parser.add_argument("--min-rounds", type=int, default=6)
    parser.add_argument("--max-rounds", type=int, default=32)
    args = parser.parse_args()
    args.only = {part.strip() for part in args.only.split(",")}

    signal.signal(signal.SIGTERM, _interrupt)  # a killed benchmark still removes its containers
    session = f"power{uuid.uuid4().hex[:6]}"
    runtime = DockerRuntime(session, {"echo": resolve_image("echo")}, core_split=None)
    runs: list[GateRun] = []
    started = time.monotonic()
    try:
        with runtime.up(topology()) as running:
            set_cpus(running, "ref", 1.0)
            set_cpus(running, "cand", 1.0)
            for scenario, budget, candidate, reference, shape in scenarios(args, running):
                set_cpus(running, "cand", 0.9 if "cpus -10%" in scenario else 1.0)
                for index in range(args.gates):
                    run = run_gate(args, scenario, budget, candidate, reference, **shape)
                    runs.append(run)
                    side = " ".join(f"{k}:{v.value}" for k, v in run.side.items())
                    print(
                        f"{scenario:28} #{index + 1:<3} {run.status.value:6} est {run.estimate:9.4g} "
                        f"{run.rounds:3} rounds {run.seconds:5.1f}s  | same rounds: {side}",
                        flush=True,
                    )
    finally:
        runtime.down_all()
        clean_session(session, runtime.client)
    summarize(runs, time.monotonic() - started)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def summarize(runs: list[GateRun], total_s: float) -> None:
    by_scenario: dict[str, list[GateRun]] = defaultdict(list)
    for run in runs:
        by_scenario[run.scenario].append(run)
    print()
    print(
        "| scenario | gate budget | gates | FAIL | INVALID | rounds (median, max) | s to verdict (median, max) "
        "| same rounds: cpu / p90 / rps FAIL |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for scenario, items in by_scenario.items():
        budget = (
            CPU_BUDGET
            if scenario.startswith("cpu")
            else LATENCY_BUDGET
            if scenario.startswith("latency")
            else RPS_BUDGET
        )
        invalid = sum(r.status is Status.INVALID for r in items)
        judged = [r for r in items if r.status is not Status.INVALID] or items
        fails = sum(r.status is Status.FAIL for r in judged)
        rounds = [r.rounds for r in judged]
        seconds = [r.seconds for r in judged]
        side = Counter(k for r in items for k, v in r.side.items() if v is Status.FAIL)
        print(
            f"| {scenario} | `{budget}` | {len(items)} | {fails} ({fails / len(judged):.0%}) | {invalid} "
            f"| {statistics.median(rounds):g}, {max(rounds)} | {statistics.median(seconds):.0f}, {max(seconds):.0f} "
            f"| {side['cpu']} / {side['p90']} / {side['rps']} |"
        )
    print(f"\n{len(runs)} gates in {total_s / 60:.1f} min")


if __name__ == "__main__":
    main()
