"""How far a pair of closed-loop rounds spreads when the sides take fine turns inside each
round (``--turn``, the ``turns`` design) against whole rounds taken in turns (``alternate``).

Two echo servers (the Rust driver's ``echo``) on one core, one driver per side on another,
a closed loop over --connections with --burn of CPU per request on both servers (the
candidate's plus --cut-burn). Each pair is one round in fine turns (both drivers at once,
each in its own slots of each --turn length) and one pair of whole rounds in ABBA order, so
drift of the machine reaches every design alike. Per design: the mean candidate/reference
throughput ratio, the spread (sd) of a pair's log ratio, and the standard error of the mean
over the pairs; beside the busy neighbour with ``--neighbour busy``.

Usage: python benchmarks/fine_turns.py [--pairs 30] [--turns 10ms,25ms] [--burn 30]
       [--cut-burn 0] [--round 0.5] [--warmup 0.25] [--neighbour idle|busy|heavy:2]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import time
from contextlib import ExitStack
from functools import partial

from _loopback import free_port, wait_for_port
from _neighbour import Neighbour, add_neighbour_options, describe, parse_scenarios

from pytest_netperf.measure.design import run_side_by_side
from pytest_netperf.runtime.commands import find_driver_binary

WHOLE = "whole rounds"


def echo_server(binary: str, port: int, core: str) -> subprocess.Popen[bytes]:
    """One single-threaded echo server on ``core``."""
    argv = ["taskset", "-c", core, binary, "echo", "--listen", f"127.0.0.1:{port}", "--threads", "1"]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def rate(binary: str, args: argparse.Namespace, url: str, extra: list[str]) -> float:
    """One round's requests per second (per second of its own slots under --turn)."""
    argv = ["taskset", "-c", args.driver_core, binary, "http", url, "-c", str(args.connections), "-t", "1"]
    argv += ["-d", f"{args.round}s", "-w", f"{args.warmup}s", "--json", *extra]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=args.round + args.warmup + 30, check=True)
    return float(json.loads(out.stdout)["summary"]["achieved_rps"])


def measure(args: argparse.Namespace, binary: str, ref_url: str, cand_url: str) -> dict[str, list[float]]:
    """Per design, the log(candidate / reference) of each pair."""
    logs: dict[str, list[float]] = {t: [] for t in args.turns}
    logs[WHOLE] = []
    for k in range(args.pairs):
        for turn in args.turns:
            side = str(k % 2)  # the sides swap slots from pair to pair, as the plugin's rounds do
            other = str(1 - k % 2)
            flags = [["--turn", turn, "--turn-side", side], ["--turn", turn, "--turn-side", other]]
            cand, ref = run_side_by_side(
                [partial(rate, binary, args, url, f) for url, f in zip((cand_url, ref_url), flags, strict=True)]
            )
            logs[turn].append(math.log(cand / ref))
        if k % 2:
            ref, cand = rate(binary, args, ref_url, []), rate(binary, args, cand_url, [])
        else:
            cand, ref = rate(binary, args, cand_url, []), rate(binary, args, ref_url, [])
        logs[WHOLE].append(math.log(cand / ref))
    return logs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--turns", type=lambda t: [p.strip() for p in t.split(",") if p.strip()], default="10ms,25ms")
    parser.add_argument("--burn", type=float, default=30.0, help="us of CPU per request on both servers")
    parser.add_argument("--cut-burn", type=float, default=0.0, help="us more on the candidate's server")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--round", type=float, default=0.5, help="seconds of a round's window")
    parser.add_argument("--warmup", type=float, default=0.25)
    parser.add_argument("--server-core", default="1")
    parser.add_argument("--driver-core", default="0")
    add_neighbour_options(parser, "running for all of a scenario's pairs")
    args = parser.parse_args()
    binary = find_driver_binary()
    for scenario in parse_scenarios(args.neighbour):
        with ExitStack() as stack:
            ports = free_port(), free_port()
            servers = [echo_server(binary, port, args.server_core) for port in ports]
            for server in servers:
                stack.callback(server.wait)
                stack.callback(server.terminate)
            for port in ports:
                wait_for_port(port)
            ref_url = f"http://127.0.0.1:{ports[0]}/?burn={args.burn:g}us"
            cand_url = f"http://127.0.0.1:{ports[1]}/?burn={args.burn + args.cut_burn:g}us"
            neighbour = stack.enter_context(Neighbour(scenario, args.neighbour_seconds, args.neighbour_seed))
            started = time.monotonic()
            logs = measure(args, binary, ref_url, cand_url)
            elapsed = time.monotonic() - started
        print(
            f"{scenario.name} (neighbour's workers busy {describe(scenario, neighbour.report)}): "
            f"{args.pairs} pairs in {elapsed:.0f} s, "
            f"cut burn {args.cut_burn:g} us over {args.burn:g} us"
        )
        for design, values in logs.items():
            name = design if design == WHOLE else f"fine turns of {design}"
            sd = statistics.stdev(values)
            print(
                f"  {name:22} mean ratio {math.exp(statistics.mean(values)):.4f}  sd per pair {sd:6.2%}  "
                f"se of the mean {sd / math.sqrt(len(values)):.2%}",
                flush=True,
            )


if __name__ == "__main__":
    main()
