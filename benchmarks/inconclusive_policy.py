"""What a final INCONCLUSIVE should do: the red-on-no-regression and detection rates of each policy.

A gate whose budget stays undecided (after the maximum rounds, or early when this runner
cannot decide it) needs a default. This prints, for seeded synthetic paired gates judged by
the real sequential procedure (:func:`~pytest_netperf.verdict.sequential.sequential_verdict`)
and the real policies (:func:`~pytest_netperf.verdict.policy.undecided_fails`):

* how often each policy turns a gate red when nothing changed (A/A) or the change is
  within the budget: a red merge gate on no regression;
* how often it turns red on a real regression beyond the budget;
* the share left undecided and the mean rounds measured (time to a verdict).

Budgets: ``rps >= 0.975x reference`` (2.5% from no change, the tight budget of #25) with
true throughput changes of 0%, -5% and -10%; ``rps_loss <= 5%`` with true losses 0%, 2%, 8%,
10%. Per-round noise (coefficient of variation of a round's throughput) 3%, 6% and 10%, the
last two as measured on the shared 2-core machine; the defaults' plan (5, +5, up to 15).

Run: ``python benchmarks/inconclusive_policy.py [--gates N] [--seed S]`` (CPU only, ~2 min).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pytest_netperf.budget.grammar import Budget, parse_budget
from pytest_netperf.verdict.policy import POLICIES, undecided_fails
from pytest_netperf.verdict.sequential import Rounds, SequentialPlan, sequential_verdict
from pytest_netperf.verdict.status import Status

SHOWN = tuple(p for p in POLICIES if p != "pass")  # pass is warn without the warning
CASES: dict[str, tuple[float, ...]] = {
    "rps >= 0.975x reference": (0.0, 0.05, 0.10),
    "rps_loss <= 5%": (0.0, 0.02, 0.08, 0.10),
}
NOISE = (0.03, 0.06, 0.10)
PLAN = SequentialPlan()


def simulate(rng: np.random.Generator, budget: Budget, loss: float, cv: float, gates: int) -> dict[str, float]:
    """Share of gates each policy turns red, the share left INCONCLUSIVE, and the mean rounds."""
    reds = dict.fromkeys(SHOWN, 0)
    inconclusive = rounds = 0
    for _ in range(gates):
        drift = rng.normal(0.0, 0.05)  # the machine's speed this run: cancels within pairs

        def measure(k: int, drift: float = drift) -> Rounds:
            pair_drift = drift + rng.normal(0.0, cv / 2, k)
            ref = 10_000 * np.exp(pair_drift + rng.normal(0.0, cv, k))
            cand = 10_000 * (1 - loss) * np.exp(pair_drift + rng.normal(0.0, cv, k))
            return Rounds(candidate=cand.tolist(), reference=ref.tolist())

        verdict = sequential_verdict(budget, measure, plan=PLAN)
        inconclusive += verdict.status is Status.INCONCLUSIVE
        rounds += verdict.n_rounds
        for policy in SHOWN:
            red = verdict.status is Status.FAIL or (
                verdict.status is Status.INCONCLUSIVE and undecided_fails(budget, verdict, policy)
            )
            reds[policy] += red
    return {**{p: reds[p] / gates for p in SHOWN}, "inconclusive": inconclusive / gates, "rounds": rounds / gates}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--gates", type=int, default=400, help="gates per cell (default 400)")
    parser.add_argument("--seed", type=int, default=20261125)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    began = time.monotonic()
    plan = f"{PLAN.min_rounds}/+{PLAN.batch}/{PLAN.max_rounds}"
    print(f"{args.gates} gates per row, plan {plan}; share of gates that end red")
    header = f"{'budget':<24} {'noise':>5} {'change':>6} {'undecided':>9} {'rounds':>6} " + " ".join(
        f"{p:>8}" for p in SHOWN
    )
    print(header)
    print("-" * len(header))
    for text, losses in CASES.items():
        budget = parse_budget(text)
        for cv in NOISE:
            for loss in losses:
                rates = simulate(rng, budget, loss, cv, args.gates)
                held = budget.satisfied_by(1 - loss if budget.form == "ratio" else loss)
                kind = "(no regression)" if held else "(regression)"
                cells = " ".join(f"{rates[p]:>8.1%}" for p in SHOWN)
                print(
                    f"{text:<24} {cv:>5.0%} {-loss:>6.0%} {rates['inconclusive']:>9.1%} {rates['rounds']:>6.1f} "
                    f"{cells}  {kind}"
                )
    print(f"({time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
