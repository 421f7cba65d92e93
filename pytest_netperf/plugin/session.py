"""The session object: one :class:`NetperfPlugin` per pytest process holds the session state
and the hooks that need it (collection checks, the gate verdict after each test, reports).

It is registered as a plugin, like pytest-xdist's session object, instead of module globals,
and kept in ``config.stash``: fixtures reach it with :func:`session_of`, nothing else.
"""

from __future__ import annotations

import inspect
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Generator, Iterator, Optional, Sequence

import pluggy
import pytest

from pytest_netperf.baseline.fingerprint import machine_fingerprint
from pytest_netperf.baseline.machine import machine_class as class_of
from pytest_netperf.baseline.model import Baseline
from pytest_netperf.baseline.policy import BaselinePolicy, note_unmeasured_base, note_written_baseline
from pytest_netperf.baseline.store import BaselineStore
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.drivers import make_driver
from pytest_netperf.drivers.locust.session import SessionPool
from pytest_netperf.errors import (
    BaselineError,
    BudgetSyntaxError,
    InvalidMeasurement,
    MarkerError,
    NetperfError,
    RevisionError,
)
from pytest_netperf.measure.capacity import CapacityMemory
from pytest_netperf.measure.gate import DriverFactory, Gate
from pytest_netperf.measure.outcomes import BudgetOutcome, accepted
from pytest_netperf.measure.speed_excuse import SlowerMachine, explains_budget_speed, slower_than_budgets
from pytest_netperf.plugin.markers import MARKER, MarkerOptions, marker_budgets, marker_options
from pytest_netperf.plugin.notices import NetperfAcceptedWarning, NetperfInconclusiveWarning, record_warning
from pytest_netperf.plugin.options import option_acceptance, trailer_acceptances
from pytest_netperf.plugin.skips import UnchangedSkip
from pytest_netperf.plugin.tracebacks import cut_plugin_frames, plain_message, raised_within
from pytest_netperf.plugin.user_hooks import run_machine_class, user_facts
from pytest_netperf.report.aa_control import noise_floor_note
from pytest_netperf.report.failure import FailureContext, failure_text, reference_names
from pytest_netperf.report.rows import invalid_rows, measurement_summary, row_for_outcome
from pytest_netperf.report.session_report import HTML_NAME, SessionReport
from pytest_netperf.revision.git import repo_root, resolve
from pytest_netperf.runtime.commands import LocalRunner
from pytest_netperf.settings import Settings, resolve_driver_cpus, strict_default
from pytest_netperf.verdict.acceptance import Acceptance, accepted_note
from pytest_netperf.verdict.calibration import NoiseFloor, estimate_noise, load_noise, noise_path, save_noise
from pytest_netperf.verdict.status import Status

PLUGIN_NAME = "netperf-session"
SESSION_KEY = pytest.StashKey["NetperfPlugin"]()
STASH_GATE = pytest.StashKey[Gate]()
STASH_BUDGETS = pytest.StashKey[list[Budget]]()
STASH_OUTCOMES = pytest.StashKey[list[BudgetOutcome]]()
STASH_INVALID = pytest.StashKey[str]()
STASH_BASELINE = pytest.StashKey[Baseline]()
STASH_NOTES = pytest.StashKey[list[str]]()  # session notes of one test (files not written, …)
STASH_PLOTS = pytest.StashKey[list[str]]()  # the PNG files written for one test

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_PYTEST_DIR = Path(inspect.getfile(pytest.Item)).resolve().parent  # pytest's own code (_pytest/)
_FRAMEWORK_DIRS = (_PYTEST_DIR, Path(inspect.getfile(pluggy)).resolve().parent)
#: Under CI (and below -vv), the least time between two progress lines.
CI_PROGRESS_INTERVAL_S = 30.0


def _why_undecided(outcome: BudgetOutcome) -> str:
    """Why an INCONCLUSIVE outcome stayed undecided, for its warning."""
    verdict = outcome.verdict
    return verdict.undecidable if verdict is not None and verdict.undecidable else "undecided after the maximum rounds"


def session_of(config: pytest.Config) -> NetperfPlugin:
    """The session's plugin object (made by ``pytest_configure``)."""
    return config.stash[SESSION_KEY]


def maybe_session_of(config: pytest.Config) -> Optional[NetperfPlugin]:
    """The session's plugin object, or None where the netperf plugin is not active (the
    Docker fixtures loaded on their own)."""
    return config.stash.get(SESSION_KEY, None)


class NetperfPlugin:
    """Per-process state and the hooks that need it."""

    def __init__(self, config: pytest.Config, settings: Settings, images: dict[str, str]) -> None:
        self.config = config
        self.settings = settings
        self.images = images
        html_path = settings.html_path or (Path(settings.report_dir) / HTML_NAME if settings.report_dir else None)
        self.report = SessionReport(settings.json_path, settings.markdown_path, html_path)
        #: The machine class whose baselines this run reads and writes (``--netperf-machine-class``,
        #: the ``pytest_netperf_machine_class`` hook, the ini key, or derived: :func:`run_machine_class`).
        self.machine_class = run_machine_class(config, settings)
        self.report.machine_class = self.machine_class
        self.report.amend_json = self._amend_json
        self.store = BaselineStore(Path(settings.baseline_dir), self.machine_class)
        self.baselines = BaselinePolicy(
            self.store,
            settings.fingerprint_mismatch,
            settings.update_baseline,
            accept_failed=settings.accept_failed_baseline,
        )
        #: The load driver's cores (a cpuset) or None (not pinned): ``--netperf-driver-cpus``.
        self.driver_cpus = resolve_driver_cpus(settings.driver_cpus)
        self._noise: Optional[NoiseFloor] = None
        self._noise_loaded = False
        self._aa_pairs: list[tuple[list[Any], list[Any]]] = []  # rounds of --netperf-calibrate
        #: The session's Locust master (workers attach once and serve every round); closed at the end.
        self.locust_sessions = SessionPool()
        #: capacities measured for ``rate="N%"``, taken again by a test that loads the same series soon after
        self.capacities = CapacityMemory()
        #: What accepts this run's regressions (:meth:`load_acceptances`): a covered FAIL is ACCEPTED.
        self.acceptances: list[Acceptance] = []

    def load_acceptances(self) -> None:
        """``--netperf-accept`` (or ``NETPERF_ACCEPT``, or the ini key) and the ``Netperf-Accept:``
        trailers of the HEAD commit of the repository under test; a malformed one is a usage
        error before anything starts."""
        option = option_acceptance(self.config)
        self.acceptances = [*([option] if option is not None else []), *trailer_acceptances(self.config.rootpath)]

    def check_base_revision(self) -> None:
        """``--netperf-base REF`` names a commit of the repository: said before anything starts
        (not after the head stack is up), with what to fetch in a shallow clone."""
        if not self.settings.base:
            return
        try:
            resolved = resolve(repo_root(self.config.rootpath), self.settings.base)
        except RevisionError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.report.base = f"{resolved.ref} ({resolved.short})"  # the Markdown report's first line

    # ----------------------------------------------------------------- collection
    @pytest.hookimpl(wrapper=True)
    def pytest_pycollect_makeitem(self, collector: pytest.Collector, name: str, obj: object) -> Iterator[Any]:
        result = yield
        items = result if isinstance(result, list) else [result]
        for item in items:
            if not isinstance(item, pytest.Item) or item.get_closest_marker(MARKER) is None:
                continue
            try:
                item.stash[STASH_BUDGETS] = marker_budgets(item)
            except (BudgetSyntaxError, MarkerError, TypeError) as exc:
                raise collector.CollectError(f"{item.nodeid}: invalid netperf budget: {exc}") from None
            try:
                marker_options(item)
            except MarkerError as exc:
                raise collector.CollectError(f"{item.nodeid}: invalid netperf marker: {exc}") from None
        return result

    # ----------------------------------------------------------------- the gate
    def new_gate(self, item: pytest.Item) -> Gate:
        """The gate of a test (made by the ``netperf`` fixture)."""
        options = marker_options(item)
        budgets = item.stash.get(STASH_BUDGETS, None)
        if budgets is None:
            budgets = marker_budgets(item)
        choice = self.baselines.choose(item.nodeid, budgets)  # a corrupt file raises BaselineError naming it
        if choice.baseline is not None:
            item.stash[STASH_BASELINE] = choice.baseline
        gate = Gate(
            item.nodeid,
            budgets,
            options.gate_settings(self.settings),
            driver_factory=self._driver_factory(options, Path(str(item.path)).parent),
            default_driver=options.driver or self.settings.driver,
            baseline_lookup=choice.lookup,
            progress=self._progress(),
            notes=choice.notes,
            noise=self.noise_floor(),
            missing_baseline_note=choice.missing_note,
            stacks=self.report.html_path is not None,  # the flame graphs of the HTML report
            baseline_slower=choice.slower,
            budget_slower=self.budget_slower(budgets),
            baseline_counted=choice.counted_lookup,
            capacities=self.capacities,
        )
        for warning in gate.noise_warnings():  # say it before minutes are spent on it
            record_warning(self.config, f"{item.nodeid}: {warning}", item)
        return gate

    def budget_slower(self, budgets: Sequence[Budget]) -> Optional[SlowerMachine]:
        """How much slower this machine measured than the one the absolute wall-clock budgets
        were set on (``--netperf-budget-calibration``); None when that is not said, when no
        budget depends on it, or when this machine is not slower."""
        budget_ms = self.settings.budget_calibration_ms
        if not budget_ms or not any(explains_budget_speed(b) for b in budgets):
            return None
        here = self.baselines.speed()  # measured once per process
        return None if here is None else slower_than_budgets(budget_ms, here.ms)

    def noise_floor(self) -> Optional[NoiseFloor]:
        """The stored A/A noise floor (None before the first ``--netperf-calibrate`` run)."""
        if not self._noise_loaded:
            path = noise_path(self.settings.baseline_dir)
            try:
                self._noise = load_noise(path)
            except OSError as exc:  # a directory in its place, no permission, …
                raise BaselineError(f"{path}: cannot read ({exc.strerror or exc})") from None
            self._noise_loaded = True
        return self._noise

    def _driver_factory(self, options: MarkerOptions, test_dir: Path) -> DriverFactory:
        """Makes the test's drivers, pinned to :attr:`driver_cpus` when that is set: the Rust
        driver on the host through a :class:`LocalRunner` with those cores, a driver container
        through its runner's ``pinned`` copy."""

        def factory(name: Optional[str], runner: Any) -> Any:
            name = name or self.settings.driver
            cpus = self.driver_cpus
            if cpus is not None:
                if runner is None and name in ("rust", "iperf3"):
                    runner = LocalRunner(cpus=cpus)  # iperf3 keeps the cores, with its own program
                elif runner is not None and callable(getattr(runner, "pinned", None)):
                    runner = runner.pinned(cpus)
            return make_driver(
                name,
                runner,
                locustfile=options.locustfile_path(test_dir),
                user_class=options.user_class,
                locust_workers=self.settings.locust_workers,
                locust_remote_workers=self.settings.locust_remote_workers,
                locust_master=self.settings.locust_master_address(),
                locust_workers_timeout_s=self.settings.locust_workers_timeout_s,
                locust_sessions=self.locust_sessions,
                cpus=cpus,
            )

        return factory

    def _progress(self) -> Callable[[str], None]:
        """A gate's progress writer: its lines (round i/planned (max N), elapsed) go live to
        the terminal with -v only. Under CI (``CI`` set) and below -vv, a gate writes at most
        one every :data:`CI_PROGRESS_INTERVAL_S` (its first always): the job log shows the
        run is alive and how far it is without a line per round and series."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        verbose = self.config.getoption("verbose")
        if reporter is None or verbose < 1:
            return lambda _message: None
        throttled = verbose < 2 and strict_default()  # CI is true: the same test as strict mode's default
        last: list[float] = []

        def write(message: str) -> None:
            now = time.monotonic()
            if throttled and last and now - last[-1] < CI_PROGRESS_INTERVAL_S:
                return
            last[:] = [now]
            capture = self.config.pluginmanager.get_plugin("capturemanager")
            if capture is None:
                reporter.write_line(f"netperf: {message}")
                return
            with capture.global_and_fixture_disabled():  # live, not in the test's captured output
                reporter.write_line(f"netperf: {message}")

        return write

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        """Judge the test's gate once the test has measured. Every failure raised here is a
        message without a traceback (``pytrace=False``, and outside any ``except``: no chain)."""
        invalid: Optional[str] = None
        try:
            result = yield
        except InvalidMeasurement as exc:
            invalid = exc.reason
        if invalid is not None:
            item.stash[STASH_INVALID] = invalid
            gate = item.stash.get(STASH_GATE, None)
            refused = self._user_facts(item, gate) if gate is not None else None
            more = f"\n{refused}" if refused else ""
            pytest.fail(f"INVALID measurement (no verdict): {invalid}{more}", pytrace=False)
        problem: Optional[str] = None
        try:
            self._judge(item)
        except NetperfError as exc:  # a usage error or a baseline not written: its message says it all
            problem = str(exc)
        if problem is not None:
            pytest.fail(problem, pytrace=False)
        return result

    def _judge(self, item: pytest.Item) -> None:
        """The gate's verdicts: stash them, keep the rounds, fail the test on a failing budget
        (:func:`pytest.fail`); NetperfError for a test that measured nothing or a baseline
        that could not be written."""
        gate = item.stash.get(STASH_GATE, None)
        if gate is None:
            if item.get_closest_marker(MARKER) is not None:
                raise NetperfError(
                    f"{item.nodeid} has the netperf marker but does not request the netperf fixture, so nothing "
                    "was measured or judged: add a `netperf` argument to the test and measure with "
                    "netperf.measure(...) or netperf.compare(...)"
                )
            return
        if not gate.measurements:
            raise NetperfError(
                f"{item.nodeid} has the netperf marker but measured nothing (call netperf.measure or netperf.compare)"
            )
        baseline = item.stash.get(STASH_BASELINE, None)
        if baseline is not None and gate.image_digests():
            gate.notes.extend(self.baselines.fingerprint_notes(baseline, gate.image_digests(), images_only=True))
        outcomes = accepted(gate.finish(), self.acceptances)  # a FAIL the user accepted is ACCEPTED
        note_unmeasured_base(outcomes, gate.measurements, self.settings.base)
        item.stash[STASH_OUTCOMES] = outcomes
        for outcome in outcomes:  # never silently green: one warning per accepted budget
            if outcome.accepted_by is not None:
                where = "" if outcome.measurement == "default" else f" [{outcome.measurement}]"
                record_warning(
                    self.config,
                    f"{item.nodeid}: ACCEPTED '{outcome.budget.text}'{where}: {accepted_note(outcome.accepted_by)}",
                    item,
                    category=NetperfAcceptedWarning,
                )
        refused = self._user_facts(item, gate)  # before the rows are made (pytest_runtest_makereport)
        not_written: Optional[BaselineError] = None
        try:
            written = self._record(item, gate, outcomes)
        except BaselineError as exc:  # --netperf-update-baseline could not write: reported with the verdicts
            written, not_written = None, exc
        if written is not None:
            note_written_baseline(outcomes, written)
        for outcome in outcomes:
            item.user_properties.append((f"netperf:{outcome.budget.text}", str(outcome.status)))
        policy = gate.settings.inconclusive
        message = failure_text(outcomes, policy, self._failure_context(gate, baseline, written))
        problems = "".join(f"\n{p}" for p in (not_written, refused) if p)
        if message:
            pytest.fail(message + problems, pytrace=False)
        if refused:  # with the baseline not written, when it was not
            raise NetperfError(problems.lstrip("\n"))
        if not_written is not None:
            raise not_written
        undecided = [o for o in outcomes if o.status is Status.INCONCLUSIVE]
        if undecided and policy != "pass":  # the undecided budgets that did not fail the test
            texts = "; ".join(f"'{o.budget.text}' [{o.measurement}]: {_why_undecided(o)}" for o in undecided)
            warnings.warn(NetperfInconclusiveWarning(f"{item.nodeid}: inconclusive: {texts}"), stacklevel=1)

    def _user_facts(self, item: pytest.Item, gate: Gate) -> Optional[str]:
        """The ``pytest_netperf_row_facts`` hook's facts on the gate's series (see :func:`user_facts`)."""
        return user_facts(self.config, item, gate, lambda message: record_warning(self.config, message, item))

    def _amend_json(self, document: dict[str, Any]) -> None:
        """Let the ``pytest_netperf_json_report`` hook add to the JSON report before it is written."""
        try:
            self.config.hook.pytest_netperf_json_report(config=self.config, document=document)
        except Exception as exc:  # the report is not written; the warning names the hook
            raise NetperfError(f"the pytest_netperf_json_report hook raised {type(exc).__name__}: {exc}") from exc

    def _failure_context(self, gate: Gate, baseline: Optional[Baseline], written: Optional[Path]) -> FailureContext:
        """What a failing gate's text names besides the verdicts: the references, the round
        cap, the report paths, whether this run wrote the baseline."""
        stored_class = class_of(baseline.fingerprint) if baseline is not None else self.machine_class
        settings = self.settings
        reports = [f"{settings.report_dir} (plots)"] if settings.report_dir else []
        reports += [str(p) for p in (settings.json_path, settings.markdown_path) if p]
        return FailureContext(
            references=reference_names(gate.measurements, stored_class, settings.base),
            rounds_max=gate.settings.rounds_max,
            reports=reports,
            baseline_written=written is not None,
            measurements=gate.measurements,
        )

    def _record(self, item: pytest.Item, gate: Gate, outcomes: Sequence[BudgetOutcome]) -> Optional[Path]:
        """Keep the run's rounds (pending results, plots, A/A pairs) and, with
        ``--netperf-update-baseline`` (or ``--netperf-record-missing-baselines`` on this
        machine's first run of the test), write the baseline; returns where it was written.

        Only that requested baseline may fail the test when it cannot be written; the
        pending results and the plots are a warning and a note.
        """
        recorded = self.baselines.record(
            item.nodeid, gate.measurements, gate.image_digests(), self.config.rootpath, outcomes
        )
        if recorded.pending_problem:
            self._write_problem(item, recorded.pending_problem)
        if self.settings.report_dir:
            from pytest_netperf.report.plots import STORED_SERIES, write_plots

            drawn = {n: r.rounds for n, r in recorded.record.series.items()}
            stored = item.stash.get(STASH_BASELINE, None)
            if stored is not None:  # what the baseline budgets were judged against, beside this run
                drawn.update({f"{n} ({STORED_SERIES})": r.rounds for n, r in stored.series.items() if r.rounds})
            try:
                paths = write_plots(Path(self.settings.report_dir), item.nodeid, drawn, budgets=gate.budgets)
                item.stash[STASH_PLOTS] = [str(p) for p in paths]
            except Exception as exc:  # plots are never worth a verdict
                self._write_problem(item, f"plots not written to {self.settings.report_dir}: {_reason(exc)}")
        if self.settings.calibrate:
            self._aa_pairs.extend((m.candidate.rounds, m.reference.rounds) for m in gate.measurements if m.reference)
        first = self.settings.record_missing and self.baselines.records_first(item.nodeid, outcomes)
        path = self.baselines.write(recorded, first)  # BaselineError when the requested baseline cannot be written
        if path is None:
            return None
        item.stash.setdefault(STASH_NOTES, []).append(f"baseline written: {path}")
        return path

    def _write_problem(self, item: pytest.Item, message: str) -> None:
        """A file of this test could not be written: a pytest warning and a netperf note."""
        record_warning(self.config, message, item)
        item.stash.setdefault(STASH_NOTES, []).append(f"{item.nodeid}: {message}")

    # ----------------------------------------------------------------- reporting
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        own_error = self._cut_plugin_frames(call)
        report = yield
        if own_error is not None and report.failed:  # raised by the plugin's own fixtures or hooks
            report.longrepr = own_error
        if self.settings.strict and report.skipped and item.get_closest_marker(MARKER) is not None:
            reason = _netperf_skip_reason(call)
            if reason is not None:
                report.outcome = "failed"
                report.longrepr = (
                    f"netperf strict mode: {item.nodeid} would be skipped: {reason}\n"
                    "A merge gate must not pass by not running; fix the cause, or allow the skip with "
                    "--no-netperf-strict (strict is on by default when CI is set)."
                )
        gate = item.stash.get(STASH_GATE, None)
        if call.when == "call" and gate is not None:
            invalid = item.stash.get(STASH_INVALID, None)
            if invalid:
                rows = invalid_rows(gate, invalid)
            else:
                rows = [row_for_outcome(o, gate) for o in item.stash.get(STASH_OUTCOMES, [])]
            notes: list[str] = item.stash.get(STASH_NOTES, [])
            report.netperf = {  # type: ignore[attr-defined]  # travels to the xdist controller
                "rows": [r.to_dict() for r in rows],
                "plots": {item.nodeid: item.stash.get(STASH_PLOTS, [])},
                "results": {item.nodeid: [measurement_summary(m) for m in gate.measurements]},
                "notes": list(notes),
            }
        return report

    def _cut_plugin_frames(self, call: pytest.CallInfo[None]) -> Optional[str]:
        """A NetperfError's traceback without the plugin's frames (its message names the
        problem and the fix): pytest shows the test's own line and the message. Returns the
        message alone when no frame of the user's is left (nothing to show but plugin code),
        else None. ``--fulltrace`` keeps every frame."""
        excinfo = call.excinfo
        if excinfo is None or not isinstance(excinfo.value, NetperfError) or self.config.getoption("fulltrace"):
            return None
        if cut_plugin_frames(excinfo.tb, _PACKAGE_DIR, _FRAMEWORK_DIRS):
            return None
        return plain_message(excinfo.value)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "netperf", None)
        if data:
            self.report.add(data["rows"], data.get("results"), data.get("plots"))
            self.report.notes.extend(data.get("notes") or [])

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.locust_sessions.close()  # releases the workers; stops the master and local workers
        if not (self.settings.calibrate and self._aa_pairs):
            return
        a = [r for pair in self._aa_pairs for r in pair[0]]
        b = [r for pair in self._aa_pairs for r in pair[1]]
        path = noise_path(self.settings.baseline_dir)
        try:
            save_noise(estimate_noise(a, b, fingerprint=machine_fingerprint()), path)
        except OSError as exc:
            # asked for with --netperf-calibrate: the run did not do its job
            message = f"noise floor not written to {path}: {_reason(exc)}"
            record_warning(self.config, message)
            self.report.notes.append(message)
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        self.report.notes.append(f"noise floor from {len(a)} A/A pairs written to {path}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return  # an xdist worker: the controller reports
        if not self.report.rows and not self.report.notes:
            return
        self.report.session_holm()
        floor = noise_floor_note(self.report.rows)
        if floor and floor not in self.report.notes:
            self.report.notes.append(floor)
        # the files first: CI's comment and artifact never depend on the terminal's formatting
        problems: list[str] = []
        written = self.report.write_reports(warn=problems.append) if self.report.rows else []
        terminalreporter.section("netperf")
        if self.report.rows:
            verbose = self.config.getoption("verbose") > 0
            terminalreporter.write_line(self.report.terminal_table(verbose=verbose))
        for line in self.report.notes:
            terminalreporter.write_line(f"netperf: {line}")
        for line in self._acceptance_lines():
            terminalreporter.write_line(f"netperf: {line}")
        for path in written:
            terminalreporter.write_line(f"netperf: wrote {path}")
        for problem in problems:  # a report that cannot be written is a warning, never a verdict
            terminalreporter.write_line(f"netperf: {problem}")
            record_warning(self.config, problem)

    def _acceptance_lines(self) -> list[str]:
        """One line per acceptance of the run: the budgets it made ACCEPTED, or that it
        accepted nothing (no FAIL it covers; a scope that names no test reads the same)."""
        lines = []
        for acceptance in self.acceptances:
            note = accepted_note(acceptance)
            made = sum(1 for row in self.report.rows if note in row.notes)
            if made:
                noun = "budget" if made == 1 else "budgets"
                lines.append(f"{made} {noun} ACCEPTED by {acceptance.describe()}")
            else:
                lines.append(f"{acceptance.describe()}: accepted nothing (no FAIL it covers)")
        return lines


def _netperf_skip_reason(call: pytest.CallInfo[None]) -> Optional[str]:
    """The reason of a skip raised by pytest-netperf's own code (Docker unreachable, an
    image missing), or None for any other skip (the test's own, a skip marker)."""
    excinfo = call.excinfo
    if excinfo is None or not isinstance(excinfo.value, pytest.skip.Exception):
        return None
    if isinstance(excinfo.value, UnchangedSkip):
        return None  # asked for by --netperf-base-skip-unchanged
    if not raised_within(excinfo.tb, _PACKAGE_DIR, _PYTEST_DIR):
        return None
    return str(excinfo.value.msg or "skipped")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return f"{type(exc).__name__}: {exc}"
