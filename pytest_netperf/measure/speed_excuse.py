"""A miss against a stored baseline that this machine's slower speed can explain.

The baseline policy (``baseline/speed.py``) calls a baseline whose machine calibrated more
than 1.5x apart from this one *another machine*: its wall-clock budgets are NEW. Within
that threshold the two count as one machine, yet one machine's calibration moves: an Intel
KVM guest calibrated 117.5 ms and, 10-30 minutes later, 70-76 ms (``runtime/machine_speed.py``).
A baseline recorded while the host was fast and judged while it is 1.45x slower misses
``rps >= 0.7x baseline`` (1 / 1.45 = 0.69x) with no change at all.

So a wall-clock budget against a stored baseline that did not pass, on a machine that
measured at least :data:`MIN_SLOWDOWN` slower than the baseline's, is judged again with the
candidate's figures given the speed back in the change's favour: rates times the slowdown,
latencies and CPU time per request divided by it (a request's work takes at most that much
longer on a processor that much slower). Within the budget then, the speed difference
explains the miss: undecided on this runner, with the figures; beyond it the verdict stands,
saying the difference does not explain it. A machine that measured *faster* gives nothing
back (it only makes a miss less likely).

The same holds for a budget written as an absolute wall-clock figure (``p99 < 1ms``,
``p90_added <= 1ms per hop``, ``rps >= 5000``): the figure was set on some machine. Where the
suite says which (``--netperf-budget-calibration``, the calibration in ms of the machine its
absolute budgets were set on), a miss on a machine that measured at least
:data:`MIN_SLOWDOWN` slower is judged again the same way: an added amount (candidate less its
same-run reference) and an absolute figure are what a request's work makes them, so they shrink
with a faster processor; a ratio or a loss against a side measured in this run does not move
with the machine's speed and gets nothing back. pytest is not imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Optional

from pytest_netperf.budget import metrics
from pytest_netperf.budget.families import Family
from pytest_netperf.budget.grammar import Budget

#: Below this slowdown the two calibrations agree within their own repeatability (1.03-1.07x
#: on one machine within a day, ``runtime/machine_speed.py``): nothing is given back.
MIN_SLOWDOWN = 1.1
#: The families whose figures a slower processor moves: rates, latencies, CPU time.
SPEED_FAMILIES = frozenset({Family.RATE, Family.BITRATE, Family.PACKET_RATE, Family.LATENCY, Family.CPU_TIME})


@dataclass(frozen=True)
class SlowerMachine:
    """This machine measured ``factor`` times slower than the stored baseline's (within the
    policy's threshold); ``figures`` says how (``calibration 49 ms vs 63 ms here``)."""

    factor: float
    figures: str
    #: What it measured slower than.
    than: str = "the baseline's"

    def text(self) -> str:
        """``this machine measured 1.29x slower than the baseline's (calibration 49 ms vs 63 ms here)``."""
        return f"this machine measured {self.factor:.2f}x slower than {self.than} ({self.figures})"


def slower_machine(stored_ms: float, here_ms: float, figures: str) -> Optional[SlowerMachine]:
    """The slowdown of a machine that calibrated ``here_ms`` against a baseline's ``stored_ms``
    (ms per work unit, lower is faster), or None below :data:`MIN_SLOWDOWN`."""
    if stored_ms <= 0 or here_ms < MIN_SLOWDOWN * stored_ms:
        return None
    return SlowerMachine(here_ms / stored_ms, figures)


def slower_than_budgets(budget_ms: float, here_ms: float) -> Optional[SlowerMachine]:
    """The slowdown of a machine that calibrated ``here_ms`` against the ``budget_ms`` of the
    machine the suite's absolute budgets were set on, or None below :data:`MIN_SLOWDOWN`."""
    slower = slower_machine(budget_ms, here_ms, f"calibration {budget_ms:.0f} ms there vs {here_ms:.0f} ms here")
    return None if slower is None else replace(slower, than="the machine the budgets were set on")


def explains_budget_speed(budget: Budget) -> bool:
    """Whether a slower machine than the one a budget was set on can explain its miss: a
    wall-clock figure written as an absolute amount (an absolute value, or an amount added over
    another side), not as a ratio or loss."""
    if metrics.get(budget.metric).family not in SPEED_FAMILIES:
        return False
    return budget.form == "added" or (budget.form == "value" and budget.comparison == "absolute")


def budget_speed_given_back(
    budget: Budget, candidate: Sequence[float], against: Optional[Sequence[float]], slower: SlowerMachine
) -> tuple[list[float], Optional[list[float]]]:
    """The candidate's figures and what they are compared with, as a machine ``slower.factor``
    times faster would have measured them, at most: both sides of an added amount (so the
    amount shrinks by the factor), the candidate alone of an absolute figure."""
    adjusted = speed_given_back(budget.metric, candidate, slower)
    if budget.form == "added" and against is not None:
        return adjusted, speed_given_back(budget.metric, against, slower)
    return adjusted, None if against is None else list(against)


def explains_speed(budget: Budget, paired: bool) -> bool:
    """Whether a slower machine can explain a miss of ``budget``: a wall-clock figure judged
    against a stored baseline (not against a side measured in this run, ``paired``)."""
    return not paired and budget.comparison == "baseline" and metrics.get(budget.metric).family in SPEED_FAMILIES


def speed_given_back(metric: str, values: Sequence[float], slower: SlowerMachine) -> list[float]:
    """Each value as a machine ``slower.factor`` times faster would have measured it, at most."""
    if metrics.get(metric).higher_is_better:
        return [v * slower.factor for v in values]
    return [v / slower.factor for v in values]
