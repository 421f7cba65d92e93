"""Report rows: the outcome of one budget of one test, for people and for machines.

Rows are built in one place (:func:`row_for_outcome`, :func:`invalid_rows`); they travel
between xdist workers and the controller as dicts (:meth:`ReportRow.to_dict`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional

from pytest_netperf.measure.design import DESCRIPTIONS
from pytest_netperf.report.cost_diff import cost_diffs_for
from pytest_netperf.report.cost_picture import pictures_for
from pytest_netperf.report.counted import COUNTED_FACT, counted_fact, outcome_notes
from pytest_netperf.report.load_workers import LOAD_WORKERS_FACT, workers_fact
from pytest_netperf.report.runner_state import RUNNER_KEY, runner_json, runner_note
from pytest_netperf.report.system_costs import SYSTEM_FACT, costs_fact, costs_json
from pytest_netperf.report.transport import TRANSPORT_FACT, transport_fact, transport_json
from pytest_netperf.verdict.status import SUMMARY_ORDER, SUMMARY_WHEN_PRESENT, WORST_FIRST, Status

if TYPE_CHECKING:
    from pytest_netperf.budget.grammar import Budget
    from pytest_netperf.measure.gate import Gate
    from pytest_netperf.measure.model import Measurement
    from pytest_netperf.measure.outcomes import BudgetOutcome


@dataclass
class ReportRow:
    """The outcome of one budget of one test, formatted for people, plus raw numbers."""

    test_id: str
    budget: str
    reference: str
    measured: str
    interval: str
    verdict: str
    rounds: int
    notes: list[str] = field(default_factory=list)
    driver: str = ""
    where: str = ""
    raw: dict[str, Any] = field(default_factory=dict)
    #: Facts per measured series (``candidate``, ``reference``): images, resources, driver cores.
    facts: dict[str, dict[str, str]] = field(default_factory=dict)
    #: How the candidate and what the budget compares it with shared the runner's time
    #: (measure/design.py: simultaneous, turns or alternate); "" when nothing of this run is compared.
    design: str = ""
    #: How busy the runner was during the measurement's rounds (report/runner_state.py); empty when unread.
    runner: dict[str, Any] = field(default_factory=dict)
    #: A counted instructions budget that moved: both sides' call stacks and functions per node,
    #: for the HTML report's flame graph (report/cost_picture.py :class:`CostPicture` dicts).
    pictures: list[dict[str, Any]] = field(default_factory=list)
    #: A counted budget that moved: per node, the parts whose count changed most, for the
    #: pull-request comment (report/cost_diff.py :class:`CostDiff` dicts).
    cost_diffs: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.verdict = Status.parse(self.verdict).value

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> ReportRow:
        """Build from a JSON-ready dict (unknown keys are ignored)."""
        known = cls.__dataclass_fields__
        data = {k: v for k, v in doc.items() if k in known}
        data["notes"] = list(data.get("notes") or [])
        data["raw"] = dict(data.get("raw") or {})
        data["runner"] = dict(data.get("runner") or {})
        data["pictures"] = [dict(p) for p in data.get("pictures") or []]
        data["cost_diffs"] = [dict(d) for d in data.get("cost_diffs") or []]
        data["facts"] = {
            str(label): {str(k): str(v) for k, v in (facts or {}).items()}
            for label, facts in (data.get("facts") or {}).items()
        }
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def as_rows(rows: Iterable[Any]) -> list[ReportRow]:
    """``ReportRow`` objects from rows or their dicts."""
    return [r if isinstance(r, ReportRow) else ReportRow.from_dict(r) for r in rows]


def counts(rows: Iterable[Any]) -> dict[str, int]:
    """Number of rows per verdict (every verdict present, zero included), worst first."""
    out = {status.value: 0 for status in WORST_FIRST}
    for row in as_rows(rows):
        out[row.verdict] += 1
    return out


def summary_line(rows: Iterable[Any]) -> str:
    """``3 passed, 1 failed, 0 inconclusive, 0 invalid, 1 new``; with an accepted regression
    ``3 passed, 0 failed, 1 accepted, 0 inconclusive, 0 invalid, 1 new`` (``accepted`` is
    counted only when a row is ACCEPTED: a run without acceptance reads as it always did)."""
    n = counts(rows)
    shown = [s for s in SUMMARY_ORDER if s not in SUMMARY_WHEN_PRESENT or n[s.value]]
    return ", ".join(f"{n[status.value]} {status.word}" for status in shown)


def overall_verdict(rows: Iterable[Any]) -> Optional[Status]:
    """The worst verdict among ``rows`` (``None`` for no rows)."""
    present = {row.verdict for row in as_rows(rows)}
    return next((s for s in WORST_FIRST if s.value in present), None)


def verdict_rank(verdict: str) -> int:
    """Severity of a row's verdict, worst first (for sorting)."""
    return Status.parse(verdict).rank


#: The fact naming the exact request a series was measured with (method, URL, headers, body, load).
REQUEST_FACT = "request"
#: The fact saying how the compared sides shared the runner's time (the measurement design).
DESIGN_FACT = "rounds"


def compared_design(m: Measurement, budget: Budget) -> str:
    """How the candidate and what ``budget`` compares it with shared the runner's time in ``m``
    (``simultaneous``, ``turns`` or ``alternate``); "" when the budget compares with nothing measured in this run."""
    return m.design if m.judged_series(budget) is not None else ""  # the series are loaded all together or all apart


def round_fact(m: Measurement) -> str:
    """How the series of ``m`` shared the runner's time, the same for each ("" for one series)."""
    return DESCRIPTIONS[m.design] if len(m.series()) > 1 else ""


def series_facts(m: Measurement) -> dict[str, dict[str, str]]:
    """The facts of every series of ``m`` by label (candidate first): the exact request each
    side was measured with, and what the system under test spent per node; empty when none has any."""
    facts = {s.label: dict(s.facts) for s in m.series()}
    rounds = round_fact(m)
    for s in m.series():
        if rounds:
            facts[s.label][DESIGN_FACT] = rounds
        if s.url:
            facts[s.label][REQUEST_FACT] = s.shape.describe_request(s.url)
        spent = costs_fact(s.rounds)
        if spent:
            facts[s.label][SYSTEM_FACT] = spent
        l4 = transport_fact(s.rounds)
        if l4:
            facts[s.label][TRANSPORT_FACT] = l4
        workers = workers_fact(s.rounds)
        if workers:
            facts[s.label][LOAD_WORKERS_FACT] = workers
        if s.counted:
            facts[s.label][COUNTED_FACT] = counted_fact(s.counted)
    return facts if any(facts.values()) else {}


def describe_facts(facts: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Readable lines for a row's facts: one unlabelled line for a single series, one line
    ``candidate and reference: …`` when both series have the same facts, else one labelled
    line per series (``candidate: images …``, ``reference: none``)."""
    texts = {label: "; ".join(f"{k}: {v}" for k, v in values.items()) for label, values in facts.items()}
    if not any(texts.values()):
        return []
    if len(texts) == 1:
        return list(texts.values())
    if len(set(texts.values())) == 1:
        return [f"{' and '.join(texts)}: {next(iter(texts.values()))}"]
    return [f"{label}: {text or 'none'}" for label, text in texts.items()]


def row_for_outcome(outcome: BudgetOutcome, gate: Gate) -> ReportRow:
    """The row of one budget outcome of a test."""
    v = outcome.verdict
    m = gate.measurement(outcome.measurement)
    fmt = outcome.budget.format_value
    measured = interval = ""
    raw: dict[str, Any] = {}
    if v is not None:
        measured = fmt(v.estimate)
        interval = f"[{fmt(v.ci_low)}, {fmt(v.ci_high)}]"
        raw = {
            "estimate": _plain(v.estimate),
            "ci_low": _plain(v.ci_low),
            "ci_high": _plain(v.ci_high),
            "threshold": _plain(v.threshold),
            "p_value": _plain(v.p_value),
            "method": str(v.method),
            "mde": _plain(v.mde),
            "exact": bool(v.exact),
            "excused": bool(v.excused),
        }
    return ReportRow(
        test_id=_test_label(gate.test_id, outcome.measurement),
        budget=outcome.budget.text,
        reference=outcome.reference_label,
        measured=measured,
        interval=interval,
        verdict=outcome.status.value,
        rounds=int(v.n_rounds if v is not None else len(m.candidate.rounds)),
        notes=[*outcome_notes(outcome, m), *runner_note(m)],
        driver=m.candidate.driver,
        where=m.candidate.where,
        raw=raw,
        facts=series_facts(m),
        design=compared_design(m, outcome.budget),
        runner=runner_json(m) or {},
        pictures=[p.to_dict() for p in pictures_for(outcome, m)],
        cost_diffs=[d.to_dict() for d in cost_diffs_for(outcome, m)],
    )


def invalid_rows(gate: Gate, reason: str) -> list[ReportRow]:
    """One INVALID row per budget of a test whose measurement could not be trusted."""
    last = gate.measurements[-1].candidate if gate.measurements else None
    measured = gate.measurements[-1] if gate.measurements else None
    facts = series_facts(gate.measurements[-1]) if gate.measurements else {}
    texts = [b.text for b in gate.budgets] or ["-"]
    return [
        ReportRow(
            test_id=gate.test_id,
            budget=text,
            reference="",
            measured="",
            interval="",
            verdict=Status.INVALID.value,
            rounds=0,
            notes=[reason, *runner_note(measured)],
            driver=last.driver if last else "",
            where=last.where if last else "",
            facts={label: dict(values) for label, values in facts.items()},
            runner=runner_json(measured) or {},
        )
        for text in texts
    ]


def measurement_summary(m: Measurement) -> dict[str, Any]:
    """Per-series rounds of one measurement, for the JSON report."""
    out: dict[str, Any] = {"key": m.key, "hops": m.hops, RUNNER_KEY: runner_json(m), "series": {}}
    for s in m.series():
        out["series"][s.label] = {
            "url": s.url,
            "where": s.where,
            "driver": s.driver,
            "shape": s.shape.describe(),
            "rounds": [r.to_dict() for r in s.rounds],
            "sockets_opened": [r.sockets_opened for r in s.rounds],
            "facts": {**s.facts, **({COUNTED_FACT: counted_fact(s.counted)} if s.counted else {})},
            "system_costs": costs_json(s.rounds),
            "l4": transport_json(s.rounds),
            "counted": {
                tool: {node: cost.to_dict() for node, cost in nodes.items()} for tool, nodes in s.counted.items()
            },
            "counting_error": s.counting_error
            or "; ".join(f"{tool}: {error}" for tool, error in sorted(s.counting_errors.items())),
        }
    return out


def _test_label(test_id: str, measurement: str) -> str:
    return test_id if measurement == "default" else f"{test_id} [{measurement}]"


def _plain(value: Any) -> Optional[float]:
    """A builtin float (rows cross process boundaries under xdist: no numpy scalars)."""
    return None if value is None else float(value)
