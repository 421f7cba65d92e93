"""Point estimates with one-sided bounds on the scale a budget is judged on.

Pure numpy/scipy; :mod:`pytest_netperf.verdict.stats` turns an estimate into a verdict.
Positive metrics (rps, latency) are analysed on log values, so ratios become
differences and multiplicative noise becomes additive; where a value is <= 0 the
estimators fall back to plain values and say so in ``method``.

Locations are 10%-trimmed means with Tukey-McLaughlin (one sample, paired) or Yuen
(two unpaired samples, Welch-type) standard errors. Below 10 rounds nothing is trimmed
and these are exactly the t and Welch t intervals; from 10 rounds on, the most extreme
round at each end no longer drives the verdict, which keeps one disturbed round (or one
bad round in a stored baseline) from hiding a regression.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from scipy import special

#: Fraction trimmed from each end of a sample before averaging.
TRIM = 0.10


@dataclass(frozen=True)
class Estimate:
    """A (trimmed) mean or difference of means with its standard error and t df."""

    center: float
    se: float
    df: float
    n: int
    log_scale: bool
    method: str

    @property
    def resolvable(self) -> bool:
        """Whether bounds exist (at least 2 rounds)."""
        return self.n >= 2 and math.isfinite(self.se)

    def bounds(self, alpha: float) -> tuple[float, float]:
        """Lower and upper one-sided bounds, each at level ``alpha``."""
        if not self.resolvable:
            return -math.inf, math.inf
        half = float(special.stdtrit(self.df, 1.0 - alpha)) * self.se
        return self.center - half, self.center + half

    def p_greater(self, threshold: float) -> float:
        """One-sided p-value of "true <= threshold" against "true > threshold"."""
        if not self.resolvable:
            return 1.0
        if self.se == 0.0:
            return 0.0 if self.center > threshold else 1.0
        return float(special.stdtr(self.df, (threshold - self.center) / self.se))

    def p_less(self, threshold: float) -> float:
        """One-sided p-value of "true >= threshold" against "true < threshold"."""
        if not self.resolvable:
            return 1.0
        if self.se == 0.0:
            return 0.0 if self.center < threshold else 1.0
        return float(special.stdtr(self.df, (self.center - threshold) / self.se))

    def mde(self, alpha: float, power: float) -> float:
        """Smallest true distance from a threshold resolved with ``power`` at ``alpha``."""
        if not self.resolvable:
            return math.inf
        quantiles = special.stdtrit(self.df, 1.0 - alpha) + special.stdtrit(self.df, power)
        return float(quantiles) * self.se


def as_array(values: Optional[Sequence[float]], name: str) -> np.ndarray:
    """Per-round values as a 1-d float array; ValueError when missing, empty or non-finite."""
    if values is None:
        raise ValueError(f"{name} values are missing")
    array = np.asarray(values, dtype=float).ravel()
    if array.size == 0:
        raise ValueError(f"{name} has no rounds")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} has non-finite values: {array.tolist()}")
    return array


def one_sample_values(values: np.ndarray) -> Estimate:
    """Location of per-round values: mean of logs (geometric mean) when all are positive."""
    if np.all(values > 0):
        return one_sample(np.log(values), log_scale=True, what="one-sample t on log values")
    return one_sample(values, log_scale=False, what="one-sample t on values (some <= 0)")


def paired_ratio(cand: np.ndarray, ref: np.ndarray) -> Estimate:
    """Candidate over reference from paired rounds: mean of per-pair log ratios."""
    if (ref <= 0).any():
        raise ValueError(f"reference rounds must be positive to form ratios: {ref.tolist()}")
    if (cand > 0).all():
        return one_sample(np.log(cand / ref), log_scale=True, what="paired t on log ratios")
    return one_sample(cand / ref, log_scale=False, what="paired t on ratios (some <= 0)")


def unpaired_ratio(cand: np.ndarray, base: np.ndarray) -> Estimate:
    """Candidate over an unpaired baseline: Yuen-Welch on log values."""
    if (cand > 0).all() and (base > 0).all():
        return yuen_welch(np.log(cand), np.log(base), log_scale=True, what="Yuen-Welch t on log values")
    problem = ratio_problem(base.tolist())
    if problem is not None:
        raise ValueError(f"baseline rounds {problem}")
    base_mean = float(np.mean(base))
    ratio = float(np.mean(cand)) / base_mean
    var_c = variance(cand) / cand.size
    var_b = ratio**2 * variance(base) / base.size
    se = math.sqrt(var_c + var_b) / base_mean
    df = welch_df(var_c, var_b, cand.size, base.size)
    n = min(cand.size, base.size)
    return Estimate(ratio, se, df, n, False, "delta-method ratio of means (some <= 0)")


def ratio_problem(base: Sequence[float]) -> Optional[str]:
    """Why per-round values cannot be the denominator of a ratio (:func:`unpaired_ratio`), or
    None: their mean must be a positive number (all zeros is a run that measured nothing)."""
    values = [float(v) for v in base]
    if not values:
        return "are missing: no rounds to form ratios with"
    if not all(math.isfinite(v) for v in values) or float(np.mean(values)) <= 0:
        return f"must be positive to form ratios: {values}"
    return None


def one_sample(values: np.ndarray, log_scale: bool, what: str) -> Estimate:
    """Trimmed mean with its Tukey-McLaughlin standard error (infinite below 2 values)."""
    n = values.size
    center, squared_se, kept = trimmed_mean(values)
    se = math.sqrt(squared_se) if kept > 1 else math.inf
    return Estimate(center, se, float(max(kept - 1, 1)), n, log_scale, f"{what}, {_rounds(n)}")


def yuen_welch(x: np.ndarray, y: np.ndarray, log_scale: bool, what: str) -> Estimate:
    """Difference of trimmed means of two unpaired samples, Yuen's standard error and df."""
    center_x, var_x, kept_x = trimmed_mean(x)
    center_y, var_y, kept_y = trimmed_mean(y)
    label = f"{what}, {x.size} vs {y.size} rounds"
    if kept_x < 2 or kept_y < 2:
        return Estimate(center_x - center_y, math.inf, 1.0, x.size, log_scale, label)
    df = welch_df(var_x, var_y, kept_x, kept_y)
    return Estimate(center_x - center_y, math.sqrt(var_x + var_y), df, x.size, log_scale, label)


def trimmed_mean(values: np.ndarray, trim: float = TRIM) -> tuple[float, float, int]:
    """``(trimmed mean, its squared standard error, values kept)``.

    ``g = floor(trim * n)`` values go from each end; the standard error comes from the
    winsorized variance, ``(n - 1) s_w^2 / (h (h - 1))`` with ``h = n - 2g`` kept values.
    With ``g = 0`` this is the plain mean and ``s^2 / n``.
    """
    n = values.size
    cut = math.floor(trim * n)
    ordered = np.sort(values)
    kept = n - 2 * cut
    center = float(ordered[cut : n - cut].mean())
    if kept < 2:
        return center, math.inf, kept
    winsorized = np.clip(ordered, ordered[cut], ordered[n - cut - 1])
    squared_se = (n - 1) * variance(winsorized) / (kept * (kept - 1))
    return center, squared_se, kept


def _rounds(n: int) -> str:
    cut = math.floor(TRIM * n)
    return f"n={n}" + (f", {cut} trimmed at each end" if cut else "")


def welch_df(var_x: float, var_y: float, n_x: int, n_y: int) -> float:
    """Welch-Satterthwaite degrees of freedom from two squared standard errors and the
    numbers of values behind them."""
    denominator = var_x**2 / max(n_x - 1, 1) + var_y**2 / max(n_y - 1, 1)
    if denominator == 0:
        return float(n_x + n_y - 2)
    return (var_x + var_y) ** 2 / denominator


def variance(values: np.ndarray) -> float:
    """Sample variance (ddof=1); 0.0 for a single value."""
    if values.size < 2:
        return 0.0
    deviations = values - values.mean()
    return float(deviations @ deviations) / (values.size - 1)
