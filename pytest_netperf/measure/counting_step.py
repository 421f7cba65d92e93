"""The gate's cost step: count what each judged series' entry node does per request, then judge
the counted budgets on the repetitions.

It runs after the timed rounds of a measurement. Every series a counted budget judges is
counted with the tools its budgets need, the series of a comparison in one pass, their
repetitions in turn (:func:`~pytest_netperf.measure.counting_pass.count_sides`); a pass that
cannot count leaves its reason on the series, and the budgets that needed it end INVALID with
that reason.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional, Sequence

from pytest_netperf import defaults
from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.measure.counting_pass import CountedSide, CountingPlan, count_sides, counting_problem
from pytest_netperf.measure.model import BaselineLookup, CountedLookup, Measurement, Series
from pytest_netperf.results.counted import INSTRUCTIONS, counting_tool, parts_changed
from pytest_netperf.runtime.resources import usable_cores
from pytest_netperf.verdict.counted import confirm_margin, evaluate_repetitions, needs_confirmation


class CountingStep:
    """The counting passes of one test's measurements and the verdicts of its counted budgets."""

    def __init__(
        self,
        test_id: str,
        budgets: Sequence[Budget],
        plan: CountingPlan,
        progress: Callable[[str], None],
        baseline_lookup: Optional[BaselineLookup] = None,
        baseline_counted: Optional[CountedLookup] = None,
    ) -> None:
        """``budgets``: the test's counted budgets (the others are ignored); ``baseline_counted``:
        the stored baseline's counted costs, whose parts a thin miss against it is judged on."""
        self.test_id = test_id
        self.budgets = [b for b in budgets if metrics.get(b.metric).counted]
        self.plan = plan
        self._progress = progress
        self._baseline_lookup = baseline_lookup
        self._baseline_counted = baseline_counted

    def tools_by_series(self, m: Measurement) -> dict[str, tuple[Series, set[str]]]:
        """label -> (series, the counting tools its budgets need) for every series a
        counted budget of ``m`` judges."""
        wanted: dict[str, tuple[Series, set[str]]] = {}
        for b in self.budgets:
            if m.applies(b):
                for series in m.judged(b):
                    wanted.setdefault(series.label, (series, set()))[1].add(metrics.tool_of(b.metric))
        return wanted

    def pictured(self, m: Measurement) -> bool:
        """Whether a budget of ``m`` can have the report's picture of call stacks: one on
        instructions judged against a side measured in this run (a reference, the base twin;
        report/cost_picture.py). Only then does the counting pass profile the stacks: an
        absolute budget or a stored baseline gets no picture, and the profile is the longest
        run of a pass (a callgrind pair; without it the tools count side by side)."""
        return any(
            metrics.tool_of(b.metric) == INSTRUCTIONS and m.applies(b) and m.judged_series(b) is not None
            for b in self.budgets
        )

    def prepare(self, m: Measurement) -> None:
        """Before any load: every series that will be counted has its counting image (built now)."""
        for series, _ in self.tools_by_series(m).values():
            if series.counter is not None and not counting_problem(series.url, series.counter, series.driver):
                series.counter.prepare()

    def run(self, m: Measurement) -> None:
        """Count every judged series, then judge the counted budgets into ``m.verdicts``; a ratio
        that fails by little more than its counts' spread is counted again and judged on those
        counts (:func:`~pytest_netperf.verdict.counted.needs_confirmation`)."""
        by_tools: dict[tuple[str, ...], list[Series]] = {}
        for series, tools in self.tools_by_series(m).values():
            series.counting_error = counting_problem(series.url, series.counter, series.driver)
            if not series.counting_error and series.counter is not None and series.driver_instance is not None:
                by_tools.setdefault(tuple(sorted(tools)), []).append(series)
        plan = self.plan if self.pictured(m) else replace(self.plan, stacks=False)
        for needed, group in by_tools.items():
            self._count(m, group, list(needed), plan)
        self._judge(m)
        confirming = self._to_confirm(m)
        if not confirming:
            return
        again = replace(self.plan, repetitions=defaults.COUNTING_CONFIRM_REPETITIONS, stacks=False)
        for tool, (group, budgets) in list(confirming.items()):
            why = (
                f"{', '.join(repr(text) for text in budgets)} failed by less than "
                f"{confirm_margin(self.plan.repetitions):g} times the spread of its repetitions"
            )
            if not self._count(m, group, [tool], again, why):
                del confirming[tool]
        self._judge(m)
        for _, budgets in confirming.values():
            for text in budgets:
                verdict = m.verdicts[text]
                m.verdicts[text] = replace(
                    verdict,
                    note=f"{verdict.note}; counted again, {again.repetitions} repetitions each side in turn: the "
                    f"first {self.plan.repetitions} failed the budget by less than "
                    f"{confirm_margin(self.plan.repetitions):g} times their own spread (a count that depends on timing "
                    "can agree with itself over a few repetitions)",
                )

    def _judge(self, m: Measurement) -> None:
        """Judge every counted budget of ``m`` on the counts its series hold."""
        for b in self.budgets:
            if not m.applies(b) or m.data_problem(b):
                continue  # INVALID: decided with the outcomes
            candidate, against = m.judged_values(b, self._baseline_lookup)
            if b.comparison == "baseline" and against is None:
                continue  # NEW: decided with the outcomes
            floor = counting_tool(metrics.tool_of(b.metric)).named_floor
            parts = _parts_changed(m, b, floor, self._baseline_counted)
            m.verdicts[b.text] = evaluate_repetitions(
                b, candidate, against if b.form == "ratio" else None, floor=floor, parts=parts
            )

    def _to_confirm(self, m: Measurement) -> dict[str, tuple[list[Series], list[str]]]:
        """tool -> (the series to count again, the budgets that asked): the FAILs against a series
        of this run that cleared their budget by too little for their counts' spread. Counts that
        already had the confirming repetitions are not counted again."""
        if self.plan.repetitions >= defaults.COUNTING_CONFIRM_REPETITIONS:
            return {}
        found: dict[str, tuple[list[Series], list[str]]] = {}
        for b in self.budgets:
            verdict, other = m.verdicts.get(b.text), m.judged_series(b)
            if verdict is None or other is None or not m.applies(b) or m.data_problem(b):
                continue
            candidate, against = m.judged_values(b, self._baseline_lookup)
            if against is None or not needs_confirmation(verdict, candidate, against):
                continue
            group, budgets = found.setdefault(metrics.tool_of(b.metric), ([], []))
            group.extend(s for s in (m.candidate, other) if all(s is not t for t in group))
            budgets.append(b.text)
        return found

    def _count(self, m: Measurement, group: list[Series], tools: list[str], plan: CountingPlan, why: str = "") -> bool:
        """One counting pass over the series of ``group`` (each can be counted), their
        repetitions in turn, so a change of the machine during the pass reaches all of them;
        ``why``: the reason a pass counts again (its counts replace the first pass's, unless a
        side could not count: then False)."""
        labels = ", ".join(series.label for series in group)
        turns = ", their repetitions in turn" if len(group) > 1 else ""
        again = f" again, {plan.repetitions} repetitions: {why}" if why else ""
        self._progress(f"{self.test_id} [{m.key}] {labels}: counting pass ({', '.join(tools)}){turns}{again}")
        sides = [_side(series) for series in group]
        counted = count_sides(sides, tools, plan, self._progress, parallel=len(usable_cores()) > 1)
        if why and any(errors for _, errors in counted):  # the first pass's counts and verdicts stand
            failed = "; ".join(reason for _, errors in counted for reason in errors.values())
            self._progress(f"{self.test_id} [{m.key}] {labels}: not counted again ({failed})")
            return False
        for series, (costs, errors) in zip(group, counted, strict=True):
            series.counting_errors.update(errors)
            for cost in costs.values():
                earlier = series.counted.get(cost.tool, {}).get(cost.node)
                if earlier is not None and earlier.stacks and not cost.stacks:  # the first pass's picture
                    cost = replace(cost, stacks=earlier.stacks)
                series.counted.setdefault(cost.tool, {})[cost.node] = cost
        return True


def _side(series: Series) -> CountedSide:
    """``series`` as a side of a counting pass (it has a counter and a driver)."""
    assert series.counter is not None
    assert series.driver_instance is not None
    return CountedSide(series.counter, series.driver_instance.run, series.url, series.shape, series.label)


def _parts_changed(
    m: Measurement, budget: Budget, floor: float, baseline_counted: Optional[CountedLookup]
) -> Optional[list[tuple[str, float]]]:
    """The parts of ``budget``'s counted cost that changed by ``floor`` or more against what it
    is compared with: the series of this run, or the stored baseline's counted costs (None:
    compared with neither, or their parts are not known)."""
    if budget.form != "ratio":
        return None
    tool = metrics.tool_of(budget.metric)
    other = m.judged_series(budget)
    if other is not None:
        against = other.counted.get(tool, {})
    elif budget.comparison == "baseline" and baseline_counted is not None and m.judged_by_baseline:
        against = baseline_counted(m.key, "candidate", tool) or {}
    else:
        return None
    try:
        candidate = metrics.scoped_costs(budget.metric, m.candidate.counted.get(tool, {}))
        reference = metrics.scoped_costs(budget.metric, against)
    except metrics.MetricUnavailable:
        return None
    return parts_changed(candidate, reference, floor)
