"""The measurement model: the series of rounds a test measured, and which series a budget judges.

A :class:`Measurement` is one ``measure()`` or ``compare()`` call: the candidate's
:class:`Series`, the same-run reference's, and the base revision's twin. Which of them a
budget compares the candidate with is answered in one place, :meth:`Measurement.judged_series`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Callable, Optional

from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.budget.metrics import metric_value
from pytest_netperf.drivers.base import Driver, LoadShape
from pytest_netperf.errors import NetperfError
from pytest_netperf.measure.contention import both_sides_starved
from pytest_netperf.measure.counting_pass import CountingNode
from pytest_netperf.measure.design import ALTERNATE, SIMULTANEOUS, TURNS
from pytest_netperf.measure.endpoint import WireCounter
from pytest_netperf.measure.system_costs import CostProbe
from pytest_netperf.measure.validity import Disturbance, runner_busy, samples_problem, unevenly_busy
from pytest_netperf.results.counted import CountedCost
from pytest_netperf.results.model import RoundResult
from pytest_netperf.verdict import stats

#: Reads a stored baseline's per-round values: (measurement key, series label, metric) -> values or None.
BaselineLookup = Callable[[str, str, str], Optional[list[float]]]
#: Reads a stored baseline's counted costs: (measurement key, series label, tool) -> node -> cost or None.
CountedLookup = Callable[[str, str, str], Optional[dict[str, CountedCost]]]

#: The label of the base revision's twin series (``--netperf-base``) and of what its budgets were judged against.
BASE_LABEL = "base"


def series_name(measurement_key: str, label: str) -> str:
    """Name of a measured series in baselines and plots (``candidate``, ``hops=3/reference``)."""
    return label if measurement_key == "default" else f"{measurement_key}/{label}"


@dataclass
class Series:
    """All rounds of one target within one measurement."""

    label: str
    url: str
    where: str
    driver: str
    shape: LoadShape
    rounds: list[RoundResult] = field(default_factory=list)
    #: A closed loop loaded the target just before the rounds (its capacity run): the first
    #: round needs only the warmup of later rounds, for its new connections.
    warm: bool = False
    #: Image -> digest of the containers behind the target (empty for a plain URL).
    images: dict[str, str] = field(default_factory=dict)
    #: The driver that measures this series.
    driver_instance: Optional[Driver] = None
    #: Says why the target may no longer be measured (its topology is gone), or None.
    guard: Optional[Callable[[], Optional[str]]] = None
    #: What the report prints with the rows of this series: the target's own facts
    #: (``images``, ``resources``) and the gate's (``driver cores`` when the driver is pinned).
    facts: dict[str, str] = field(default_factory=dict)
    #: Reads what the target's system under test spends per round (None for a plain URL).
    costs: Optional[CostProbe] = None
    #: Reads the server interface's packet counters around each L4 round (None: not counted).
    wire: Optional[WireCounter] = None
    #: Why each kept round whose driver was saturated was the stack's doing (see measure/contention.py).
    starved: list[str] = field(default_factory=list)
    #: Kept rounds whose driver was saturated on every attempt for another reason, by round
    #: index: left out of the budgets their saturation spoils (measure/validity.py).
    disturbed: dict[int, Disturbance] = field(default_factory=dict)
    #: Runs the target's entry node under a counting tool (the counting pass); None: it cannot.
    counter: Optional[CountingNode] = None
    #: tool -> node -> cost per request the counting pass counted (``instructions``, ``syscalls``)
    counted: dict[str, dict[str, CountedCost]] = field(default_factory=dict)
    #: Why the counting pass of this series could not count (its budgets are INVALID), or "".
    counting_error: str = ""
    #: tool -> why that tool of the counting pass could not count (its budgets are INVALID)
    counting_errors: dict[str, str] = field(default_factory=dict)

    def values(self, metric: str, skip: Collection[int] = ()) -> list[float]:
        """Per-round values of ``metric`` (without the rounds whose indexes are in ``skip``);
        per-repetition values of a counted cost."""
        if metrics.get(metric).counted:
            error = self.counting_error or self.counting_errors.get(metrics.tool_of(metric), "")
            if error:
                raise metrics.MetricUnavailable(f"{metric}: the counting pass could not count: {error}")
            return metrics.counted_values(metric, self.counted.get(metrics.tool_of(metric), {}))
        return [metric_value(r, metric) for i, r in enumerate(self.rounds) if i not in skip]

    def kept_rounds(self, skip: Collection[int] = ()) -> list[RoundResult]:
        """The rounds whose indexes are not in ``skip``."""
        return [r for i, r in enumerate(self.rounds) if i not in skip]

    def driver_or_fail(self, where: str = "") -> Driver:
        """The series' driver; NetperfError for a series rebuilt from a record (it measures nothing)."""
        if self.driver_instance is None:
            raise NetperfError(f"{where or self.label}: this series has no driver to measure with")
        return self.driver_instance


@dataclass
class Measurement:
    """One ``measure()`` or ``compare()`` call of a test."""

    key: str
    candidate: Series
    reference: Optional[Series] = None
    hops: Optional[int] = None
    verdicts: dict[str, stats.Verdict] = field(default_factory=dict)
    invalid_reason: Optional[str] = None
    #: The candidate's twin at the base revision (``--netperf-base``), measured in the same
    #: interleaved rounds; budgets against the baseline are judged on these pairs.
    base: Optional[Series] = None
    #: Why the candidate has no twin at the base revision (its stack is not there): the
    #: budgets against the baseline are NEW with this note.
    base_note: str = ""
    #: Why the candidate's twin at the base revision could not be measured (its stack failed
    #: to start, with its log): the budgets against the baseline are INVALID, never PASS.
    base_error: str = ""
    #: The series loaded together in each round (measure/design.py): one group per series when
    #: they alternate (ABBA over the groups); empty until the rounds are planned.
    groups: list[list[Series]] = field(default_factory=list)
    #: Why series alternated although the settings asked for simultaneous rounds ("" when not).
    design_note: str = ""
    #: The slot length (s) when the two series share each round in fine turns (design ``turns``), else None.
    turn_s: Optional[float] = None
    #: The open-loop rate a share of the measured capacity came to (``rate="25%"``), or "".
    rate_note: str = ""

    def series(self) -> list[Series]:
        """Candidate first, then the reference and the base twin when there are any."""
        return [s for s in (self.candidate, self.reference, self.base) if s is not None]

    def judged_series(self, budget: Budget) -> Optional[Series]:
        """The series of this run ``budget`` compares the candidate with: the reference, the
        base revision's twin, or None (an absolute budget, or a stored baseline)."""
        if budget.comparison == "reference":
            return self.reference
        if budget.comparison == "baseline":
            return self.base
        return None

    def judged(self, budget: Budget) -> list[Series]:
        """The candidate, then what ``budget`` compares it with when that was measured in this run."""
        other = self.judged_series(budget)
        return [self.candidate] if other is None else [self.candidate, other]

    def applies(self, budget: Budget) -> bool:
        """Whether ``budget`` is judged on this measurement (a reference budget needs a
        reference; a per-hop budget needs hops)."""
        if budget.comparison == "reference" and self.reference is None:
            return False
        return not (budget.per_hop and not self.hops)

    @property
    def design(self) -> str:
        """``turns`` when the series shared each round in fine turns, ``simultaneous`` when any
        were loaded together, else ``alternate``."""
        if self.turn_s is not None:  # set with one group of both series, cleared when they split
            return TURNS
        return SIMULTANEOUS if any(len(group) > 1 for group in self.groups) else ALTERNATE

    def spoiled_rounds(self, budget: Budget) -> dict[int, tuple[Series, Disturbance]]:
        """Rounds whose driver's saturation spoils ``budget``'s metric on either side of its
        comparison, by round index (paired rounds leave together), with the series and why."""
        spoiled: dict[int, tuple[Series, Disturbance]] = {}
        for series in self.judged(budget):
            for index, disturbance in series.disturbed.items():
                if disturbance.spoils(budget.metric):
                    spoiled.setdefault(index, (series, disturbance))
        return spoiled

    def busy_rounds(self, also: Optional[Series] = None) -> dict[int, str]:
        """The candidate's rounds whose runner was busy, by round index, with why
        (measure/validity.py); with ``also``, the rounds where that series' was busy too."""
        busy: dict[int, str] = {}
        for series in (self.candidate, also) if also is not None else (self.candidate,):
            others = [s for s in self.series() if s is not series]
            for index, result in enumerate(series.rounds):
                beside = [s.rounds[index] for s in others if len(s.rounds) > index]
                why = runner_busy(result, beside)
                if why and index not in busy:
                    busy[index] = why if series is self.candidate else f"{series.label}: {why}"
        return busy

    def uneven_rounds(self, other: Series) -> dict[int, str]:
        """The candidate's rounds whose turn and ``other``'s turn of the same index met
        different neighbours (measure/validity.py :func:`unevenly_busy`), by round index."""
        uneven: dict[int, str] = {}
        for index, (mine, theirs) in enumerate(zip(self.candidate.rounds, other.rounds, strict=False)):
            why = unevenly_busy(mine, theirs)
            if why:
                uneven[index] = why
        return uneven

    def data_problem(self, budget: Budget) -> Optional[str]:
        """Why ``budget`` has no data to be judged on (too few samples, no costs, both sides'
        drivers starved, a driver whose own CPU spoiled its figure), or None."""
        other = self.judged_series(budget)
        if other is not None and self.candidate.starved and other.starved:
            return both_sides_starved(self.candidate.label, other.label)
        for index, (series, disturbance) in sorted(self.spoiled_rounds(budget).items()):
            if not disturbance.by_runner:
                return (
                    f"{series.label} {series.url} (round {index + 1}): {disturbance.describe()}; "
                    f"{budget.metric} measured the driver, not the target"
                )
        for series in self.judged(budget):
            problem = samples_problem(series.rounds, budget.metric)
            if problem:
                return f"{series.label}: {problem}"
            try:
                series.values(budget.metric)
            except KeyError as exc:  # metrics.MetricUnavailable
                return f"{series.label}: {exc}"
        return None

    def judged_values(
        self, budget: Budget, baseline_lookup: Optional[BaselineLookup] = None, skip: Collection[int] = ()
    ) -> tuple[list[float], Optional[list[float]]]:
        """The candidate's values of ``budget``'s metric and what they are compared with: the
        values of :meth:`judged_series` when it was measured in this run, else a stored
        baseline's (None when there is none, or for an absolute budget). The rounds whose
        indexes are in ``skip`` are left out of this run's series."""
        candidate = self.candidate.values(budget.metric, skip)
        other = self.judged_series(budget)
        if other is not None:
            return candidate, other.values(budget.metric, skip)
        if budget.comparison == "baseline" and baseline_lookup is not None and self.judged_by_baseline:
            return candidate, baseline_lookup(self.key, "candidate", budget.metric)
        return candidate, None

    @property
    def judged_by_baseline(self) -> bool:
        """Whether a stored baseline judges the baseline budgets (not when ``--netperf-base``
        was asked for and its twin could not be had: those budgets say why instead)."""
        return not (self.base_note or self.base_error)
