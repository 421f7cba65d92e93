"""Record real A/A rounds for the replay test of the default verdict (tests/unit/test_aa_replay.py).

Stands up the gate-power topologies (two echo servers, ``ref`` and ``cand``, one core each)
and measures, in the gate's paired rounds (``--design``) with the real driver:

* ``open``: the two servers against each other at a fixed rate (``--rate``, ``--connections``,
  ``--arrival`` gaps;
  the data of 2026-11-25 measured the reference against itself, before ``--design``):
  ``cpu_per_request[echo]`` and ``p90`` per round of each side;
* ``closed``: the two servers against each other, closed loop (``--closed-connections``):
  ``rps`` per round of each side.

Writes ``tests/unit/data/aa_rounds.json`` (or ``--out``) with the machine and the settings.

Usage: python benchmarks/record_aa_rounds.py [--rounds 120] [--duration 0.5] [--design alternate]
       [--arrival poisson|constant] [--out tests/unit/data/aa_rounds.json]
Needs Docker and the local images (`netperf images build`). Everything started is removed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import time
import uuid
from pathlib import Path

from gate_power import set_cpus, topology

from pytest_netperf import defaults
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers import make_driver
from pytest_netperf.images.resolve import resolve_image
from pytest_netperf.measure.design import ALTERNATE, DESIGNS
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.docker import DockerRuntime

OUT = Path(__file__).resolve().parents[1] / "tests" / "unit" / "data" / "aa_rounds.json"
SETS = {
    "open": ("cpu_per_request[echo] <= 1.025x reference", "p90 <= 1.025x reference"),
    "closed": ("rps >= 0.975x reference",),
}


def record(args: argparse.Namespace, name: str, candidate: object, reference: object, **shape: object) -> dict:
    settings = GateSettings(
        round_duration_s=args.duration, warmup_s=args.warmup, round_warmup_s=args.round_warmup, design=args.design
    )
    budgets = [parse_budget(text) for text in SETS[name]]
    gate = Gate(f"record::{name}", budgets, settings, lambda n, r: make_driver("rust", r))
    began = time.monotonic()
    m = gate.compare(candidate, reference, rounds=args.rounds, **shape)
    assert m.reference is not None
    metrics = {
        b.metric: {"candidate": m.candidate.values(b.metric), "reference": m.reference.values(b.metric)}
        for b in budgets
    }
    print(f"{name}: {args.rounds} round pairs in {time.monotonic() - began:.0f} s", flush=True)
    return {"shape": {k: v for k, v in shape.items()}, "metrics": metrics}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=120, help="round pairs per set")
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--closed-connections", type=int, default=32)
    parser.add_argument("--duration", type=float, default=0.5)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--round-warmup", type=float, default=0.25)
    parser.add_argument("--arrival", default=defaults.ARRIVAL, help="gaps of the fixed-rate set")
    parser.add_argument("--design", default=ALTERNATE, choices=DESIGNS, help="how the sides share the runner")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _interrupt)
    session = f"aarec{uuid.uuid4().hex[:6]}"
    runtime = DockerRuntime(session, {"echo": resolve_image("echo")}, core_split=None)
    sets = {}
    try:
        ref_stack, cand_stack = runtime.up(topology("ref")), runtime.up(topology("cand"))
        set_cpus(ref_stack, 1.0)
        set_cpus(cand_stack, 1.0)
        ref, cand = ref_stack.endpoint("direct"), cand_stack.endpoint("direct")
        sets["open"] = record(
            args, "open", cand, ref, rate=args.rate, connections=args.connections, arrival=args.arrival
        )
        sets["closed"] = record(args, "closed", cand, ref, connections=args.closed_connections)
    finally:
        runtime.down_all()
        clean_session(session, runtime.client)
    document = {
        "what": "A/A paired rounds recorded by benchmarks/record_aa_rounds.py (candidate and reference unchanged)",
        "recorded": time.strftime("%Y-%m-%d"),
        "machine": {"cores": os.cpu_count(), "kernel": platform.release()},
        "round": {
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "round_warmup_s": args.round_warmup,
            "design": args.design,
            "arrival": args.arrival,
        },
        "sets": sets,
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {args.out}")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    main()
