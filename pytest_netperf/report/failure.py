"""The text of a failing gate: one line per budget, then what to do.

It reads like a good assertion message: per failing budget its verdict, the measured
value and interval, what it was judged against and the rounds; the notes of that budget;
then the next step (the command that accepts an intended change, the policy options)
and where the reports are. p-values and methods stay in the JSON report and the table.
Nothing here imports pytest.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from pytest_netperf.baseline.policy import UPDATE_OPTION
from pytest_netperf.budget import metrics
from pytest_netperf.measure.model import BASE_LABEL
from pytest_netperf.report.counted import outcome_notes
from pytest_netperf.report.runner_state import runner_note
from pytest_netperf.verdict.acceptance import ACCEPT_ENV, ACCEPT_OPTION, ACCEPT_TRAILER
from pytest_netperf.verdict.policy import undecided_fails
from pytest_netperf.verdict.status import Status

if TYPE_CHECKING:
    from pytest_netperf.measure.model import Measurement
    from pytest_netperf.measure.outcomes import BudgetOutcome

#: The reference label of an outcome judged against the stored baseline (``base`` is the
#: base revision measured in the same rounds: no stored file to update).
STORED_BASELINE_LABEL = "baseline"


@dataclass(frozen=True)
class FailureContext:
    """What the failure text says beyond the outcomes themselves.

    ``references`` maps (measurement key, reference label) to what that label stood for
    (``the same-run reference http://…``); ``reports`` are the report paths of the run.
    """

    references: Mapping[tuple[str, str], str] = field(default_factory=dict)
    rounds_max: Optional[int] = None
    reports: Sequence[str] = ()
    #: This run wrote the baselines (``--netperf-update-baseline``).
    baseline_written: bool = False
    #: The test's measurements: a counted budget's notes say what its counting passes counted.
    measurements: Sequence[Measurement] = ()


def failing(outcomes: Sequence[BudgetOutcome], policy: str) -> list[BudgetOutcome]:
    """The outcomes that fail the test: FAIL and INVALID, and a final INCONCLUSIVE that
    ``policy`` turns red (:mod:`pytest_netperf.verdict.policy`)."""
    return [o for o in outcomes if o.status in (Status.FAIL, Status.INVALID) or inconclusive_fails(o, policy)]


def inconclusive_fails(outcome: BudgetOutcome, policy: str) -> bool:
    """Whether a final INCONCLUSIVE ``outcome`` fails the test under ``policy``."""
    return outcome.status is Status.INCONCLUSIVE and undecided_fails(outcome.budget, outcome.verdict, policy)


def failure_text(
    outcomes: Sequence[BudgetOutcome], policy: str, context: Optional[FailureContext] = None
) -> Optional[str]:
    """The test-failure text, or None when the gate passes."""
    context = context or FailureContext()
    bad = failing(outcomes, policy)
    if not bad:
        return None
    shared = _shared_notes(bad)
    counted = f" {len(bad)} of {len(outcomes)} budgets" if len(outcomes) > 1 else ""
    lines = [f"netperf gate failed:{counted}"]
    for o in bad:
        lines.append("  " + budget_line(o, context.references.get((o.measurement, o.reference_label), "")))
        measured = next((m for m in context.measurements if m.key == o.measurement), None)
        lines.extend(f"      {n}" for n in _own_notes(o, shared, policy, measured))
    lines.extend(f"  note: {n}" for n in shared)
    lines.extend(_runner_lines(bad, context.measurements))
    steps = next_steps(bad, policy, context)
    if steps:
        lines.append("what to do:")
        lines.extend(f"  - {s}" for s in steps)
    return "\n".join(lines)


def budget_line(outcome: BudgetOutcome, against: str = "") -> str:
    """``FAIL: 'rps >= 0.7x baseline': 0.620x [0.580x, 0.660x] vs the stored baseline (c), n=5``."""
    where = f" [{outcome.measurement}]" if outcome.measurement != "default" else ""
    head = f"{outcome.status}: '{outcome.budget.text}'{where}"
    v = outcome.verdict
    if v is None:
        return f"{head}: no verdict" + (f" vs {against}" if against else "")
    fmt = outcome.budget.format_value
    value = fmt(v.estimate) + (" (exact)" if v.exact else f" [{fmt(v.ci_low)}, {fmt(v.ci_high)}]")
    return f"{head}: {value}" + (f" vs {against}" if against else "") + f", n={v.n_rounds}"


def next_steps(bad: Sequence[BudgetOutcome], policy: str, context: FailureContext) -> list[str]:
    """What to do about the failing outcomes, each step once."""
    steps: list[str] = []
    statuses = {o.status for o in bad}
    stored = [o for o in bad if o.reference_label == STORED_BASELINE_LABEL and o.status is not Status.INVALID]
    if stored and context.baseline_written:
        steps.append(f"this run wrote the new baseline ({UPDATE_OPTION}); the next run is judged against it")
    elif stored:
        accept = f"netperf baseline update '{stored[0].test_id}'"
        steps.append(f"intended? accept this run's results: {accept} (or rerun with {UPDATE_OPTION})")
    if Status.FAIL in statuses and len(stored) < len(bad):
        steps.append("intended? loosen the budget in @pytest.mark.netperf(...); otherwise fix the regression")
    if Status.FAIL in statuses:
        steps.append(
            f"an intended regression? accept it with a reason: {ACCEPT_OPTION} 'REASON' ({ACCEPT_ENV} in CI, "
            f"or a '{ACCEPT_TRAILER}: REASON' trailer in the commit message); it shows as ACCEPTED"
        )
    undecided = [o for o in bad if o.status is Status.INCONCLUSIVE]
    if any(not metrics.get(o.budget.metric).counted for o in undecided):
        cap = f" (max {context.rounds_max})" if context.rounds_max else ""
        steps.append(
            f"undecided within the rounds allowed{cap}: raise --netperf-max-rounds, loosen the budget, "
            f"or allow it with --netperf-inconclusive=warn (now: {policy})"
        )
    if any(metrics.get(o.budget.metric).counted for o in undecided):
        steps.append(
            "a counted cost undecided by the counting pass's repetitions: raise --netperf-counting-repetitions "
            "(or --netperf-counting-requests, which shrinks what timing moves per request), loosen the budget, "
            f"or allow it with --netperf-inconclusive=warn (now: {policy})"
        )
    if Status.INVALID in statuses:
        steps.append("INVALID is no verdict: the measurement cannot be trusted; fix the cause in the note and rerun")
    if context.reports:
        steps.append(f"reports: {', '.join(context.reports)}")
    return steps


def reference_names(
    measurements: Sequence[Measurement], stored_class: str = "", base_revision: str = ""
) -> dict[tuple[str, str], str]:
    """(measurement key, reference label) -> what a budget with that label was judged
    against: the reference URL, the base revision, or the stored baseline's machine class."""
    stored = f"the stored baseline ({stored_class})" if stored_class else "the stored baseline"
    out: dict[tuple[str, str], str] = {}
    for m in measurements:
        if m.reference is not None:
            out[(m.key, "reference")] = f"the same-run reference {m.reference.url}"
        revision = f" {base_revision}" if base_revision else ""
        if m.base is not None:
            out[(m.key, m.base.label)] = f"the base revision{revision} (same rounds)"
        elif m.base_error:
            out[(m.key, BASE_LABEL)] = f"the base revision{revision}, whose stack did not start"
        out[(m.key, STORED_BASELINE_LABEL)] = stored
    return out


def _runner_lines(bad: Sequence[BudgetOutcome], measurements: Sequence[Measurement]) -> list[str]:
    """The runner's state during each measurement with a failing budget (``[hops=3]`` names one
    that is not the default), so a busy runner is told from a regression."""
    keys = dict.fromkeys(o.measurement for o in bad)
    lines: list[str] = []
    for m in measurements:
        if m.key in keys:
            where = "" if m.key == "default" else f"[{m.key}] "
            lines.extend(f"  {where}{note}" for note in runner_note(m))
    return lines


def _shared_notes(bad: Sequence[BudgetOutcome]) -> list[str]:
    """Notes two or more failing outcomes carry (test-level notes, the base side's log): said
    once, not per budget."""
    counts = Counter(n for o in bad for n in dict.fromkeys(o.notes))
    return [n for n in counts if counts[n] > 1]


def _own_notes(
    outcome: BudgetOutcome, shared: Sequence[str], policy: str, m: Optional[Measurement] = None
) -> list[str]:
    """The outcome's notes, without the shared ones and without what its line already says."""
    implied = set(shared)
    restated = ""
    if outcome.verdict is not None:  # the gate's "inconclusive after N rounds; policy: P" restates the line
        restated = f"inconclusive after {outcome.verdict.n_rounds} rounds; policy: "
    notes = outcome_notes(outcome, m)
    return [n for n in dict.fromkeys(notes) if n not in implied and not (restated and n.startswith(restated))]
