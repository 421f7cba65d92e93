"""Where the spread of CPU per request comes from: A/A rounds of two echo servers read apart.

Two single-node echo topologies (``ref`` and ``cand``, each its own container and cgroup, as
a pull request's base and head stacks are) are loaded at a fixed rate in pairs of rounds,
the two designs taking turns pair by pair (alternate: one side, then the other, ABBA;
simultaneous: both at once). Around every round each container's cgroup is read: CPU time
split into user and system (cgroup v1 ``cpuacct.usage_user``/``usage_sys``, v2 ``cpu.stat``),
and the span of the reads beside the driver's own run. Before any load each server's idle
CPU is read for --idle seconds, so the share of a round's CPU spent outside the load (the
counters' window: driver start, drain, exit) can be put in numbers.

Printed per design: the spread (standard deviation of the log of candidate/reference per
pair) of CPU per request and of P90, their lag-1 autocorrelation between pairs and their
mean; then the share of rounds whose CPU time the kernel split into user and system at all
(where it samples on timer ticks, a round of a few ms often gets all of one), the
first-side effect (alternate: the side measured first in a pair against the second), and
the window's share of a round's CPU.

--arrival constant,poisson measures each design under both schedules in turn (each side its
own Poisson seed): constant gaps keep one phase against the other load for a whole round.

Usage: python benchmarks/cpu_spread.py [--pairs 60] [--rate 2000] [--duration 0.5] [--arrival constant,poisson]
Needs Docker and the local images (`netperf images build`). Everything started is removed.
"""

from __future__ import annotations

import argparse
import math
import signal
import statistics
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from gate_power import set_cpus, topology

from pytest_netperf import defaults
from pytest_netperf.drivers import make_driver
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.images.resolve import resolve_image
from pytest_netperf.measure.design import ALTERNATE, SIMULTANEOUS, run_side_by_side
from pytest_netperf.runtime.cgroups import locate
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.docker import DockerRuntime


@dataclass(frozen=True)
class CpuSplit:
    """CPU time of one cgroup, ns."""

    user: int
    system: int
    total: int


@dataclass(frozen=True)
class Side:
    """One echo server: its URL and the cgroup files its CPU time is read from."""

    url: str
    cpu_file: Path
    version: int

    def read(self) -> CpuSplit:
        if self.version == 1:
            folder = self.cpu_file.parent
            user = int((folder / "cpuacct.usage_user").read_text())
            system = int((folder / "cpuacct.usage_sys").read_text())
            total = int(self.cpu_file.read_text())
            return CpuSplit(user, system, total)
        stat = dict(line.split() for line in self.cpu_file.read_text().splitlines())
        return CpuSplit(int(stat["user_usec"]) * 1000, int(stat["system_usec"]) * 1000, int(stat["usage_usec"]) * 1000)


@dataclass(frozen=True)
class Round:
    """One side's round: CPU per request (ns) in total, user and system, P90 (ns), and the
    seconds the counters were open beyond the driver's run."""

    total: float
    user: float
    system: float
    p90: float
    gap_s: float
    load_s: float


def measure(side: Side, shape: LoadShape, driver: object) -> Round:
    first = side.read()
    opened = time.monotonic()
    before = time.monotonic()
    result = driver.run(side.url, shape)  # type: ignore[attr-defined]
    after = time.monotonic()
    last = side.read()
    span = time.monotonic() - opened
    served = result.completed_total or 1
    return Round(
        total=(last.total - first.total) / served,
        user=(last.user - first.user) / served,
        system=(last.system - first.system) / served,
        p90=float(result.latency.percentile_ns(90.0)),
        gap_s=span - (after - before),
        load_s=float(result.duration_s) + float(result.config.get("warmup_s") or 0.0),
    )


def side_of(running: object) -> Side:
    container = running.container("echo")  # type: ignore[attr-defined]
    container.reload()
    files = locate(int(container.attrs["State"]["Pid"]))
    return Side(running.endpoint("direct").url, files.cpu, files.version)  # type: ignore[attr-defined]


def idle_rate(side: Side, seconds: float) -> float:
    """ns of CPU per second the server spends with no load."""
    first = side.read()
    time.sleep(seconds)
    return (side.read().total - first.total) / seconds


def log_ratios(pairs: list[tuple[Round, Round]], part: str) -> list[float]:
    return [
        math.log(getattr(c, part) / getattr(r, part)) for c, r in pairs if getattr(c, part) > 0 and getattr(r, part) > 0
    ]


def mean_ratio(logs: list[float]) -> str:
    """Geometric mean of the ratios with its 95% half-width: a bias between the two servers
    (two containers of one image are not the same system) shows as a mean away from 1."""
    half = 1.96 * _stdev(logs) / math.sqrt(len(logs)) if len(logs) >= 2 else float("nan")
    return f"{math.exp(statistics.fmean(logs)):.3f} ± {half:.3f}"


def _stdev(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) >= 2 else float("nan")


def lag1(values: list[float]) -> float:
    if len(values) < 3:
        return float("nan")
    mean = statistics.fmean(values)
    num = sum((a - mean) * (b - mean) for a, b in zip(values, values[1:], strict=False))
    den = sum((v - mean) ** 2 for v in values)
    return num / den if den else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=60, help="round pairs per design")
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--duration", type=float, default=0.5)
    parser.add_argument("--warmup", type=float, default=0.25)
    parser.add_argument("--cores", type=float, default=1.0, help="CPU quota of each echo container")
    parser.add_argument("--idle", type=float, default=3.0, help="seconds of idle CPU read per server")
    parser.add_argument(
        "--arrival", default=defaults.ARRIVAL, help="gaps of the load, compared pair by pair: poisson, constant or both"
    )
    args = parser.parse_args()
    arrivals = [part.strip() for part in args.arrival.split(",")]
    signal.signal(signal.SIGTERM, _interrupt)
    session = f"spread{uuid.uuid4().hex[:6]}"
    runtime = DockerRuntime(session, {"echo": resolve_image("echo")}, core_split=None)
    pairs: dict[tuple[str, str], list[tuple[Round, Round]]] = {
        (d, a): [] for a in arrivals for d in (ALTERNATE, SIMULTANEOUS)
    }
    first_vs_second: list[float] = []
    try:
        ref_stack, cand_stack = runtime.up(topology("ref")), runtime.up(topology("cand"))
        set_cpus(ref_stack, args.cores)
        set_cpus(cand_stack, args.cores)
        ref, cand = side_of(ref_stack), side_of(cand_stack)
        idle = statistics.fmean([idle_rate(ref, args.idle), idle_rate(cand, args.idle)])
        drivers = (make_driver("rust", None), make_driver("rust", None))
        for side in (ref, cand):  # first connections and caches: not a pair
            measure(side, load_shape(args, arrivals[0], 0), drivers[0])
        for index in range(args.pairs):
            for design, arrival in pairs:
                shape = load_shape(args, arrival, 2 * index)
                other = load_shape(args, arrival, 2 * index + 1)  # each side its own Poisson schedule
                if design == SIMULTANEOUS:
                    c, r = run_side_by_side(
                        [
                            lambda s=shape: measure(cand, s, drivers[0]),  # type: ignore[misc]
                            lambda s=other: measure(ref, s, drivers[1]),  # type: ignore[misc]
                        ]
                    )
                else:
                    cand_first = index % 2 == 1
                    if cand_first:
                        c = measure(cand, shape, drivers[0])
                        r = measure(ref, other, drivers[0])
                    else:
                        r = measure(ref, other, drivers[0])
                        c = measure(cand, shape, drivers[0])
                    first, second = (c, r) if cand_first else (r, c)
                    first_vs_second.append(math.log(first.total / second.total))
                pairs[(design, arrival)].append((c, r))
            if (index + 1) % 10 == 0:
                print(f"{index + 1}/{args.pairs} pairs", flush=True)
    finally:
        runtime.down_all()
        clean_session(session, runtime.client)
    report(pairs, first_vs_second, idle, args)


def load_shape(args: argparse.Namespace, arrival: str, seed: int) -> LoadShape:
    """One side's round: the benchmark's rate and window, ``arrival`` gaps, its own Poisson seed."""
    shape = LoadShape(
        rate=args.rate, connections=args.connections, duration_s=args.duration, warmup_s=args.warmup, arrival=arrival
    )
    return replace(shape, extra={"max_lag": "5ms", "seed": seed})


def report(
    pairs: dict[tuple[str, str], list[tuple[Round, Round]]],
    first_vs_second: list[float],
    idle: float,
    args: argparse.Namespace,
) -> None:
    print()
    print(f"{args.pairs} pairs per design at {args.rate:g} rps, {args.duration:g} s rounds, {args.cores:g} cores each")
    print(
        "| design | arrivals | spread of log(cand/ref): CPU per request | P90 | lag-1 CPU / P90 "
        "| mean cand/ref (± 95%): CPU / P90 |"
    )
    print("|---|---|---|---|---|---|")
    for (design, arrival), items in pairs.items():
        cpu, p90 = log_ratios(items, "total"), log_ratios(items, "p90")
        print(
            f"| {design} | {arrival} | {_stdev(cpu):.1%} | {_stdev(p90):.1%} | {lag1(cpu):+.2f} / {lag1(p90):+.2f} "
            f"| {mean_ratio(cpu)} / {mean_ratio(p90)} |"
        )
    rounds = [x for items in pairs.values() for pair in items for x in pair]
    cpu_per_round = statistics.median(r.total * args.rate * r.load_s for r in rounds)
    gap = statistics.median(r.gap_s for r in rounds)
    user_share = statistics.median(r.user / r.total for r in rounds)
    zero = sum(1 for r in rounds if r.user == 0 or r.system == 0) / len(rounds)
    print()
    print(
        f"user share of CPU per request: {user_share:.0%} (median round); rounds with no user or no system "
        f"time at all: {zero:.0%} (where the kernel splits CPU time on timer ticks, the split of a round's few "
        "ms is a sample, not a measurement)"
    )
    print(
        f"counters' window: open {gap * 1e3:.1f} ms beyond the driver's run (median); idle CPU {idle / 1e6:.2f} ms/s; "
        f"outside-load CPU ~{idle * gap / cpu_per_round:.3%} of a round's {cpu_per_round / 1e6:.1f} ms"
    )
    if first_vs_second:
        mean = statistics.fmean(first_vs_second)
        half = 1.96 * statistics.stdev(first_vs_second) / math.sqrt(len(first_vs_second))
        print(f"alternate, first side of a pair vs second: {mean:+.1%} ± {half:.1%} (CPU per request)")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    main()
