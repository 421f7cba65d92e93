"""Which stored baseline judges a test, and what a run records: the baseline policy.

The plugin asks :class:`BaselinePolicy` once per test for the baseline its ``baseline``
budgets are judged against (:meth:`BaselinePolicy.choose`), and once the gate has finished
hands it the measured series to keep (:meth:`BaselinePolicy.record`). The machine class,
the machine's measured speed (:mod:`pytest_netperf.baseline.speed`), the fingerprint-mismatch
policy and the update option decide; pytest is not imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from pytest_netperf.baseline.fingerprint import compare_fingerprints, machine_fingerprint
from pytest_netperf.baseline.machine import CLASS_KEY
from pytest_netperf.baseline.machine import machine_class as class_of
from pytest_netperf.baseline.model import Baseline, SeriesRecord
from pytest_netperf.baseline.speed import (
    CALIBRATION_KEY,
    SpeedCheck,
    counted_note,
    fail_text,
    new_note,
    stored_calibration,
    warn_note,
)
from pytest_netperf.baseline.store import BaselineStore
from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.errors import BaselineError, NetperfError
from pytest_netperf.measure.model import BaselineLookup, CountedLookup, Measurement, series_name
from pytest_netperf.measure.outcomes import MISSING_BASELINE_NOTE, BudgetOutcome
from pytest_netperf.measure.speed_excuse import SlowerMachine, slower_machine
from pytest_netperf.results.counted import CountedCost
from pytest_netperf.runtime.machine_speed import Calibration, session_calibration
from pytest_netperf.verdict.acceptance import ACCEPTED_NOTE_PREFIX, accepted_note
from pytest_netperf.verdict.estimators import ratio_problem
from pytest_netperf.verdict.status import Status

#: The option that measures again and writes the baseline.
UPDATE_OPTION = "--netperf-update-baseline"
#: The option that writes a test's baseline where this machine has none yet.
RECORD_MISSING_OPTION = "--netperf-record-missing-baselines"
#: The option that lets :data:`UPDATE_OPTION` write the baseline of a run that failed.
ACCEPT_FAILED_OPTION = "--netperf-accept-failed-baseline"
#: Verdicts that make a run nobody's baseline (a broken run is never anybody's reference).
#: ACCEPTED is not among them: a FAIL accepted as an intended regression may be the new baseline.
BROKEN_STATUSES = (Status.FAIL, Status.INVALID)


def not_a_baseline(outcomes: Iterable[BudgetOutcome]) -> Optional[str]:
    """Why a run whose budgets ended in ``outcomes`` is nobody's baseline, or None: a budget
    was INVALID, or one FAILed other than against the stored baseline (a change the update
    accepts): ``budget 'errors == 0' was FAIL``. The one rule of every baseline write."""
    broken = [
        o
        for o in outcomes
        if o.status in BROKEN_STATUSES and not (o.status is Status.FAIL and o.budget.comparison == "baseline")
    ]
    if not broken:
        return None
    where = {o.measurement: "" if o.measurement == "default" else f" [{o.measurement}]" for o in broken}
    return "; ".join(f"budget '{o.budget.text}'{where[o.measurement]} was {o.status}" for o in broken)


def accepted_regression(outcomes: Iterable[BudgetOutcome]) -> Optional[str]:
    """The ACCEPTED budgets of a run and what accepted them, or None: ``budget 'p50 < 1ms':
    FAIL accepted as an intended regression by --netperf-accept: slower TLS``. Recorded with
    the run's results and the baseline written from them."""
    accepted = [o for o in outcomes if o.status is Status.ACCEPTED]
    if not accepted:
        return None
    parts = []
    for o in accepted:
        where = "" if o.measurement == "default" else f" [{o.measurement}]"
        why = accepted_note(o.accepted_by) if o.accepted_by is not None else ACCEPTED_NOTE_PREFIX
        parts.append(f"budget '{o.budget.text}'{where}: {why}")
    return "; ".join(dict.fromkeys(parts))


@dataclass
class BaselineChoice:
    """The stored baseline a test is judged against (None: its baseline budgets are NEW)."""

    baseline: Optional[Baseline] = None
    #: What the report says of the choice (another class's baseline, a different machine).
    notes: list[str] = field(default_factory=list)
    #: The note of a NEW budget when there is no baseline (or its wall-clock figures do not travel).
    missing_note: str = MISSING_BASELINE_NOTE
    #: False when the baseline's machine measured another speed: only counted costs are judged.
    wall_clock: bool = True
    #: This machine measured slower than the baseline's, within the speed threshold: its
    #: wall-clock misses are judged again with that speed given back (None: not slower).
    slower: Optional[SlowerMachine] = None

    @property
    def lookup(self) -> Optional[BaselineLookup]:
        """The gate's view of the baseline: (measurement key, series label, metric) -> values;
        None for a wall-clock metric when :attr:`wall_clock` is False (its budget is NEW)."""
        baseline = self.baseline
        if baseline is None:
            return None
        wall_clock = self.wall_clock

        def lookup(key: str, label: str, metric: str) -> Optional[list[float]]:
            if not wall_clock and not counted(metric):
                return None
            try:
                return baseline.values(series_name(key, label), metric)
            except KeyError:  # a metric the stored rounds cannot give (recorded without system costs)
                return None

        return lookup

    @property
    def counted_lookup(self) -> Optional[CountedLookup]:
        """The baseline's counted costs: (measurement key, series label, tool) -> node -> cost
        (their parts, for the counted verdict's thin-miss rule); None without a baseline."""
        baseline = self.baseline
        if baseline is None:
            return None

        def lookup(key: str, label: str, tool: str) -> Optional[dict[str, CountedCost]]:
            return baseline.counted(series_name(key, label), tool)

        return lookup


@dataclass
class Recorded:
    """What :meth:`BaselinePolicy.record` kept of a test."""

    record: Baseline
    #: Where the baseline was written (``--netperf-update-baseline``), else None.
    written: Optional[Path] = None
    #: The pending results could not be saved (a warning, never a verdict).
    pending_problem: Optional[str] = None


def counted(metric: str) -> bool:
    """Whether ``metric`` is a counted cost (instructions, system calls per request): it does
    not depend on the machine's speed. An unknown name counts as wall-clock."""
    try:
        return metrics.get(metric).counted
    except KeyError:
        return False


class BaselinePolicy:
    """Baseline selection and recording for one machine class."""

    def __init__(
        self,
        store: BaselineStore,
        fingerprint_mismatch: str,
        update: bool,
        speed: Callable[[], Optional[Calibration]] = session_calibration,
        accept_failed: bool = False,
    ) -> None:
        self.store = store
        #: ``new``, ``warn`` or ``fail``: what a baseline of another machine does.
        self.fingerprint_mismatch = fingerprint_mismatch
        #: Whether this run writes the baselines (``--netperf-update-baseline``).
        self.update = update
        #: This machine's calibration, measured on the first call (once per process).
        self.speed = speed
        #: Whether an update writes the baseline of a run that failed (:data:`ACCEPT_FAILED_OPTION`).
        self.accept_failed = accept_failed

    @property
    def machine_class(self) -> Optional[str]:
        """The machine class whose baselines this run reads and writes."""
        return self.store.machine_class

    def choose(self, test_id: str, budgets: Sequence[Budget]) -> BaselineChoice:
        """The baseline of ``test_id`` when a budget compares against one (a corrupt file raises
        :class:`BaselineError` naming it; a different machine under ``fail`` a NetperfError)."""
        choice = BaselineChoice()
        if not any(b.comparison == "baseline" for b in budgets):
            return choice
        choice.baseline = self.store.load(test_id)
        if choice.baseline is None:
            choice.baseline, choice.missing_note = self._other_class_baseline(test_id, choice.notes)
            if choice.baseline is None:
                choice.baseline = self._counted_elsewhere(test_id, budgets, choice)
        if choice.baseline is not None and not self._comparable(choice, budgets):
            choice.baseline = None
        if choice.baseline is not None:
            # the machine now (fail fast); the images once measured (see image_notes)
            digests = choice.baseline.fingerprint.get("image_digests")
            choice.notes.extend(self.fingerprint_notes(choice.baseline, digests))
            if choice.wall_clock:
                self._check_speed(choice, budgets)
        return choice

    def _comparable(self, choice: BaselineChoice, budgets: Sequence[Budget]) -> bool:
        """Whether the chosen baseline can be the denominator of every ratio budget against it
        (:func:`ratio_problem`: stored rounds of a run that measured nothing cannot). A
        :class:`BaselineError` naming the file and the metric when not; under
        :data:`UPDATE_OPTION`, which replaces it, False with a note instead."""
        baseline = choice.baseline
        assert baseline is not None
        for budget in budgets:
            if budget.comparison != "baseline" or budget.form == "added":
                continue
            for name, record in baseline.series.items():
                if name.rsplit("/", 1)[-1] != "candidate":
                    continue
                try:
                    values = record.values(budget.metric)
                except KeyError:
                    continue
                problem = ratio_problem(values)
                if problem is None:
                    continue
                where = baseline.source or self.store.path_for(baseline.test_id, class_of(baseline.fingerprint))
                text = (
                    f"{where}: series {name!r} {budget.metric}: the stored rounds {problem} "
                    f"(budget '{budget.text}' divides by them; a baseline of a run that measured nothing?)"
                )
                if self.update:
                    choice.notes.append(f"{text}: not compared; this run replaces it")
                    return False
                raise BaselineError(
                    f"{text}; record it again with {UPDATE_OPTION} from a healthy run, or delete the file"
                )
        return True

    def _counted_elsewhere(self, test_id: str, budgets: Sequence[Budget], choice: BaselineChoice) -> Optional[Baseline]:
        """Under the ``new`` policy, another class's baseline for the counted-cost budgets only
        (instructions and system calls per request travel between machines; the wall-clock
        budgets stay NEW), or None when no baseline budget is a counted cost."""
        if self.fingerprint_mismatch != "new":
            return None
        if not any(b.comparison == "baseline" and counted(b.metric) for b in budgets):
            return None
        others = sorted(self.store.other_classes(test_id))
        if not others:
            return None
        choice.wall_clock = False
        choice.notes.append(
            f"counted costs judged against the baseline of {others[0]} (instructions and system calls per "
            "request do not depend on the machine's speed); wall-clock budgets NEW"
        )
        return self.store.load_from_class(test_id, others[0])

    def _check_speed(self, choice: BaselineChoice, budgets: Sequence[Budget]) -> None:
        """Compare the baseline's calibration with this machine's (measured only when a
        wall-clock budget is judged against a baseline that has one). Beyond the threshold
        the ``fingerprint_mismatch`` policy decides: new (wall-clock budgets NEW, counted
        costs judged), warn (judged, noted) or fail (a NetperfError)."""
        assert choice.baseline is not None
        judged = [b for b in budgets if b.comparison == "baseline"]
        if all(counted(b.metric) for b in judged):
            return  # nothing judged depends on speed: no calibration needed
        stored = stored_calibration(choice.baseline.fingerprint)
        check = SpeedCheck(stored, self.speed() if stored is not None else None)
        if not check.known:
            choice.notes.append(check.unknown())
            return
        if not check.differs:
            assert check.stored is not None
            assert check.here is not None
            choice.slower = slower_machine(check.stored.ms, check.here.ms, check.figures())
            return
        if self.fingerprint_mismatch == "fail":
            raise NetperfError(fail_text(check))
        if self.fingerprint_mismatch == "warn":
            choice.notes.append(warn_note(check))
            return
        choice.wall_clock = False
        choice.missing_note = new_note(check)
        if any(counted(b.metric) for b in judged):
            choice.notes.append(counted_note(check))

    def _other_class_baseline(self, test_id: str, notes: list[str]) -> tuple[Optional[Baseline], str]:
        """Where this machine class has no baseline of ``test_id`` but others do: the
        ``fingerprint_mismatch`` policy decides (new: none, and why; warn: another class's
        baseline, noted; fail: an error). Returns (baseline or None, the NEW note)."""
        others = self.store.other_classes(test_id)
        if not others:
            return None, MISSING_BASELINE_NOTE
        text = f"no baseline for this machine class ({self.machine_class}) yet; stored for: {', '.join(sorted(others))}"
        if self.fingerprint_mismatch == "fail":
            raise NetperfError(f"{text} (--netperf-fingerprint-mismatch=fail)")
        if self.fingerprint_mismatch == "warn":
            chosen = sorted(others)[0]
            notes.append(f"{text}; judged against the baseline of {chosen} (--netperf-fingerprint-mismatch=warn)")
            return self.store.load_from_class(test_id, chosen), MISSING_BASELINE_NOTE
        return None, (
            f"{text}: recorded as NEW. Record this machine's with `netperf baseline update` after this run "
            f"(or {UPDATE_OPTION}); --netperf-fingerprint-mismatch=warn judges against another class's"
        )

    def fingerprint_notes(
        self, baseline: Baseline, image_digests: Optional[dict[str, str]], images_only: bool = False
    ) -> list[str]:
        """How the machine (or only the images) differ from the baseline's; a NetperfError
        under the ``fail`` policy."""
        diffs = compare_fingerprints(baseline.fingerprint, machine_fingerprint(image_digests))
        if images_only:
            diffs = [d for d in diffs if d.startswith("image ")]
        if not diffs:
            return []
        text = "baseline measured on a different machine: " + "; ".join(diffs)
        if self.fingerprint_mismatch == "fail":
            raise NetperfError(text + " (--netperf-fingerprint-mismatch=fail)")
        return [text]

    def record(
        self,
        test_id: str,
        measurements: Iterable[Measurement],
        image_digests: dict[str, str],
        repo_dir: Path,
        outcomes: Sequence[BudgetOutcome] = (),
    ) -> Recorded:
        """Keep the run's series as pending results, marked nobody's baseline when a budget of
        ``outcomes`` FAILed or was INVALID (:func:`not_a_baseline`; an ACCEPTED budget does not
        count), and with the regressions accepted (:func:`accepted_regression`); :meth:`write` writes it."""
        series = {series_name(m.key, s.label): SeriesRecord.from_measured(s) for m in measurements for s in m.series()}
        fingerprint = {**machine_fingerprint(image_digests), CLASS_KEY: self.machine_class}
        calibration = self.speed()  # pending results are promoted as they are: they carry it too
        if calibration is not None:
            fingerprint[CALIBRATION_KEY] = calibration.to_dict()
        recorded = Recorded(Baseline.new(test_id, series, fingerprint, repo_dir=repo_dir))
        recorded.record.not_a_baseline = not_a_baseline(outcomes)
        recorded.record.accepted_regression = accepted_regression(outcomes)
        try:
            self.store.save_pending(recorded.record)
        except BaselineError as exc:
            recorded.pending_problem = f"pending results not saved (`netperf baseline update` cannot use them): {exc}"
        return recorded

    def write(self, recorded: Recorded, first: bool = False) -> Optional[Path]:
        """Write the recorded baseline when this run updates baselines, or when ``first`` (this
        machine's first run of a test, see :meth:`records_first`); where it went, else None."""
        if not (self.update or first):
            return None
        why = UPDATE_OPTION if self.update else RECORD_MISSING_OPTION
        broken = recorded.record.not_a_baseline
        if broken and not (self.update and self.accept_failed):
            raise BaselineError(
                f"{why}: the baseline was not written: this run is nobody's baseline ({broken}); "
                f"pass {ACCEPT_FAILED_OPTION} with {UPDATE_OPTION} to write it anyway"
            )
        try:
            recorded.written = self.store.save(recorded.record)
        except BaselineError as exc:
            raise BaselineError(f"{why}: the baseline was not written: {exc}") from None
        return recorded.written

    def records_first(self, test_id: str, outcomes: Sequence[BudgetOutcome]) -> bool:
        """Whether ``--netperf-record-missing-baselines`` writes ``test_id``'s baseline now: this
        machine class has none for it (a corrupt file is not overwritten), and no budget of the
        run failed or was invalid (a broken run is never anybody's baseline)."""
        if not_a_baseline(outcomes) is not None:
            return False
        try:
            return self.store.load(test_id) is None
        except BaselineError:
            return False


def note_written_baseline(outcomes: Sequence[BudgetOutcome], path: Path) -> None:
    """NEW rows of an update run: the baseline exists now, so do not ask for an update. A
    budget that FAILed against the old baseline, or was ACCEPTED: this run's change is the
    baseline now."""
    for outcome in outcomes:
        if outcome.status is Status.FAIL and outcome.budget.comparison == "baseline":
            outcome.notes.append(
                f"this run wrote the baseline to {path.parent.name}/{path.name}: "
                "the change is accepted as the new baseline"
            )
        if outcome.status is Status.ACCEPTED:
            outcome.notes.append(
                f"this run wrote the baseline to {path.parent.name}/{path.name}: "
                "the accepted regression is the new baseline (the file records why)"
            )
        if outcome.status is Status.NEW:
            kept = [n for n in outcome.notes if UPDATE_OPTION not in n]
            outcome.notes = [
                f"no stored baseline: recorded as NEW; this run wrote it to {path.parent.name}/{path.name}",
                *kept,
            ]


def note_unmeasured_base(outcomes: Sequence[BudgetOutcome], measurements: Iterable[Measurement], base: str) -> None:
    """Under ``--netperf-base`` (``base``: the ref), a budget against the baseline whose
    measurement has no twin at the base revision and no word why (a URL target: nothing to
    stand up at the base revision) was judged against the stored baseline: say so."""
    if not base:
        return
    unmeasured = {
        m.key: m.candidate.url for m in measurements if m.base is None and not m.base_note and not m.base_error
    }
    for outcome in outcomes:
        if outcome.budget.comparison != "baseline" or outcome.measurement not in unmeasured:
            continue
        instead = (
            "there is no stored baseline either"
            if outcome.status is Status.NEW
            else "judged against the stored baseline instead"
        )
        outcome.notes.append(
            f"--netperf-base {base}: {unmeasured[outcome.measurement]} has no base revision to measure (a URL "
            f"target is not stood up from the base revision); {instead}"
        )
