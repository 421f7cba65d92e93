"""What a final INCONCLUSIVE should do: the red-on-no-regression and detection rates of each policy.

A gate whose budget stays undecided after the maximum rounds needs a default: ``fail``
(red), ``warn`` (green with a warning) or ``estimate`` (red only when the point estimate is
on the wrong side of the budget). This prints, for seeded synthetic paired gates judged by
the real sequential procedure (:func:`~pytest_netperf.verdict.sequential.sequential_verdict`):

* how often each policy turns a gate red when the path is unchanged (A/A, true loss 0%) or
  changed well within the budget (true loss 2%): a red merge gate on no regression;
* how often it turns red on a real regression beyond the budget (true loss 8% and 10%);

for the budget ``rps_loss <= 5%``, at per-round noise (coefficient of variation of a round's
throughput) of 3%, 6% and 10%, the last two as measured on the shared 2-core machine, and
for the rounds plan of the examples (4, +4 while undecided, up to 12) and the defaults
(5, +5, up to 15).

Run: ``python benchmarks/inconclusive_policy.py [--gates N] [--seed S]`` (CPU only, ~1 min).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.verdict.sequential import Rounds, SequentialPlan, sequential_verdict
from pytest_netperf.verdict.status import Status

BUDGET = parse_budget("rps_loss <= 5%")
POLICIES = ("fail", "warn", "estimate")
TRUE_LOSSES = (0.0, 0.02, 0.08, 0.10)
NOISE = (0.03, 0.06, 0.10)
PLANS = {"examples 4/+4/12": SequentialPlan(4, 12, 4), "defaults 5/+5/15": SequentialPlan(5, 15, 5)}


def red(status: Status, estimate_bad: bool, policy: str) -> bool:
    """Whether the gate fails under ``policy`` (INVALID and NEW do not occur here)."""
    if status is Status.FAIL:
        return True
    if status is not Status.INCONCLUSIVE:
        return False
    return policy == "fail" or (policy == "estimate" and estimate_bad)


def simulate(rng: np.random.Generator, plan: SequentialPlan, loss: float, cv: float, gates: int) -> dict[str, float]:
    """Share of gates each policy turns red, and the share left INCONCLUSIVE."""
    reds = dict.fromkeys(POLICIES, 0)
    inconclusive = 0
    for _ in range(gates):
        drift = rng.normal(0.0, 0.05)  # the machine's speed this run: cancels within pairs

        def measure(k: int, drift: float = drift) -> Rounds:
            pair_drift = drift + rng.normal(0.0, cv / 2, k)
            ref = 10_000 * np.exp(pair_drift + rng.normal(0.0, cv, k))
            cand = 10_000 * (1 - loss) * np.exp(pair_drift + rng.normal(0.0, cv, k))
            return Rounds(candidate=cand.tolist(), reference=ref.tolist())

        verdict = sequential_verdict(BUDGET, measure, plan=plan)
        inconclusive += verdict.status is Status.INCONCLUSIVE
        estimate_bad = not BUDGET.satisfied_by(verdict.estimate)
        for policy in POLICIES:
            reds[policy] += red(verdict.status, estimate_bad, policy)
    return {**{p: reds[p] / gates for p in POLICIES}, "inconclusive": inconclusive / gates}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--gates", type=int, default=400, help="gates per cell (default 400)")
    parser.add_argument("--seed", type=int, default=20261122)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    began = time.monotonic()
    print(f"budget {BUDGET.text!r}; {args.gates} gates per row; share of gates that end red")
    header = f"{'plan':<18} {'noise':>5} {'true loss':>9} {'undecided':>9} " + " ".join(f"{p:>9}" for p in POLICIES)
    print(header)
    print("-" * len(header))
    for name, plan in PLANS.items():
        for cv in NOISE:
            for loss in TRUE_LOSSES:
                rates = simulate(rng, plan, loss, cv, args.gates)
                kind = "(no regression)" if BUDGET.satisfied_by(loss) else "(regression)"
                cells = " ".join(f"{rates[p]:>9.1%}" for p in POLICIES)
                print(f"{name:<18} {cv:>5.0%} {loss:>9.0%} {rates['inconclusive']:>9.1%} {cells}  {kind}")
    print(f"({time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
