"""Verdicts: unit behaviour, then calibration against simulated gates with known answers.

The calibration cases run the real sequential procedure (:func:`sequential_verdict`,
5 rounds growing by 5 up to 15 while INCONCLUSIVE) on seeded synthetic data:

* RPS per round: log-normal noise (CV 3-8%), a drift shared by the two rounds of a pair
  (a random walk over the run plus a per-pair jolt, larger than the noise itself), and
  occasional disturbed rounds (3% of rounds lose 25%);
* p90 per round: log-normal noise plus a right-skewed (gamma) term, the same drift, and
  occasional slow rounds (3% of rounds are 50% slower).

Rates are asserted with a binomial margin (99.9% quantile) around the target.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Optional

import numpy as np
import pytest
from scipy import stats as scipy_stats

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.measure.outcomes import BudgetOutcome
from pytest_netperf.plugin.session import _why_undecided
from pytest_netperf.verdict.error_control import alpha_for_look, holm_adjust, planned_looks
from pytest_netperf.verdict.sequential import Rounds, SequentialPlan, sequential_verdict
from pytest_netperf.verdict.stats import (
    Status,
    Verdict,
    apply_holm,
    evaluate,
)

GATES = 2000  # hardest calibration cases
QUICK_GATES = 1000  # detection and loose-budget cases
MAX_ROUNDS = 15
BASELINE_ROUNDS = 10
MS = 1e6


# ----- noise models ----------------------------------------------------------------------
def _pair_drift(rng: np.random.Generator, gates: int, n: int, sd: float = 0.10) -> np.ndarray:
    walk = np.cumsum(rng.normal(0.0, sd / 3, (gates, n)), axis=1)
    return walk + rng.normal(0.0, sd, (gates, n))


def _disturbed(rng: np.random.Generator, shape: tuple[int, int], factor: float, p: float) -> np.ndarray:
    return np.where(rng.random(shape) < p, factor, 1.0)


def rps_pairs(
    rng: np.random.Generator,
    ratio: float,
    cv: float = 0.05,
    gates: int = GATES,
    n: int = MAX_ROUNDS,
    outlier_p: float = 0.03,
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate and reference RPS for ``gates`` gates of ``n`` interleaved pairs."""
    drift = _pair_drift(rng, gates, n)
    shape = (gates, n)
    ref = 10_000 * np.exp(drift + rng.normal(0, cv, shape)) * _disturbed(rng, shape, 0.75, outlier_p)
    cand = 10_000 * ratio * np.exp(drift + rng.normal(0, cv, shape))
    return cand * _disturbed(rng, shape, 0.75, outlier_p), ref


def rps_unpaired(
    rng: np.random.Generator,
    ratio: float,
    cv: float = 0.05,
    gates: int = GATES,
    n: int = MAX_ROUNDS,
    outlier_p: float = 0.03,
) -> np.ndarray:
    """RPS rounds of separate runs (a baseline cannot share the candidate's drift)."""
    shape = (gates, n)
    return 10_000 * ratio * np.exp(rng.normal(0, cv, shape)) * _disturbed(rng, shape, 0.75, outlier_p)


def _p90(rng: np.random.Generator, drift: np.ndarray, cv: float, outlier_p: float) -> np.ndarray:
    base = 5 * MS
    skew = rng.gamma(2.0, 0.02 * base, drift.shape)
    return (base * np.exp(drift + rng.normal(0, cv, drift.shape)) + skew) * _disturbed(rng, drift.shape, 1.5, outlier_p)


def p90_pairs(
    rng: np.random.Generator,
    added_ns: float,
    cv: float = 0.05,
    gates: int = GATES,
    n: int = MAX_ROUNDS,
    outlier_p: float = 0.03,
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate and reference p90 (ns); the candidate adds exactly ``added_ns`` on average."""
    drift = _pair_drift(rng, gates, n)
    return _p90(rng, drift, cv, outlier_p) + added_ns, _p90(rng, drift, cv, outlier_p)


def p90_unpaired(
    rng: np.random.Generator,
    added_ns: float,
    cv: float = 0.05,
    gates: int = GATES,
    n: int = MAX_ROUNDS,
    outlier_p: float = 0.03,
) -> np.ndarray:
    """p90 rounds of separate runs (no shared drift)."""
    return _p90(rng, np.zeros((gates, n)), cv, outlier_p) + added_ns


# ----- running simulated gates -------------------------------------------------------------
def run_gates(
    budget: str,
    cand: np.ndarray,
    ref: Optional[np.ndarray] = None,
    base: Optional[np.ndarray] = None,
) -> list[Verdict]:
    """One sequential gate per row; ``measure(k)`` hands out the row's next k rounds."""
    parsed = parse_budget(budget)
    verdicts = []
    for gate in range(cand.shape[0]):
        taken = [0]

        def measure(k: int, gate: int = gate, taken: list[int] = taken) -> Rounds:
            window = slice(taken[0], taken[0] + k)
            taken[0] += k
            return Rounds(cand[gate, window], None if ref is None else ref[gate, window])

        baseline = None if base is None else base[gate]
        verdicts.append(sequential_verdict(parsed, measure, baseline))
    return verdicts


def count(verdicts: list[Verdict], status: Status) -> int:
    return sum(v.status is status for v in verdicts)


def at_most(rate: float, n: int) -> int:
    """Largest count still consistent with a true rate of ``rate`` (99.9% quantile)."""
    return int(scipy_stats.binom.ppf(0.999, n, rate))


def at_least(rate: float, n: int) -> int:
    """Smallest count still consistent with a true rate of ``rate`` (0.1% quantile)."""
    return int(scipy_stats.binom.ppf(0.001, n, rate))


# ----- unit behaviour -------------------------------------------------------------------------
def test_clear_regression_fails_and_reports_interval_in_budget_units() -> None:
    ref = [10_000, 10_200, 9_900, 10_100, 10_050]
    cand = [8_000, 8_100, 7_950, 8_050, 8_020]
    verdict = evaluate("rps_loss <= 10%", cand, ref)
    assert verdict.status is Status.FAIL
    assert 0.19 < verdict.ci_low < verdict.estimate < verdict.ci_high < 0.21
    assert verdict.threshold == pytest.approx(0.10)
    assert verdict.p_value < 0.05
    assert verdict.mde_unit == "relative" and 0 < verdict.mde < 0.05
    assert "rps_loss <= 10%" in verdict.describe() and "FAIL" in verdict.describe()


def test_equal_targets_pass_a_loose_budget() -> None:
    ref = [10_000, 10_200, 9_900, 10_100, 10_050]
    cand = [10_020, 10_150, 9_950, 10_080, 10_010]
    verdict = evaluate("rps >= 0.9x reference", cand, ref)
    assert verdict.status is Status.PASS
    assert verdict.ci_low > 0.9
    assert verdict.p_value == pytest.approx(1.0, abs=1e-6)


def test_straddling_interval_is_inconclusive() -> None:
    ref = [10_000, 10_000, 10_000, 10_000, 10_000]
    cand = [9_000, 10_900, 9_300, 10_600, 10_000]
    verdict = evaluate("rps_loss <= 1%", cand, ref)
    assert verdict.status is Status.INCONCLUSIVE
    assert verdict.ci_low < 0.01 < verdict.ci_high


def test_pairing_cancels_drift_shared_by_a_pair() -> None:
    drift = np.array([1.0, 1.3, 0.8, 1.15, 0.9])
    ref = 10_000 * drift * np.array([1.0, 1.01, 0.99, 1.0, 1.005])
    cand = 0.9 * 10_000 * drift * np.array([1.01, 1.0, 1.0, 0.99, 1.0])
    paired = evaluate("rps >= 0.95x reference", cand, ref)
    unpaired = evaluate("rps >= 0.95x baseline", cand, baseline=ref)
    assert paired.status is Status.FAIL
    assert unpaired.status is Status.INCONCLUSIVE


def test_added_latency_uses_differences_in_nanoseconds() -> None:
    ref = np.array([5.0, 5.2, 4.9, 5.1, 5.0]) * MS
    cand = ref + np.array([2.0, 2.1, 1.9, 2.05, 1.95]) * MS
    verdict = evaluate("p90_added <= 1ms", cand, ref)
    assert verdict.status is Status.FAIL
    assert verdict.estimate == pytest.approx(2.0 * MS, rel=0.01)
    assert verdict.mde_unit == "ns"
    assert "2ms" in verdict.describe()


def test_ratio_and_absolute_latency_budgets() -> None:
    ref = np.array([5.0, 5.2, 4.9, 5.1, 5.0]) * MS
    cand = ref * np.array([1.05, 1.04, 1.06, 1.05, 1.05])
    assert evaluate("p99 <= 1.2x reference", cand, ref).status is Status.PASS
    assert evaluate("p99 <= 1.01x reference", cand, ref).status is Status.FAIL
    assert evaluate("p90 < 6ms", cand).status is Status.PASS
    assert evaluate("p90 < 5ms", cand).status is Status.FAIL
    assert evaluate("mean > 10ms", cand).status is Status.FAIL


def test_baseline_comparison_is_unpaired_and_may_differ_in_length() -> None:
    base = [10_000, 10_100, 9_950, 10_050, 9_980, 10_020, 10_010]
    cand = [9_000, 9_050, 8_980, 9_020, 9_010]
    verdict = evaluate("rps >= 0.95x baseline", cand, baseline=base)
    assert verdict.status is Status.FAIL
    assert "Yuen-Welch" in verdict.method and "5 vs 7" in verdict.method
    assert evaluate("rps_loss <= 15% vs baseline", cand, baseline=base).status is Status.PASS
    latency = evaluate(
        "p90_added <= 200us vs baseline",
        [5.1 * MS] * 3 + [5.12 * MS],
        baseline=[5.0 * MS, 5.02 * MS, 4.98 * MS],
    )
    assert latency.status is Status.PASS


def test_per_hop_divides_by_depth() -> None:
    ref = np.array([5.0, 5.2, 4.9, 5.1, 5.0]) * MS
    noise = np.array([0.05, -0.04, 0.02, -0.03, 0.0]) * MS
    at_three = evaluate("p90_added <= 1ms per hop", ref + 2.4 * MS + noise, ref, hops=3)
    assert at_three.status is Status.PASS
    assert at_three.estimate == pytest.approx(0.8 * MS, rel=0.01)
    at_five = evaluate("p90_added <= 1ms per hop", ref + 7.5 * MS + noise, ref, hops=5)
    assert at_five.status is Status.FAIL
    assert at_five.estimate == pytest.approx(1.5 * MS, rel=0.01)


def test_per_hop_needs_hops_and_others_refuse_them() -> None:
    with pytest.raises(ValueError, match="per hop"):
        evaluate("p90_added <= 1ms per hop", [1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="not per hop"):
        evaluate("p90_added <= 1ms", [1.0, 2.0], [1.0, 2.0], hops=2)


def test_missing_or_mismatched_comparison_data_is_an_error() -> None:
    with pytest.raises(ValueError, match="reference"):
        evaluate("rps_loss <= 10%", [1.0, 2.0])
    with pytest.raises(ValueError, match="baseline"):
        evaluate("rps >= 0.9x baseline", [1.0, 2.0])
    with pytest.raises(ValueError, match="differ in number"):
        evaluate("rps_loss <= 10%", [1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="non-finite"):
        evaluate("rps >= 5", [1.0, float("nan")])


def test_one_round_is_inconclusive_and_identical_rounds_are_exact() -> None:
    assert evaluate("rps >= 5", [10.0]).status is Status.INCONCLUSIVE
    same = evaluate("rps >= 0.9x reference", [9.5, 9.5, 9.5], [10.0, 10.0, 10.0])
    assert same.status is Status.PASS and same.ci_low == same.ci_high == pytest.approx(0.95)
    worse = evaluate("rps >= 0.9x reference", [8.5, 8.5, 8.5], [10.0, 10.0, 10.0])
    assert worse.status is Status.FAIL and worse.p_value == 0.0


def test_zero_rps_round_falls_back_to_plain_ratios() -> None:
    verdict = evaluate("rps >= 0.9x reference", [0.0, 0.0, 0.0, 10.0], [100.0, 101.0, 99.0, 100.0])
    assert "ratios (some <= 0)" in verdict.method
    assert verdict.estimate == pytest.approx(0.025, abs=0.001)
    assert verdict.status is Status.FAIL


def test_count_budgets_are_exact() -> None:
    errors = evaluate("errors == 0", [0, 0, 3, 0])
    assert errors.status is Status.FAIL and errors.estimate == 3 and errors.exact
    assert evaluate("errors <= 5", [1, 2, 2]).status is Status.PASS
    assert evaluate("errors <= 5", [1, 2, 3]).status is Status.FAIL
    weighted = evaluate("error_rate <= 1%", [0.0, 0.05], attempts=[1900, 100])
    assert weighted.estimate == pytest.approx(0.0025) and weighted.status is Status.PASS
    assert evaluate("error_rate <= 1%", [0.0, 0.05]).status is Status.FAIL  # unweighted mean
    sockets = evaluate("sockets <= 100", [100, 100, 250, 100])
    assert sockets.status is Status.FAIL and sockets.estimate == 250
    assert "FAIL errors == 0: 3 over 4 rounds" in errors.describe()


def test_alpha_spending_adds_up_to_alpha_and_front_loads() -> None:
    for rule in ("pocock", "bonferroni"):
        levels = [alpha_for_look(0.05, k, 3, rule) for k in (1, 2, 3)]
        assert sum(levels) == pytest.approx(0.05)
    pocock = [alpha_for_look(0.05, k, 3) for k in (1, 2, 3)]
    assert pocock[0] > pocock[1] > pocock[2] > 0
    assert alpha_for_look(0.05, 1, 1) == pytest.approx(0.05)
    assert planned_looks(5, 15, 5) == 3 and planned_looks(5, 15, 4) == 4 and planned_looks(5, 5, 5) == 1
    with pytest.raises(ValueError):
        alpha_for_look(0.05, 4, 3)
    with pytest.raises(ValueError):
        alpha_for_look(0.05, 1, 3, "magic")


def test_later_looks_use_stricter_levels() -> None:
    ref = [10_000, 10_200, 9_900, 10_100, 10_050]
    cand = [9_500, 9_900, 9_300, 9_700, 9_650]
    first = evaluate("rps >= 1.0x reference", cand, ref)
    third = evaluate("rps >= 1.0x reference", cand, ref, looks=3, look_index=3)
    assert third.alpha_look < first.alpha_look
    assert third.ci_high - third.ci_low > first.ci_high - first.ci_low
    assert third.p_value == pytest.approx(first.p_value * 0.05 / third.alpha_look)


def test_sequential_verdict_stops_when_decided_and_caps_rounds() -> None:
    asked: list[int] = []

    def clear(k: int) -> Rounds:
        asked.append(k)
        return Rounds([8_000.0 + i for i in range(k)], [10_000.0 - i for i in range(k)])

    assert sequential_verdict("rps_loss <= 10%", clear).status is Status.FAIL
    assert asked == [5]

    asked.clear()
    rng = np.random.default_rng(3)

    def leaning(k: int) -> Rounds:  # 15% below the reference, too noisy to decide in 12 rounds
        asked.append(k)
        ref = 10_000 * np.exp(rng.normal(0, 0.2, k))
        return Rounds(0.85 * ref * np.exp(rng.normal(0, 0.2, k)), ref)

    verdict = sequential_verdict("rps >= 1.0x reference", leaning, plan=SequentialPlan(max_rounds=12, batch=4))
    assert asked == [5, 4, 3]
    assert verdict.n_rounds == 12 and verdict.looks == 3 and verdict.look_index == 3
    assert verdict.status in (Status.INCONCLUSIVE, Status.FAIL) and not verdict.undecidable  # kept measuring


def _fixed_log_ratios(ratios: list[float]) -> Callable[[int], Rounds]:
    """Rounds whose log ratios (candidate over reference) repeat ``ratios`` in order."""
    asked: list[int] = []

    def measure(k: int) -> Rounds:
        start = sum(asked)
        asked.append(k)
        logs = [ratios[(start + i) % len(ratios)] for i in range(k)]
        return Rounds([10_000 * math.exp(x) for x in logs], [10_000.0] * k)

    measure.asked = asked  # type: ignore[attr-defined]
    return measure


def test_a_budget_the_runner_cannot_decide_stops_at_the_first_look_and_says_what_it_could() -> None:
    # 22% spread per pair, the candidate reading 8% better: even a truth two standard
    # errors worse could not fail a budget 2.5% from no change within 32 rounds
    measure = _fixed_log_ratios([0.30, -0.20, 0.25, -0.10, 0.15])
    verdict = sequential_verdict("rps >= 0.975x reference", measure, plan=SequentialPlan(max_rounds=32, batch=4))
    assert measure.asked == [5], "no rounds spent on a budget this noise cannot decide"
    assert verdict.status is Status.INCONCLUSIVE and verdict.look_index == 1
    found = re.search(r"even 32 rounds would only resolve changes of about (\d+\.\d)%", verdict.undecidable)
    assert found and float(found.group(1)) > 2.5, verdict.undecidable
    assert verdict.undecidable.endswith("and the budget allows 2.5%")
    assert 0.0 < verdict.p_change < 1.0


def test_a_budget_a_regression_could_still_fail_keeps_measuring() -> None:
    # the same spread reading no change: a truth one standard error worse could not fail it,
    # two could; alternating throughput gates of a real 5% cut stopped here when one was the reach
    centred = [0.22, -0.28, 0.17, -0.18, 0.07]
    measure = _fixed_log_ratios(centred)
    verdict = sequential_verdict("rps >= 0.975x reference", measure, plan=SequentialPlan(max_rounds=32, batch=4))
    assert measure.asked[:2] == [5, 4]
    assert verdict.status is Status.INCONCLUSIVE
    # an estimate past the budget keeps measuring however wide the interval, to the last
    # look, where the final INCONCLUSIVE says what the rounds resolve
    past = _fixed_log_ratios([x - 0.05 for x in centred])
    verdict = sequential_verdict("rps >= 0.975x reference", past, plan=SequentialPlan(max_rounds=32, batch=4))
    assert sum(past.asked) == 32 and verdict.status is Status.INCONCLUSIVE
    assert verdict.undecidable.startswith("cannot be decided on this runner: these 32 rounds resolve changes of about")


def test_a_decidable_budget_is_never_called_undecidable() -> None:
    rng = np.random.default_rng(5)

    def quiet(k: int) -> Rounds:  # 1% noise: a 2.5% budget is well within reach
        ref = 10_000 * np.exp(rng.normal(0, 0.01, k))
        return Rounds(ref * np.exp(rng.normal(0, 0.01, k)), ref)

    verdict = sequential_verdict("rps >= 0.975x reference", quiet, plan=SequentialPlan(max_rounds=32, batch=4))
    assert verdict.status is Status.PASS and not verdict.undecidable


def test_holm_adjust_matches_the_step_down_definition() -> None:
    assert holm_adjust([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm_adjust([]) == []
    with pytest.raises(ValueError):
        holm_adjust([1.2])


def test_apply_holm_demotes_a_weak_fail_and_keeps_exact_verdicts() -> None:
    ref = [10_000, 10_200, 9_900, 10_100, 10_050]
    strong = evaluate("rps_loss <= 10%", [8_000, 8_100, 7_950, 8_050, 8_020], ref)
    weak = evaluate("rps >= 1.0x reference", [9_750, 10_150, 9_650, 10_050, 9_900], ref)
    assert weak.status is Status.FAIL and 0.0125 < weak.p_value < 0.05
    errors = evaluate("errors == 0", [0, 1])
    others = [evaluate("rps >= 1.0x reference", ref, ref) for _ in range(3)]
    adjusted = apply_holm([strong, weak, errors, *others], alpha=0.05)
    # family of 5 (the count verdict is exact and stays outside): weak needs p < 0.05/4
    assert adjusted[0].status is Status.FAIL
    assert adjusted[1].status is Status.INCONCLUSIVE
    assert adjusted[1].p_adjusted == pytest.approx(4 * weak.p_value)
    assert "Holm" in adjusted[1].note
    assert adjusted[2].status is Status.FAIL and adjusted[2].p_adjusted == 0.0
    assert [v.status for v in apply_holm([strong, weak], alpha=0.05)] == [Status.FAIL] * 2


# ----- calibration: same-run reference -------------------------------------------------------
@pytest.mark.parametrize("cv", [0.03, 0.08])
def test_aa_with_threshold_at_the_true_ratio_rarely_fails(cv: float) -> None:
    rng = np.random.default_rng(101)
    verdicts = run_gates("rps >= 1.0x reference", *rps_pairs(rng, 1.0, cv))
    fails = count(verdicts, Status.FAIL)
    assert fails <= at_most(0.05, GATES), f"{fails}/{GATES} false FAILs"
    assert fails >= 5, "the hardest case should produce some FAILs, or the check is blind"


def test_aa_loss_budget_at_the_true_loss_rarely_fails() -> None:
    rng = np.random.default_rng(102)
    verdicts = run_gates("rps_loss <= 10%", *rps_pairs(rng, 0.9, 0.05))
    assert count(verdicts, Status.FAIL) <= at_most(0.05, len(verdicts))


def test_without_alpha_spending_repeated_looks_would_fail_too_often() -> None:
    """The same data judged at 5, 10 and 15 rounds with the full alpha at every look."""
    rng = np.random.default_rng(101)
    cand, ref = rps_pairs(rng, 1.0, 0.08)
    naive_fails = 0
    for gate in range(GATES):
        for n in (5, 10, 15):
            status = evaluate("rps >= 1.0x reference", cand[gate, :n], ref[gate, :n]).status
            if status is not Status.INCONCLUSIVE:
                naive_fails += status is Status.FAIL
                break
    assert naive_fails > at_most(0.05, GATES)


def test_aa_with_a_loose_budget_never_fails() -> None:
    rng = np.random.default_rng(103)
    verdicts = run_gates("rps_loss <= 10%", *rps_pairs(rng, 1.0, 0.05, gates=QUICK_GATES))
    assert count(verdicts, Status.FAIL) <= 1
    assert count(verdicts, Status.PASS) >= at_least(0.85, len(verdicts))


def test_ten_percent_loss_is_detected_against_no_regression() -> None:
    rng = np.random.default_rng(104)
    verdicts = run_gates("rps >= 1.0x reference", *rps_pairs(rng, 0.9, 0.05, gates=QUICK_GATES))
    assert count(verdicts, Status.FAIL) >= at_least(0.90, len(verdicts))
    assert count(verdicts, Status.PASS) == 0
    assert np.mean([v.n_rounds for v in verdicts]) < 10


def test_unpaired_analysis_of_drifting_pairs_would_miss_the_loss() -> None:
    """Why pairing: the first 5 drifting pairs judged paired, then as if unpaired."""
    rng = np.random.default_rng(104)
    cand, ref = rps_pairs(rng, 0.9, 0.05, gates=QUICK_GATES, n=5)
    paired = [evaluate("rps >= 1.0x reference", cand[g], ref[g]) for g in range(QUICK_GATES)]
    unpaired = [evaluate("rps >= 1.0x baseline", cand[g], baseline=ref[g]) for g in range(QUICK_GATES)]
    assert count(paired, Status.FAIL) > 2 * count(unpaired, Status.FAIL)


def test_added_latency_at_the_budget_rarely_fails() -> None:
    rng = np.random.default_rng(105)
    verdicts = run_gates("p90_added <= 1ms", *p90_pairs(rng, 1 * MS))
    assert count(verdicts, Status.FAIL) <= at_most(0.05, len(verdicts))


def test_no_added_latency_passes_and_two_ms_added_fails() -> None:
    rng = np.random.default_rng(106)
    none_added = run_gates("p90_added <= 1ms", *p90_pairs(rng, 0.0, gates=QUICK_GATES))
    assert count(none_added, Status.FAIL) <= 1
    assert count(none_added, Status.PASS) >= at_least(0.95, QUICK_GATES)
    two_added = run_gates("p90_added <= 1ms", *p90_pairs(rng, 2 * MS, gates=QUICK_GATES))
    assert count(two_added, Status.FAIL) >= at_least(0.90, QUICK_GATES)


def test_aa_latency_ratio_with_skewed_noise_rarely_fails() -> None:
    rng = np.random.default_rng(107)
    verdicts = run_gates("p99 <= 1.0x reference", *p90_pairs(rng, 0.0, cv=0.08))
    assert count(verdicts, Status.FAIL) <= at_most(0.05, len(verdicts))


# ----- calibration: stored baseline and absolute ---------------------------------------------
def test_aa_against_baseline_at_the_threshold_rarely_fails() -> None:
    rng = np.random.default_rng(201)
    cand = rps_unpaired(rng, 1.0)
    base = rps_unpaired(rng, 1.0, n=BASELINE_ROUNDS)
    verdicts = run_gates("rps >= 1.0x baseline", cand, base=base)
    assert count(verdicts, Status.FAIL) <= at_most(0.05, len(verdicts))


def test_baseline_with_a_noisier_candidate_rarely_fails() -> None:
    """Rank bounds assume a pure shift; a candidate twice as noisy must not break them."""
    rng = np.random.default_rng(205)
    cand = rps_unpaired(rng, 1.0, cv=0.08, outlier_p=0.0)
    base = rps_unpaired(rng, 1.0, cv=0.03, n=BASELINE_ROUNDS, outlier_p=0.0)
    verdicts = run_gates("rps >= 1.0x baseline", cand, base=base)
    assert count(verdicts, Status.FAIL) <= at_most(0.05, len(verdicts))


def test_ten_percent_loss_against_baseline_is_detected() -> None:
    rng = np.random.default_rng(202)
    cand = rps_unpaired(rng, 0.9, gates=QUICK_GATES)
    base = rps_unpaired(rng, 1.0, n=BASELINE_ROUNDS, gates=QUICK_GATES)
    verdicts = run_gates("rps >= 1.0x baseline", cand, base=base)
    assert count(verdicts, Status.FAIL) >= at_least(0.90, len(verdicts))


def test_added_latency_against_baseline_is_calibrated_and_detected() -> None:
    rng = np.random.default_rng(203)
    base = p90_unpaired(rng, 0.0, n=BASELINE_ROUNDS, gates=QUICK_GATES)
    at_budget = run_gates("p90_added <= 1ms vs baseline", p90_unpaired(rng, 1 * MS, gates=QUICK_GATES), base=base)
    assert count(at_budget, Status.FAIL) <= at_most(0.05, QUICK_GATES)
    over = run_gates("p90_added <= 1ms vs baseline", p90_unpaired(rng, 2 * MS, gates=QUICK_GATES), base=base)
    assert count(over, Status.FAIL) >= at_least(0.90, QUICK_GATES)


def test_absolute_latency_at_the_true_geometric_mean_rarely_fails() -> None:
    rng = np.random.default_rng(204)
    true_ns = 5 * MS
    cand = true_ns * np.exp(rng.normal(0.0, 0.06, (GATES, MAX_ROUNDS)))
    verdicts = run_gates(f"p90 <= {true_ns:.0f}ns", cand)
    assert count(verdicts, Status.FAIL) <= at_most(0.05, len(verdicts))
    assert count(verdicts, Status.FAIL) >= 5


@pytest.mark.parametrize("n", [5, 10])
def test_interval_coverage_at_fixed_rounds(n: int) -> None:
    """Both one-sided bounds hold their level: the true ratio is outside each <= 5%."""
    rng = np.random.default_rng(300 + n)
    cand, ref = rps_pairs(rng, 1.0, 0.05, gates=GATES, n=n, outlier_p=0.0)
    below = above = 0
    for gate in range(GATES):
        v = evaluate("rps >= 1.0x reference", cand[gate], ref[gate])
        below += v.ci_high < 1.0
        above += v.ci_low > 1.0
    assert below <= at_most(0.05, GATES) and above <= at_most(0.05, GATES)
    assert below >= at_least(0.05, GATES) and above >= at_least(0.05, GATES)


# ----- calibration: several budgets at once ---------------------------------------------------
def test_holm_keeps_family_wise_false_fails_under_alpha() -> None:
    rng = np.random.default_rng(401)
    gates = 1000
    families = [run_gates("rps >= 1.0x reference", *rps_pairs(rng, 1.0, 0.08, gates=gates)) for _ in range(5)]
    any_fail_raw = any_fail_holm = 0
    for gate in range(gates):
        family = [verdicts[gate] for verdicts in families]
        any_fail_raw += any(v.status is Status.FAIL for v in family)
        any_fail_holm += any(v.status is Status.FAIL for v in apply_holm(family, 0.05))
    assert any_fail_holm <= at_most(0.05, gates)
    assert any_fail_raw > at_most(0.05, gates), "without Holm the family error should exceed 5%"


def test_the_inconclusive_warning_says_why_a_budget_stayed_undecided() -> None:
    rng = np.random.default_rng(3)

    def unchanged(k: int) -> Rounds:
        ref = 10_000 * np.exp(rng.normal(0, 0.2, k))
        return Rounds(ref * np.exp(rng.normal(0, 0.2, k)), ref)

    budget = parse_budget("rps >= 0.975x reference")
    verdict = sequential_verdict(budget, unchanged, plan=SequentialPlan(max_rounds=32, batch=4))
    undecided = BudgetOutcome("t.py::test", "default", budget, Status.INCONCLUSIVE, verdict, [], "reference")
    assert _why_undecided(undecided).startswith("cannot be decided on this runner: ")
    capped = BudgetOutcome("t.py::test", "default", budget, Status.INCONCLUSIVE, None, [], "reference")
    assert _why_undecided(capped) == "undecided after the maximum rounds"
