"""Outcomes: the final word on each budget of a test, with the notes that explain it.

From a measurement's verdicts (or the lack of them) each budget gets PASS, FAIL,
INCONCLUSIVE, INVALID (no data, errors where none are allowed) or NEW (nothing to compare
with); :func:`corrected` then applies Holm over the test's judged budgets, and
:func:`accepted` turns a FAIL the user accepted into ACCEPTED.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.measure.contention import starved_note
from pytest_netperf.measure.model import BASE_LABEL, Measurement
from pytest_netperf.measure.system_costs import closed_loop_note
from pytest_netperf.measure.validity import left_out_note
from pytest_netperf.verdict import stats
from pytest_netperf.verdict.acceptance import Acceptance, accepted_note, accepted_status
from pytest_netperf.verdict.calibration import NoiseFloor, check_budget_against_noise
from pytest_netperf.verdict.status import Status

#: Why a budget against the stored baseline is NEW when there is no baseline at all.
MISSING_BASELINE_NOTE = "no stored baseline: recorded as NEW (update with --netperf-update-baseline)"


@dataclass
class BudgetOutcome:
    """The final word on one budget for one measurement."""

    test_id: str
    measurement: str
    budget: Budget
    status: Status
    verdict: Optional[stats.Verdict]
    notes: list[str] = field(default_factory=list)
    reference_label: str = ""
    #: The acceptance that made a FAIL ACCEPTED (:func:`accepted`), else None.
    accepted_by: Optional[Acceptance] = None

    def __post_init__(self) -> None:
        self.status = Status.parse(self.status)


def error_note(m: Measurement) -> Optional[str]:
    """``candidate had 3 errors (HTTP 502: 2, timeout: 1)`` for every series with errors, or
    None. Rounds whose driver could not send its schedule (their errors are the client's) are
    left out."""
    parts = []
    for s in m.series():
        rounds = s.kept_rounds({i for i, d in s.disturbed.items() if d.spoils("errors")})
        errs = sum(r.error_count for r in rounds)
        if errs:
            kinds: dict[str, int] = {}
            for r in rounds:
                for k, v in r.errors.items():
                    kinds[k] = kinds.get(k, 0) + v
                for code, v in r.status_codes.items():
                    if not code.startswith("2"):
                        kinds[f"HTTP {code}"] = kinds.get(f"HTTP {code}", 0) + v
            desc = ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items()))
            parts.append(f"{s.label} had {errs} errors ({desc})")
    return "; ".join(parts) or None


def reference_label(m: Measurement, budget: Budget) -> str:
    """What ``budget`` is judged against in ``m``: ``reference``, ``base`` (the base revision,
    measured or failed to start), ``baseline`` (stored) or ``absolute``."""
    if budget.comparison == "baseline":
        return BASE_LABEL if m.base is not None or m.base_error else "baseline"
    if budget.comparison == "reference":
        return "reference" if m.reference is not None else ""
    return "absolute"


def measurement_outcomes(
    test_id: str,
    m: Measurement,
    budgets: Sequence[Budget],
    *,
    implicit_error_budget: bool,
    confidence: float,
    missing_baseline_note: str = MISSING_BASELINE_NOTE,
    test_notes: Sequence[str] = (),
) -> list[BudgetOutcome]:
    """The outcome of every budget of ``budgets`` that applies to ``m`` (plus the implicit
    ``errors == 0`` when no budget speaks of errors and some were seen)."""
    outcomes = []
    errors = error_note(m)
    for b in budgets:
        if not m.applies(b):
            continue
        label = reference_label(m, b)
        v = m.verdicts.get(b.text)
        no_data = m.data_problem(b)
        if b.comparison == "baseline" and m.base_error:
            no_data = f"{BASE_LABEL} side INVALID: {m.base_error}"
        if no_data:
            outcomes.append(BudgetOutcome(test_id, m.key, b, Status.INVALID, None, [no_data], label))
            continue
        if b.comparison == "baseline" and v is None:
            outcomes.append(
                BudgetOutcome(test_id, m.key, b, Status.NEW, None, [m.base_note or missing_baseline_note], label)
            )
            continue
        assert v is not None
        o = BudgetOutcome(test_id, m.key, b, v.status, v, [], label)
        if v.note:
            o.notes.append(v.note)
        if v.undecidable:
            o.notes.append(v.undecidable)
        if m.design_note and not metrics.get(b.metric).counted:
            o.notes.append(m.design_note)
        if m.rate_note and not metrics.get(b.metric).counted:
            o.notes.append(m.rate_note)
        o.notes.extend(starved_note(s.label, s.starved, len(s.rounds)) for s in m.series() if s.starved)
        spoiled = {i: d for i, (_, d) in m.spoiled_rounds(b).items()}
        if spoiled and v.n_rounds:
            o.notes.append(left_out_note(b.metric, spoiled, len(m.candidate.rounds)))
        closed_loop = closed_loop_note(b, m.candidate.rounds)
        if closed_loop:
            o.notes.append(closed_loop)
        if errors and implicit_error_budget:
            o.status = Status.INVALID
            o.notes.append(f"{errors}; no errors are allowed unless a budget says so (e.g. 'error_rate <= 1%')")
        outcomes.append(o)
    if implicit_error_budget and errors:
        implicit = Budget.parse("errors == 0")
        client_errors = {i for i, d in m.candidate.disturbed.items() if d.spoils("errors")}
        v = stats.evaluate(implicit, m.candidate.values("errors", client_errors), confidence=confidence)
        outcomes.append(
            BudgetOutcome(test_id, m.key, implicit, v.status, v, [errors + " (implicit budget)"], "absolute")
        )
    for o in outcomes:
        o.notes.extend(test_notes)
    return outcomes


def unjudged_outcomes(
    test_id: str, budgets: Sequence[Budget], outcomes: Sequence[BudgetOutcome], last_key: str
) -> list[BudgetOutcome]:
    """An INVALID outcome for every budget no measurement judged: none goes unreported."""
    judged = {o.budget.text for o in outcomes}
    missing = []
    for b in budgets:
        if b.text in judged:
            continue
        if b.per_hop:
            why = "per hop, but every measurement had hops=0: pass hops=N >= 1 where N hops are crossed"
        else:
            why = "no measurement of this test could judge it"
        missing.append(BudgetOutcome(test_id, last_key, b, Status.INVALID, None, [f"never judged: {why}"]))
    return missing


def corrected(
    outcomes: Sequence[BudgetOutcome], confidence: float, inconclusive_policy: str, noise: Optional[NoiseFloor] = None
) -> list[BudgetOutcome]:
    """``outcomes`` with Holm applied over the judged ones (a changed status says so), the
    noise floor's warning where a budget is tighter than it, and the policy of a final
    INCONCLUSIVE named."""
    outcomes = list(outcomes)
    judged = [o for o in outcomes if o.verdict is not None and o.status.judged]
    if len(judged) > 1:
        adjusted = stats.apply_holm([o.verdict for o in judged if o.verdict is not None], 1.0 - confidence)
        for o, v in zip(judged, adjusted, strict=True):
            if o.verdict is not None and v.status != o.verdict.status:
                o.notes.append(f"Holm correction over {len(judged)} budgets: {o.verdict.status} -> {v.status}")
            o.verdict = v
            o.status = v.status
    for o in outcomes:
        if noise is not None and o.verdict is not None:
            warning = check_budget_against_noise(o.budget, noise, o.verdict.n_rounds)
            if warning:
                o.notes.append(warning)
        if o.status is Status.INCONCLUSIVE:
            rounds = o.verdict.n_rounds if o.verdict else "?"
            unit = "repetitions of the counting pass" if metrics.get(o.budget.metric).counted else "rounds"
            o.notes.append(f"inconclusive after {rounds} {unit}; policy: {inconclusive_policy}")
    return outcomes


def accepted(outcomes: Sequence[BudgetOutcome], acceptances: Sequence[Acceptance]) -> list[BudgetOutcome]:
    """``outcomes`` with every FAIL that an acceptance covers made ACCEPTED, the reason and
    the source in its notes (:func:`~pytest_netperf.verdict.acceptance.accepted_status`);
    INVALID, INCONCLUSIVE and the rest stay as they are."""
    outcomes = list(outcomes)
    for o in outcomes:
        status, by = accepted_status(o.status, o.test_id, o.budget, acceptances)
        if by is not None:
            o.status = status
            o.accepted_by = by
            o.notes.insert(0, accepted_note(by))
    return outcomes
