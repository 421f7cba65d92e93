"""Error-rate control: alpha spent over repeated looks, and Holm's step-down correction.

Both are plain functions of levels and p-values, so :mod:`pytest_netperf.verdict.stats` and the
plugin (session-wide Holm) share them.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from pytest_netperf import defaults

SPENDING_RULES = ("pocock", "bonferroni")


def planned_looks(
    min_rounds: int = defaults.ROUNDS_MIN,
    max_rounds: int = defaults.ROUNDS_MAX,
    batch: int = defaults.ROUND_BATCH,
) -> int:
    """Number of looks of the sequential procedure: one at ``min_rounds``, then one per
    batch until ``max_rounds``."""
    if min_rounds < 2 or max_rounds < min_rounds or batch < 1:
        raise ValueError(
            f"need 2 <= min_rounds <= max_rounds and batch >= 1, got "
            f"min_rounds={min_rounds}, max_rounds={max_rounds}, batch={batch}"
        )
    return 1 + math.ceil((max_rounds - min_rounds) / batch)


def alpha_for_look(alpha: float, look_index: int, looks: int, spending: str = defaults.SPENDING) -> float:
    """One-sided level to use at look ``look_index`` of ``looks`` so that the levels of all
    looks add up to ``alpha`` (a union bound: valid for any correlation between looks).

    ``pocock``: increments of the Lan-DeMets Pocock-type spending function
    ``alpha * ln(1 + (e - 1) t)`` at information fraction ``t = look/looks``, which spends
    more early (most gates decide at the first look). ``bonferroni``: ``alpha / looks``.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 1 <= look_index <= looks:
        raise ValueError(f"look_index must be in 1..{looks}, got {look_index}")
    if spending == "bonferroni":
        return alpha / looks
    if spending == "pocock":

        def spent(t: float) -> float:
            return alpha * math.log1p((math.e - 1.0) * t)

        return spent(look_index / looks) - spent((look_index - 1) / looks)
    raise ValueError(f"unknown spending rule {spending!r}; expected one of {SPENDING_RULES}")


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the input order (valid under any dependence)."""
    p = np.asarray(p_values, dtype=float)
    if p.size == 0:
        return []
    if np.any(np.isnan(p)) or np.any(p < 0) or np.any(p > 1):
        raise ValueError(f"p-values must be in [0, 1], got {list(p_values)}")
    order = np.argsort(p, kind="stable")
    m = p.size
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted_sorted = np.maximum.accumulate(scaled)
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return adjusted.tolist()
