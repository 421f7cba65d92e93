"""Why the verdicts use trimmed t intervals and alpha spending: simulated evidence.

Prints two tables for seeded synthetic gates (no network, CPU only, ~20-60 s):

1. Coverage of one-sided 95% bounds on a paired RPS ratio at 5/10/15 rounds, for the
   t interval on log ratios used by ``pytest_netperf.verdict.stats`` and for scipy's percentile
   and BCa bootstrap. A calibrated bound misses the true ratio in 5% of gates.
2. The full sequential procedure (5 rounds, +5 while INCONCLUSIVE, up to 15): FAIL and
   PASS rates for A/A gates with the threshold at the true value, for a loose budget,
   and for a true 10% loss, at several noise levels.

Run: ``python benchmarks/stats_calibration.py [--gates N]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special
from scipy import stats as scipy_stats

from pytest_netperf.verdict.sequential import Rounds, sequential_verdict
from pytest_netperf.verdict.status import Status


def paired_log_ratios(
    rng: np.random.Generator, gates: int, n: int, cv: float, outlier_p: float, ratio: float = 1.0
) -> np.ndarray:
    """Per-pair log(candidate/reference): pair drift cancels, noise and disturbed rounds stay."""
    shape = (gates, n)
    cand = np.log(ratio) + rng.normal(0, cv, shape) + np.where(rng.random(shape) < outlier_p, np.log(0.75), 0)
    ref = rng.normal(0, cv, shape) + np.where(rng.random(shape) < outlier_p, np.log(0.75), 0)
    return cand - ref


def t_miss_rates(log_ratios: np.ndarray, alpha: float) -> tuple[float, float]:
    """How often the lower / upper one-sided t bound misses a true log ratio of 0."""
    n = log_ratios.shape[1]
    mean = log_ratios.mean(axis=1)
    se = log_ratios.std(axis=1, ddof=1) / np.sqrt(n)
    half = special.stdtrit(n - 1, 1 - alpha) * se
    return float(np.mean(mean - half > 0)), float(np.mean(mean + half < 0))


def bootstrap_miss_rates(log_ratios: np.ndarray, alpha: float, method: str) -> tuple[float, float]:
    """Same for scipy's bootstrap (two-sided interval at 1 - 2 alpha = two one-sided bounds)."""
    result = scipy_stats.bootstrap(
        (log_ratios,),
        np.mean,
        axis=-1,
        vectorized=True,
        confidence_level=1 - 2 * alpha,
        n_resamples=1999,
        method=method,
        random_state=np.random.default_rng(0),
    )
    low, high = result.confidence_interval
    return float(np.mean(low > 0)), float(np.mean(high < 0))


def coverage_table(gates: int) -> None:
    print("One-sided 95% bounds on a paired ratio, true ratio 1.0, CV 5%, 3% disturbed rounds")
    print("miss rate of lower / upper bound (target 5.0% each)")
    print(f"{'rounds':>6}  {'t on log ratios':>18}  {'percentile boot':>18}  {'BCa boot':>18}")
    rng = np.random.default_rng(1)
    for n in (5, 10, 15):
        data = paired_log_ratios(rng, gates, n, 0.05, 0.03)
        cells = [t_miss_rates(data, 0.05)]
        for method in ("percentile", "BCa"):
            cells.append(bootstrap_miss_rates(data, 0.05, method))
        row = "  ".join(f"{lo:>8.1%} / {hi:<7.1%}" for lo, hi in cells)
        print(f"{n:>6}  {row}")


def sequential_rates(budget: str, log_ratios: np.ndarray) -> dict[str, float]:
    """Run the real sequential procedure on each row (reference fixed at 10k rps)."""
    counts = {s: 0 for s in Status}
    rounds = 0
    for row in log_ratios:
        taken = [0]

        def measure(k: int, row: np.ndarray = row, taken: list[int] = taken) -> Rounds:
            part = row[taken[0] : taken[0] + k]
            taken[0] += k
            return Rounds(10_000 * np.exp(part), np.full(k, 10_000.0))

        verdict = sequential_verdict(budget, measure)
        counts[verdict.status] += 1
        rounds += verdict.n_rounds
    total = len(log_ratios)
    rates = {s.value: c / total for s, c in counts.items()}
    rates["rounds"] = rounds / total
    return rates


def sequential_table(gates: int) -> None:
    print("\nSequential procedure (5 -> 10 -> 15 rounds, Pocock-type spending, 3% disturbed rounds)")
    print(f"{'case':<44} {'CV':>4} {'FAIL':>7} {'PASS':>7} {'INCONC':>7} {'rounds':>6}")
    rng = np.random.default_rng(2)
    cases = [
        ("A/A, rps >= 1.0x reference (threshold = truth)", "rps >= 1.0x reference", 1.0),
        ("A/A, rps_loss <= 10% (loose)", "rps_loss <= 10%", 1.0),
        ("true 10% loss, rps >= 1.0x reference", "rps >= 1.0x reference", 0.9),
        ("true 10% loss, rps_loss <= 10% (= truth)", "rps_loss <= 10%", 0.9),
    ]
    for cv in (0.03, 0.05, 0.08):
        for label, budget, ratio in cases:
            data = paired_log_ratios(rng, gates, 15, cv, 0.03, ratio)
            r = sequential_rates(budget, data)
            print(
                f"{label:<44} {cv:>4.0%} {r['FAIL']:>7.1%} {r['PASS']:>7.1%} "
                f"{r['INCONCLUSIVE']:>7.1%} {r['rounds']:>6.1f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gates", type=int, default=2000, help="simulated gates per cell")
    args = parser.parse_args()
    started = time.perf_counter()
    coverage_table(args.gates)
    sequential_table(args.gates)
    print(f"\n{args.gates} gates per cell, {time.perf_counter() - started:.1f}s")


if __name__ == "__main__":
    main()
