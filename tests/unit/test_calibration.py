"""Noise floor: estimates with known answers, detectable effects checked by simulation,
budget warnings, and JSON storage."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from pytest_netperf.errors import BaselineError
from pytest_netperf.results.model import LatencySummary, RoundResult
from pytest_netperf.verdict.calibration import (
    NOISE_FILE_NAME,
    MetricNoise,
    NoiseFloor,
    check_budget_against_noise,
    estimate_noise,
    load_noise,
    min_detectable_effect,
    noise_path,
    rounds_needed,
    save_noise,
)
from pytest_netperf.verdict.stats import Status, evaluate

MS = 1e6


def aa_rounds(rng: np.random.Generator, pairs: int, cv: float = 0.05, drift_sd: float = 0.10):
    """Interleaved A/A values: both sides share a per-pair drift, each has its own noise."""
    drift = rng.normal(0.0, drift_sd, pairs)

    def side(scale: float) -> np.ndarray:
        return scale * np.exp(drift + rng.normal(0.0, cv, pairs))

    a = {"rps": side(10_000.0), "p90": side(5 * MS)}
    b = {"rps": side(10_000.0), "p90": side(5 * MS)}
    return a, b


def round_result(rps: float, p90_ns: float) -> RoundResult:
    """A real result-model round (as a driver would produce) with the given values."""
    latency = LatencySummary(
        count=1000,
        min_ns=p90_ns / 4,
        mean_ns=p90_ns / 2,
        max_ns=p90_ns * 3,
        stdev_ns=p90_ns / 5,
        p50_ns=p90_ns / 2,
        p90_ns=p90_ns,
        p99_ns=p90_ns * 1.5,
        p999_ns=p90_ns * 2,
    )
    return RoundResult(
        driver="rust",
        target="http://127.0.0.1:8080/",
        mode="closed",
        duration_s=5.0,
        requested_rps=None,
        achieved_rps=rps,
        requests=int(rps * 5),
        ok=int(rps * 5),
        non_2xx=0,
        status_codes={"200": int(rps * 5)},
        errors={},
        sockets_opened=10,
        reconnects=0,
        bytes_sent=0,
        bytes_received=0,
        latency=latency,
    )


def test_estimate_recovers_known_noise() -> None:
    a, b = aa_rounds(np.random.default_rng(1), pairs=4000, cv=0.05, drift_sd=0.10)
    noise = estimate_noise(a, b, fingerprint={"cpu": "test"}, measured_at="2024-01-01T00:00:00+00:00")
    rps = noise.for_metric("rps")
    assert rps is not None and rps.n == 4000 and noise.n == 4000
    assert rps.pair_cv == pytest.approx(math.sqrt(2) * 0.05, rel=0.05)  # drift cancels
    assert rps.round_cv == pytest.approx(math.hypot(0.05, 0.10), rel=0.05)  # drift stays
    assert rps.diff_sd == pytest.approx(rps.pair_cv * rps.mean, rel=0.1)
    assert rps.mean == pytest.approx(10_000 * math.exp((0.05**2 + 0.10**2) / 2), rel=0.01)
    assert noise.for_metric("p99") is None
    assert noise.fingerprint == {"cpu": "test"}


def test_estimate_from_round_results() -> None:
    rng = np.random.default_rng(2)
    a, b = aa_rounds(rng, pairs=6)
    rounds_a = [round_result(r, p) for r, p in zip(a["rps"], a["p90"], strict=True)]
    rounds_b = [round_result(r, p) for r, p in zip(b["rps"], b["p90"], strict=True)]
    noise = estimate_noise(rounds_a, rounds_b)
    assert set(noise.metrics) == {"rps", "p50", "p90", "p99", "p999", "mean", "max"}
    expected = np.std(np.log(a["rps"]) - np.log(b["rps"]), ddof=1)
    assert noise.for_metric("rps").pair_cv == pytest.approx(expected)  # type: ignore[union-attr]
    assert noise.measured_at.endswith("+00:00")


def test_estimate_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="differ in number"):
        estimate_noise({"rps": [1.0, 2.0, 3.0]}, {"rps": [1.0, 2.0]})
    with pytest.raises(ValueError, match="at least 2 pairs"):
        estimate_noise({"rps": [1.0]}, {"rps": [1.0]})
    with pytest.raises(ValueError, match="no metric"):
        estimate_noise({"rps": [0.0, 1.0]}, {"rps": [1.0, 1.0]})


def test_detectable_effect_has_the_promised_power() -> None:
    """A true loss equal to the computed MDE is found (FAIL vs no regression) ~80% of the time."""
    rng = np.random.default_rng(3)
    noise = MetricNoise(pair_cv=0.07, round_cv=0.05, diff_sd=700.0, round_sd=500.0, mean=1e4, n=20)
    rounds, gates = 8, 2000
    mde = min_detectable_effect(noise, rounds, 0.95, 0.8)
    log_ratio = -math.log1p(mde) + rng.normal(0.0, noise.pair_cv, (gates, rounds))
    ref = np.full(rounds, 10_000.0)
    fails = sum(
        evaluate("rps >= 1.0x reference", ref * np.exp(log_ratio[g]), ref).status is Status.FAIL for g in range(gates)
    )
    low, high = scipy_stats.binom.ppf([0.001, 0.999], gates, 0.8)
    assert low <= fails <= high, f"{fails}/{gates} detected at the MDE {mde:.2%}"


def test_detectable_effect_shrinks_with_rounds_and_grows_unpaired() -> None:
    noise = MetricNoise(pair_cv=0.04, round_cv=0.10, diff_sd=0.2 * MS, round_sd=0.5 * MS, mean=5 * MS, n=10)
    paired = [min_detectable_effect(noise, n) for n in (5, 10, 15)]
    assert paired[0] > paired[1] > paired[2] > 0
    assert min_detectable_effect(noise, 10, comparison="baseline") > paired[1]
    assert min_detectable_effect(noise, 10, comparison="baseline", baseline_rounds=100) < (
        min_detectable_effect(noise, 10, comparison="baseline")
    )
    assert min_detectable_effect(noise, 15, looks=3) > paired[2]
    in_ns = min_detectable_effect(noise, 10, relative=False)
    assert 0.1 * MS < in_ns < 1 * MS
    assert min_detectable_effect(noise, 1) == math.inf
    with pytest.raises(ValueError, match="comparison"):
        min_detectable_effect(noise, 5, comparison="sideways")


def test_rounds_needed_is_the_first_count_that_resolves_the_effect() -> None:
    noise = MetricNoise(pair_cv=0.05, round_cv=0.05, diff_sd=1.0, round_sd=1.0, mean=1.0, n=10)
    needed = rounds_needed(noise, 0.05)
    assert needed is not None
    assert min_detectable_effect(noise, needed) <= 0.05 < min_detectable_effect(noise, needed - 1)
    assert rounds_needed(noise, 1e-6) is None


@pytest.fixture
def noise_floor() -> NoiseFloor:
    metrics = {
        "rps": MetricNoise(pair_cv=0.05, round_cv=0.07, diff_sd=500.0, round_sd=700.0, mean=1e4, n=10),
        "p90": MetricNoise(pair_cv=0.06, round_cv=0.08, diff_sd=0.3 * MS, round_sd=0.4 * MS, mean=5 * MS, n=10),
    }
    return NoiseFloor(metrics, 10, "2024-01-01T00:00:00+00:00", {"cpu": "test", "cores": 2})


def test_tight_budgets_get_a_warning(noise_floor: NoiseFloor) -> None:
    warning = check_budget_against_noise("rps_loss <= 2%", noise_floor, 5)
    assert warning is not None
    assert "'rps_loss <= 2%' is tighter than the smallest change" in warning
    assert "5 rounds" in warning and "5.0% per pair" in warning and "about" in warning
    added = check_budget_against_noise("p90_added <= 100us", noise_floor, 5)
    assert added is not None and "SD 300us per pair" in added
    zero = check_budget_against_noise("rps >= 1.0x reference", noise_floor, 15)
    assert zero is not None and "leaves no room" in zero and "far more rounds" in zero
    assert check_budget_against_noise("rps >= 0.97x baseline", noise_floor, 15, baseline_rounds=10)


def test_loose_absolute_and_unmeasured_budgets_get_none(noise_floor: NoiseFloor) -> None:
    assert check_budget_against_noise("rps_loss <= 20%", noise_floor, 5) is None
    assert check_budget_against_noise("p90_added <= 2ms", noise_floor, 5) is None
    assert check_budget_against_noise("p90 <= 1.5x baseline", noise_floor, 10) is None
    assert check_budget_against_noise("p90 < 1us", noise_floor, 5) is None
    assert check_budget_against_noise("errors == 0", noise_floor, 5) is None
    assert check_budget_against_noise("p99 <= 1.01x reference", noise_floor, 5) is None


def test_the_warning_threshold_matches_the_detectable_effect(noise_floor: NoiseFloor) -> None:
    rps = noise_floor.for_metric("rps")
    assert rps is not None
    mde = min_detectable_effect(rps, 10)
    just_inside = 1.0 - 1.0 / (1.0 + mde * 0.98)
    just_outside = 1.0 - 1.0 / (1.0 + mde * 1.02)
    assert check_budget_against_noise(f"rps_loss <= {just_inside * 100:.4f}%", noise_floor, 10)
    assert check_budget_against_noise(f"rps_loss <= {just_outside * 100:.4f}%", noise_floor, 10) is None


def test_save_and_load_round_trip(tmp_path: Path, noise_floor: NoiseFloor) -> None:
    path = noise_path(tmp_path / ".netperf")
    assert path.name == NOISE_FILE_NAME
    assert load_noise(path) is None
    save_noise(noise_floor, path)
    assert load_noise(path) == noise_floor
    assert [p.name for p in path.parent.iterdir()] == [NOISE_FILE_NAME]  # no temp files left
    doc = json.loads(path.read_text())
    assert doc["netperf_noise_version"] == 1 and doc["metrics"]["rps"]["pair_cv"] == 0.05


def test_corrupt_or_foreign_files_name_the_file(tmp_path: Path, noise_floor: NoiseFloor) -> None:
    path = tmp_path / NOISE_FILE_NAME
    path.write_text("{not json")
    with pytest.raises(BaselineError, match=str(path)):
        load_noise(path)
    doc = noise_floor.to_dict()
    doc["netperf_noise_version"] = 99
    path.write_text(json.dumps(doc))
    with pytest.raises(BaselineError, match="unknown noise floor version 99"):
        load_noise(path)
    doc["netperf_noise_version"] = 1
    del doc["metrics"]["rps"]["pair_cv"]
    path.write_text(json.dumps(doc))
    with pytest.raises(BaselineError, match="malformed"):
        load_noise(path)


def test_fingerprint_differences_are_listed(noise_floor: NoiseFloor) -> None:
    assert noise_floor.differs_from({"cpu": "test", "cores": 2}) == []
    assert noise_floor.differs_from({"cpu": "other", "cores": 2, "kernel": "6.1"}) == [
        "cpu",
        "kernel",
    ]
