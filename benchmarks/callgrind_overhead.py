"""Callgrind with call stacks against cachegrind: the same counting pass of an nginx gateway under each.

The report's flame graph needs call stacks (valgrind's callgrind with ``--separate-callers``); the
counted budgets use cachegrind. This stands up the nginx gateway of counting_gate_power.py (nginx
``edge`` with an upstream keep-alive pool in front of the echo app) once and runs, alternately,
``--passes`` counting passes under each tool (the gate's own code: measure/counting_pass.py,
``--repetitions`` x (``--high`` - ``--low``) requests). Printed per pass: the instructions per
request (median of the repetitions), their spread and the pass's seconds; then the medians, the
relative difference of the per-request totals and the ratio of the passes' times.

Usage: python benchmarks/callgrind_overhead.py [--passes 3] [--repetitions 3] [--low 200] [--high 1000]
Needs Docker, the local images (`netperf images build`) and Debian's apt for the counting images.
Everything started is removed.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from counting_gate_power import NGINX, topology

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.measure.counting_pass import CountingPlan, run_counting_pass
from pytest_netperf.results.counted import INSTRUCTIONS, STACKS
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.docker import DockerRuntime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--low", type=int, default=200)
    parser.add_argument("--high", type=int, default=1000)
    args = parser.parse_args()
    plan = CountingPlan(low=args.low, high=args.high, repetitions=args.repetitions)
    session = f"cgoverhead{uuid.uuid4().hex[:8]}"
    runtime = DockerRuntime(session, {}, core_split=None)
    found: dict[str, list[tuple[float, float]]] = {INSTRUCTIONS: [], STACKS: []}
    try:
        with tempfile.TemporaryDirectory(prefix="netperf-callgrind-") as folder:
            config = Path(folder) / "nginx.conf"
            config.write_text(NGINX.replace("KEEPALIVE", "keepalive 32;").replace("INJECT", ""))
            running = runtime.up(topology("nginx-gw", "nginx", config))
            endpoint = running.endpoint("edge")
            assert endpoint.counter is not None
            endpoint.counter.prepare()
            driver = RustDriver()
            for number in range(args.passes):
                for tool in (INSTRUCTIONS, STACKS):
                    started = time.monotonic()
                    cost = run_counting_pass(endpoint.counter, [tool], driver.run, endpoint.url, LoadShape(), plan)[
                        tool
                    ]
                    seconds = time.monotonic() - started
                    found[tool].append((cost.median, seconds))
                    values = ", ".join(f"{v:,.1f}" for v in cost.per_request)
                    print(
                        f"pass {number + 1} {tool:12s} {cost.median:,.1f} per request ({values}; spread "
                        f"{cost.spread:.3%}) {seconds:.1f}s stacks {len(cost.stacks)}",
                        flush=True,
                    )
            running.down()
    finally:
        clean_session(session)
    base = statistics.median(v for v, _ in found[INSTRUCTIONS])
    head = statistics.median(v for v, _ in found[STACKS])
    base_s = statistics.median(s for _, s in found[INSTRUCTIONS])
    head_s = statistics.median(s for _, s in found[STACKS])
    print(f"cachegrind {base:,.1f} per request, {base_s:.1f}s per pass")
    print(f"callgrind  {head:,.1f} per request, {head_s:.1f}s per pass")
    print(f"difference {(head - base) / base:+.3%}; time {head_s / base_s:.2f}x")


if __name__ == "__main__":
    main()
