"""The plugin's hooks: configure, collection checks, the gate verdict after each test, reports.

One :class:`NetperfPlugin` per pytest process holds the session state (registered as a
plugin, like pytest-xdist's session object, instead of module globals).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from pytest_netperf.baseline.fingerprint import compare_fingerprints, machine_fingerprint
from pytest_netperf.baseline.model import Baseline, SeriesRecord
from pytest_netperf.baseline.store import BaselineStore
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.drivers import make_driver
from pytest_netperf.errors import BudgetSyntaxError, InvalidMeasurement, MarkerError, NetperfError
from pytest_netperf.measure.gate import BudgetOutcome, DriverFactory, Gate, GateFailure, series_name
from pytest_netperf.plugin import docker_fixtures
from pytest_netperf.plugin.markers import MARKER, MARKER_HELP, MarkerOptions, marker_budgets, marker_options
from pytest_netperf.plugin.options import add_options, image_overrides, settings_from_config
from pytest_netperf.report.rows import invalid_rows, measurement_summary, row_for_outcome
from pytest_netperf.report.session_report import SessionReport
from pytest_netperf.settings import Settings
from pytest_netperf.verdict.calibration import NoiseFloor, estimate_noise, load_noise, noise_path, save_noise
from pytest_netperf.verdict.status import Status

PLUGIN_NAME = "netperf-session"
STASH_GATE = pytest.StashKey[Gate]()
STASH_BUDGETS = pytest.StashKey[list[Budget]]()
STASH_OUTCOMES = pytest.StashKey[list[BudgetOutcome]]()
STASH_INVALID = pytest.StashKey[str]()
STASH_BASELINE = pytest.StashKey[Baseline]()


class NetperfInconclusiveWarning(UserWarning):
    """A budget stayed INCONCLUSIVE and the policy is ``warn``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    plugin = NetperfPlugin(config, settings_from_config(config), image_overrides(config))
    config.pluginmanager.register(plugin, PLUGIN_NAME)
    if not config.pluginmanager.is_registered(docker_fixtures):
        config.pluginmanager.register(docker_fixtures, "netperf-docker-fixtures")


def get_plugin(config: pytest.Config) -> NetperfPlugin:
    """The session's plugin object."""
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    assert isinstance(plugin, NetperfPlugin)
    return plugin


class NetperfPlugin:
    """Per-process state and the hooks that need it."""

    def __init__(self, config: pytest.Config, settings: Settings, images: dict[str, str]) -> None:
        self.config = config
        self.settings = settings
        self.images = images
        self.report = SessionReport(settings.json_path, settings.markdown_path)
        self.store = BaselineStore(Path(settings.baseline_dir))
        self._noise: Optional[NoiseFloor] = None
        self._noise_loaded = False
        self._aa_pairs: list[tuple[list[Any], list[Any]]] = []  # rounds of --netperf-calibrate

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
                marker_options(item)
            except (BudgetSyntaxError, MarkerError, TypeError) as exc:
                raise collector.CollectError(f"{item.nodeid}: invalid netperf budget: {exc}") from None
        return result

    # ----------------------------------------------------------------- the gate
    def new_gate(self, item: pytest.Item) -> Gate:
        """The gate of a test (made by the ``netperf`` fixture)."""
        options = marker_options(item)
        budgets = item.stash.get(STASH_BUDGETS, None)
        if budgets is None:
            budgets = marker_budgets(item)
        notes: list[str] = []
        lookup = None
        if any(b.comparison == "baseline" for b in budgets):
            baseline = self.store.load(item.nodeid)  # a corrupt file raises BaselineError naming it
            if baseline is not None:
                # the machine now (fail fast); the images once measured (see _check_images)
                notes.extend(self._fingerprint_notes(baseline, baseline.fingerprint.get("image_digests")))
                lookup = _baseline_lookup(baseline)
                item.stash[STASH_BASELINE] = baseline
        return Gate(
            item.nodeid,
            budgets,
            options.gate_settings(self.settings),
            driver_factory=self._driver_factory(options, Path(str(item.path)).parent),
            default_driver=options.driver or self.settings.driver,
            baseline_lookup=lookup,
            progress=self._progress,
            notes=notes,
            noise=self.noise_floor(),
        )

    def noise_floor(self) -> Optional[NoiseFloor]:
        """The stored A/A noise floor (None before the first ``--netperf-calibrate`` run)."""
        if not self._noise_loaded:
            self._noise = load_noise(noise_path(self.settings.baseline_dir))
            self._noise_loaded = True
        return self._noise

    def _fingerprint_notes(
        self, baseline: Baseline, image_digests: Optional[dict[str, str]], images_only: bool = False
    ) -> list[str]:
        diffs = compare_fingerprints(baseline.fingerprint, machine_fingerprint(image_digests))
        if images_only:
            diffs = [d for d in diffs if d.startswith("image ")]
        if not diffs:
            return []
        text = "baseline measured on a different machine: " + "; ".join(diffs)
        if self.settings.fingerprint_mismatch == "fail":
            raise NetperfError(text + " (--netperf-fingerprint-mismatch=fail)")
        return [text]

    def _driver_factory(self, options: MarkerOptions, test_dir: Path) -> DriverFactory:
        def factory(name: Optional[str], runner: Any) -> Any:
            return make_driver(
                name or self.settings.driver,
                runner,
                locustfile=options.locustfile_path(test_dir),
                user_class=options.user_class,
                locust_workers=self.settings.locust_workers,
            )

        return factory

    def _progress(self, message: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and self.config.getoption("verbose") > 0:
            reporter.write_line(f"netperf: {message}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        try:
            result = yield
        except InvalidMeasurement as exc:
            item.stash[STASH_INVALID] = exc.reason
            raise InvalidMeasurement(f"INVALID measurement (no verdict): {exc.reason}") from None
        gate = item.stash.get(STASH_GATE, None)
        if gate is None:
            return result
        if not gate.measurements:
            raise NetperfError(
                f"{item.nodeid} has the netperf marker but measured nothing (call netperf.measure or netperf.compare)"
            )
        baseline = item.stash.get(STASH_BASELINE, None)
        if baseline is not None and gate.image_digests():
            gate.notes.extend(self._fingerprint_notes(baseline, gate.image_digests(), images_only=True))
        outcomes = gate.finish()
        item.stash[STASH_OUTCOMES] = outcomes
        self._record(item, gate)
        for outcome in outcomes:
            item.user_properties.append((f"netperf:{outcome.budget.text}", str(outcome.status)))
        policy = gate.settings.inconclusive
        message = Gate.failure_message(outcomes, policy)
        if message:
            raise GateFailure(message)
        undecided = [o for o in outcomes if o.status is Status.INCONCLUSIVE]
        if undecided and policy == "warn":
            texts = ", ".join(f"'{o.budget.text}' [{o.measurement}]" for o in undecided)
            warnings.warn(
                NetperfInconclusiveWarning(f"{item.nodeid}: inconclusive after the maximum rounds: {texts}"),
                stacklevel=1,
            )
        return result

    def _record(self, item: pytest.Item, gate: Gate) -> None:
        """Keep the run's rounds (pending baseline, baseline update, plots, A/A pairs)."""
        series = {
            series_name(m.key, s.label): SeriesRecord.from_measured(s) for m in gate.measurements for s in m.series()
        }
        fingerprint = machine_fingerprint(gate.image_digests())
        record = Baseline.new(item.nodeid, series, fingerprint, repo_dir=self.config.rootpath)
        self.store.save_pending(record)
        if self.settings.update_baseline:
            gate.notes.append(f"baseline written: {self.store.save(record)}")
        if self.settings.report_dir:
            from pytest_netperf.report.plots import write_plots

            write_plots(Path(self.settings.report_dir), item.nodeid, {n: r.rounds for n, r in series.items()})
        if self.settings.calibrate:
            self._aa_pairs.extend((m.candidate.rounds, m.reference.rounds) for m in gate.measurements if m.reference)

    # ----------------------------------------------------------------- reporting
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
        report = yield
        gate = item.stash.get(STASH_GATE, None)
        if call.when == "call" and gate is not None:
            invalid = item.stash.get(STASH_INVALID, None)
            if invalid:
                rows = invalid_rows(gate, invalid)
            else:
                rows = [row_for_outcome(o, gate) for o in item.stash.get(STASH_OUTCOMES, [])]
            report.netperf = {  # type: ignore[attr-defined]  # travels to the xdist controller
                "rows": [r.to_dict() for r in rows],
                "results": {item.nodeid: [measurement_summary(m) for m in gate.measurements]},
            }
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "netperf", None)
        if data:
            self.report.add(data["rows"], data.get("results"))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not (self.settings.calibrate and self._aa_pairs):
            return
        a = [r for pair in self._aa_pairs for r in pair[0]]
        b = [r for pair in self._aa_pairs for r in pair[1]]
        path = noise_path(self.settings.baseline_dir)
        save_noise(estimate_noise(a, b, fingerprint=machine_fingerprint()), path)
        self.report.notes.append(f"noise floor from {len(a)} A/A pairs written to {path}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.report.rows or hasattr(self.config, "workerinput"):
            return  # an xdist worker: the controller reports
        self.report.session_holm()
        terminalreporter.section("netperf")
        terminalreporter.write_line(self.report.terminal_table())
        for line in self.report.notes:
            terminalreporter.write_line(f"netperf: {line}")
        for path in self.report.write_reports():
            terminalreporter.write_line(f"netperf: wrote {path}")


def _baseline_lookup(baseline: Baseline) -> Any:
    def lookup(key: str, label: str, metric: str) -> Optional[list[float]]:
        return baseline.values(series_name(key, label), metric)

    return lookup
