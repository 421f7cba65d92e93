"""Noise floor: what an A/A run (a target measured against itself) says about this machine.

From interleaved A/A rounds we keep, per metric, the spread of per-pair log ratios
(what paired reference budgets see) and of per-round values (what baseline and absolute
budgets see). From that follow the smallest detectable effect for a number of rounds
and a warning when a budget is tighter than that. The plugin measures the A/A rounds
with the real driver and stores the result at ``<baseline_dir>/_noise.json``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
from scipy import special

from pytest_netperf import defaults
from pytest_netperf.atomic_file import write_text_atomic
from pytest_netperf.budget import metrics
from pytest_netperf.budget.families import format_duration_ns
from pytest_netperf.budget.grammar import Budget, coerce_budget
from pytest_netperf.budget.metrics import metric_value
from pytest_netperf.errors import BaselineError
from pytest_netperf.results.model import RoundResult
from pytest_netperf.verdict.error_control import alpha_for_look

NOISE_VERSION = 1
NOISE_FILE_NAME = "_noise.json"
#: Metrics whose noise an A/A run estimates (the statistically judged ones).
NOISE_METRICS = metrics.judged_names()
#: Largest number of rounds :func:`rounds_needed` will suggest.
MAX_SUGGESTED_ROUNDS = 200

RoundsInput = Union[Sequence[RoundResult], Mapping[str, Sequence[float]]]


@dataclass(frozen=True)
class MetricNoise:
    """A/A noise of one metric.

    ``pair_cv``: SD of per-pair log ratios (~ CV of a paired ratio); ``round_cv``: pooled
    within-side SD of log per-round values (~ CV of one round); ``diff_sd`` and
    ``round_sd`` are the same in the metric's units (ns for latency); ``mean`` is the
    average per-round value; ``n`` the number of pairs.
    """

    pair_cv: float
    round_cv: float
    diff_sd: float
    round_sd: float
    mean: float
    n: int


@dataclass(frozen=True)
class NoiseFloor:
    """Per-metric A/A noise plus when and where it was measured."""

    metrics: Mapping[str, MetricNoise]
    n: int
    measured_at: str
    fingerprint: Mapping[str, Any] = field(default_factory=dict)

    def for_metric(self, name: str) -> Optional[MetricNoise]:
        """Noise of metric ``name`` (``None`` when it was not measured)."""
        return self.metrics.get(name)

    def differs_from(self, fingerprint: Mapping[str, Any]) -> list[str]:
        """Keys whose value differs between this noise floor's machine and ``fingerprint``."""
        keys = set(self.fingerprint) | set(fingerprint)
        return sorted(k for k in keys if self.fingerprint.get(k) != fingerprint.get(k))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready document (versioned)."""
        return {
            "netperf_noise_version": NOISE_VERSION,
            "measured_at": self.measured_at,
            "n": self.n,
            "fingerprint": dict(self.fingerprint),
            "metrics": {name: asdict(noise) for name, noise in self.metrics.items()},
        }

    @classmethod
    def from_dict(cls, doc: Any, source: str = "noise floor") -> NoiseFloor:
        """Inverse of :meth:`to_dict`; BaselineError naming ``source`` when malformed."""
        if not isinstance(doc, dict):
            raise BaselineError(f"{source}: expected a JSON object")
        version = doc.get("netperf_noise_version")
        if version != NOISE_VERSION:
            raise BaselineError(
                f"{source}: unknown noise floor version {version!r} (expected {NOISE_VERSION}); "
                "re-run the A/A calibration"
            )
        try:
            metrics = {
                str(name): MetricNoise(**{k: float(v) for k, v in body.items() if k != "n"}, n=int(body["n"]))
                for name, body in doc["metrics"].items()
            }
            return cls(metrics, int(doc["n"]), str(doc["measured_at"]), dict(doc.get("fingerprint", {})))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BaselineError(f"{source}: malformed noise floor ({exc!r})") from exc


# ----- estimating ------------------------------------------------------------------------
def estimate_noise(
    a_rounds: RoundsInput,
    b_rounds: RoundsInput,
    *,
    metrics: Sequence[str] = NOISE_METRICS,
    fingerprint: Optional[Mapping[str, Any]] = None,
    measured_at: Optional[str] = None,
) -> NoiseFloor:
    """Noise floor from an A/A run: ``a_rounds[i]`` and ``b_rounds[i]`` are one interleaved
    pair measuring the same target. Accepts RoundResults or ``{metric: values}``.
    Metrics that are missing or have a value <= 0 are left out."""
    a_values, b_values = _metric_table(a_rounds, metrics), _metric_table(b_rounds, metrics)
    pairs = 0
    noise: dict[str, MetricNoise] = {}
    for name in metrics:
        if name not in a_values or name not in b_values:
            continue
        a, b = a_values[name], b_values[name]
        if a.size != b.size:
            raise ValueError(f"A/A rounds differ in number for {name}: {a.size} vs {b.size}")
        if a.size < 2:
            raise ValueError(f"an A/A estimate needs at least 2 pairs, got {a.size}")
        if np.any(a <= 0) or np.any(b <= 0):
            continue
        pairs = a.size
        noise[name] = _metric_noise(a, b)
    if not noise:
        raise ValueError("no metric could be estimated from the A/A rounds")
    stamp = measured_at or datetime.now(timezone.utc).isoformat(timespec="seconds")
    return NoiseFloor(noise, pairs, stamp, dict(fingerprint or {}))


def _metric_table(rounds: RoundsInput, metrics: Sequence[str]) -> dict[str, np.ndarray]:
    if isinstance(rounds, Mapping):
        return {k: np.asarray(v, dtype=float) for k, v in rounds.items() if k in metrics}
    table: dict[str, np.ndarray] = {}
    for name in metrics:
        try:
            table[name] = np.asarray([metric_value(r, name) for r in rounds], dtype=float)
        except KeyError:
            continue
    return table


def _metric_noise(a: np.ndarray, b: np.ndarray) -> MetricNoise:
    log_a, log_b = np.log(a), np.log(b)
    pooled_log = math.sqrt((np.var(log_a, ddof=1) + np.var(log_b, ddof=1)) / 2.0)
    pooled = math.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2.0)
    return MetricNoise(
        pair_cv=float(np.std(log_a - log_b, ddof=1)),
        round_cv=pooled_log,
        diff_sd=float(np.std(a - b, ddof=1)),
        round_sd=pooled,
        mean=float(np.mean(np.concatenate([a, b]))),
        n=int(a.size),
    )


# ----- detectable effects -------------------------------------------------------------------
def min_detectable_effect(
    noise: MetricNoise,
    n_rounds: int,
    confidence: float = defaults.CONFIDENCE,
    power: float = defaults.POWER,
    *,
    comparison: str = "reference",
    baseline_rounds: Optional[int] = None,
    looks: int = 1,
    relative: bool = True,
) -> float:
    """Smallest true change a gate with ``n_rounds`` rounds detects with ``power``.

    Relative (0.05 = 5%) by default, or in the metric's units with ``relative=False``.
    ``comparison`` is ``reference`` (paired), ``baseline`` (unpaired against
    ``baseline_rounds`` stored rounds, default ``n_rounds``) or ``absolute``. With
    ``looks > 1`` the level of the last look of the sequential procedure is used.
    """
    effect = _effect(noise, n_rounds, confidence, power, comparison, baseline_rounds, looks, relative)
    return math.expm1(effect) if relative else effect


def rounds_needed(
    noise: MetricNoise,
    effect: float,
    confidence: float = defaults.CONFIDENCE,
    power: float = defaults.POWER,
    *,
    comparison: str = "reference",
    baseline_rounds: Optional[int] = None,
    looks: int = 1,
    relative: bool = True,
) -> Optional[int]:
    """Fewest rounds whose detectable effect is at most ``effect`` (same units as
    :func:`min_detectable_effect`); None beyond ``MAX_SUGGESTED_ROUNDS``."""
    for n in range(2, MAX_SUGGESTED_ROUNDS + 1):
        mde = min_detectable_effect(
            noise,
            n,
            confidence,
            power,
            comparison=comparison,
            baseline_rounds=baseline_rounds,
            looks=looks,
            relative=relative,
        )
        if mde <= effect:
            return n
    return None


def _effect(
    noise: MetricNoise,
    n: int,
    confidence: float,
    power: float,
    comparison: str,
    baseline_rounds: Optional[int],
    looks: int,
    relative: bool,
) -> float:
    """Detectable effect on the analysis scale (log for relative, metric units otherwise)."""
    if n < 2:
        return math.inf
    alpha = alpha_for_look(1.0 - confidence, looks, looks)
    spread, df = _spread(noise, n, comparison, baseline_rounds, relative)
    return float(special.stdtrit(df, 1.0 - alpha) + special.stdtrit(df, power)) * spread


def _spread(
    noise: MetricNoise, n: int, comparison: str, baseline_rounds: Optional[int], relative: bool
) -> tuple[float, float]:
    """Standard error of the compared quantity and its t degrees of freedom."""
    if comparison == "reference":
        sd = noise.pair_cv if relative else noise.diff_sd
        return sd / math.sqrt(n), float(n - 1)
    sd = noise.round_cv if relative else noise.round_sd
    if comparison == "absolute":
        return sd / math.sqrt(n), float(n - 1)
    if comparison == "baseline":
        stored = baseline_rounds or n
        return sd * math.sqrt(1.0 / n + 1.0 / stored), float(n + stored - 2)
    raise ValueError(f"comparison must be reference, baseline or absolute, got {comparison!r}")


def check_budget_against_noise(
    budget: Union[Budget, str],
    noise: NoiseFloor,
    n_rounds: int,
    confidence: float = defaults.CONFIDENCE,
    power: float = defaults.POWER,
    *,
    baseline_rounds: Optional[int] = None,
    looks: int = 1,
) -> Optional[str]:
    """A warning when ``budget`` is tighter than what ``n_rounds`` rounds can resolve here.

    "Tighter" means the distance between "no change" and the threshold (the 10% of
    ``rps_loss <= 10%``, the 1 ms of ``p90_added <= 1ms``, the 0.2 of ``1.2x``) is below
    the smallest detectable effect. Absolute and count budgets return ``None``: an A/A
    run says nothing about how far a limit is from the measured value.
    """
    budget = coerce_budget(budget)
    metric_noise = noise.for_metric(budget.metric)
    if budget.exact or budget.comparison == "absolute" or metric_noise is None:
        return None
    relative = budget.form != "added"
    margin = _margin(budget)
    settings = (budget.comparison, baseline_rounds, looks, relative)
    effect = _effect(metric_noise, n_rounds, confidence, power, *settings)
    if effect <= margin:
        return None
    shown = _format_effect(effect, relative)
    needed = next(
        (
            n
            for n in range(n_rounds, MAX_SUGGESTED_ROUNDS + 1)
            if _effect(metric_noise, n, confidence, power, *settings) <= margin
        ),
        None,
    )
    advice = f"about {needed} rounds" if needed else "far more rounds than practical"
    lead = (
        f"budget {budget.text!r} leaves no room between 'no change' and its threshold"
        if margin == 0
        else f"budget {budget.text!r} is tighter than the smallest change this machine resolves"
    )
    return (
        f"{lead}: with {n_rounds} rounds a change must be about {shown} to be seen "
        f"(A/A noise {_noise_text(budget, metric_noise, relative)}, {noise.n} pairs, "
        f"{noise.measured_at}); equal targets will often end INCONCLUSIVE. "
        f"Loosen the budget to at least {shown} or measure {advice}."
    )


def _margin(budget: Budget) -> float:
    """Distance from 'no change' to the threshold: log scale for ratios/losses, ns for added."""
    if budget.form == "ratio":
        return abs(math.log(budget.threshold))
    if budget.form == "loss":
        return abs(math.log1p(-budget.threshold))
    return abs(budget.threshold)


def _noise_text(budget: Budget, noise: MetricNoise, relative: bool) -> str:
    paired = budget.comparison == "reference"
    if relative:
        return f"{noise.pair_cv:.1%} per pair" if paired else f"{noise.round_cv:.1%} per round"
    sd = noise.diff_sd if paired else noise.round_sd
    return f"SD {format_duration_ns(sd)} per {'pair' if paired else 'round'}"


def _format_effect(value: float, relative: bool) -> str:
    return f"{math.expm1(value):.1%}" if relative else format_duration_ns(value)


# ----- storage ------------------------------------------------------------------------------
def noise_path(baseline_dir: Union[str, Path]) -> Path:
    """Where the plugin keeps the noise floor: ``<baseline_dir>/_noise.json``."""
    return Path(baseline_dir) / NOISE_FILE_NAME


def save_noise(noise: NoiseFloor, path: Union[str, Path]) -> None:
    """Write ``noise`` as JSON, atomically (readers never see a half-written file)."""
    text = json.dumps(noise.to_dict(), indent=2, sort_keys=True) + "\n"
    write_text_atomic(Path(path), text)


def load_noise(path: Union[str, Path]) -> Optional[NoiseFloor]:
    """Read a noise floor; ``None`` when the file does not exist, BaselineError naming the
    file when it is corrupt or of an unknown version."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    return NoiseFloor.from_dict(doc, source=str(path))
