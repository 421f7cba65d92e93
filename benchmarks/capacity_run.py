"""How long the closed-loop capacity run of ``rate="N%"`` must be: its reading at 0.5 s against 1 s.

The sidecar example sweeps its depths at 20% of the capacity the gate measures first
(measure/capacity.py). This loads the example's sidecar chain (Envoy pods, ``?depth=N``) at each
--depths in closed loop over --connections, the two run lengths taking turns (the order swapped
from repetition to repetition, after the same warmup), and prints per depth the median
capacity of each length, their ratio and the spread (sd of the log) of each: a shorter run that
reads the same capacity within the run-to-run spread of the longer one serves as well.

Usage: python benchmarks/capacity_run.py [--repetitions 6] [--depths 0,3,5,8,12] [--lengths 1.0,0.5]
       [--warmup 0.5] [--connections 16]
Needs Docker and the local images (`netperf images build`). Everything started is removed.
"""

from __future__ import annotations

import argparse
import math
import signal
import statistics
import uuid

from pytest_netperf import builders, with_query
from pytest_netperf.drivers import make_driver
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.images.resolve import resolve_image
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.docker import DockerRuntime


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=6, help="capacity runs of each length per depth")
    parser.add_argument("--depths", default="0,3,5,8,12")
    parser.add_argument("--lengths", default="1.0,0.5", help="seconds of the closed-loop runs compared")
    parser.add_argument("--warmup", type=float, default=0.5, help="warmup before every run (the examples' 0.5 s)")
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    lengths = [float(s) for s in args.lengths.split(",")]
    signal.signal(signal.SIGTERM, _interrupt)
    session = f"capacity{uuid.uuid4().hex[:6]}"
    runtime = DockerRuntime(session, {"echo": resolve_image("echo")})
    driver = make_driver("rust", None)
    reads: dict[tuple[int, float], list[float]] = {(d, s): [] for d in depths for s in lengths}
    try:
        chain = runtime.up(builders.sidecar_chain_topology(sidecars=True))
        entry = chain.endpoint("entry")
        for depth in depths:
            url = with_query(entry, depth=depth).url
            for k in range(args.repetitions):
                for seconds in lengths if k % 2 == 0 else list(reversed(lengths)):
                    shape = LoadShape(connections=args.connections, duration_s=seconds, warmup_s=args.warmup)
                    reads[(depth, seconds)].append(driver.run(url, shape).achieved_rps)
            print(f"depth {depth}: done", flush=True)
    finally:
        runtime.down_all()
        clean_session(session, runtime.client)
    report(reads, depths, lengths, args)


def report(
    reads: dict[tuple[int, float], list[float]], depths: list[int], lengths: list[float], args: argparse.Namespace
) -> None:
    """One row per depth: each length's median capacity and spread, and the ratio of the medians."""
    longest = max(lengths)
    heads = " | ".join(f"{s:g} s median (sd of log)" for s in lengths)
    ratios = " | ".join(f"{s:g} s / {longest:g} s" for s in lengths if s != longest)
    print(
        f"\n{args.repetitions} capacity runs of each length a depth, warmup {args.warmup:g} s, "
        f"{args.connections} connections"
    )
    print(f"| depth | {heads} | {ratios} |")
    print("|---" * (1 + len(lengths) + len(lengths) - 1) + "|")
    for depth in depths:
        cells = []
        for seconds in lengths:
            values = reads[(depth, seconds)]
            logs = [math.log(v) for v in values if v > 0]
            spread = statistics.stdev(logs) if len(logs) > 1 else math.nan
            cells.append(f"{statistics.median(values):,.0f} ({spread:.1%})")
        base = statistics.median(reads[(depth, longest)])
        shares = [f"{statistics.median(reads[(depth, s)]) / base:.3f}x" for s in lengths if s != longest]
        print(f"| {depth} | {' | '.join(cells)} | {' | '.join(shares)} |")


if __name__ == "__main__":
    main()
