"""pytest glue: options, the ``netperf`` marker and fixture, reports. The logic lives in the core."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from .budget import Budget
from .errors import BudgetSyntaxError, InvalidMeasurement, NetperfError
from .gate import Gate, GateFailure, GateSettings
from .session import NetperfSession, budgets_from_marker, measurement_summary, outcome_row, series_name
from .settings import INCONCLUSIVE_POLICIES, Settings

MARKER = "netperf"
MARKER_KWARGS = {"driver", "rounds", "max_rounds", "duration", "warmup", "inconclusive", "locustfile", "user_class"}
MARKER_HELP = (
    "netperf(*budgets, driver=None, rounds=None, max_rounds=None, duration=None, warmup=None, "
    "inconclusive=None, locustfile=None, user_class=None): "
    "a network performance gate; budgets like 'rps_loss <= 10%', 'p90 < 1ms', 'p99 <= 1.2x baseline'"
)
STASH_GATE = pytest.StashKey[Gate]()
STASH_BUDGETS = pytest.StashKey[list]()
STASH_OUTCOMES = pytest.StashKey[list]()
STASH_INVALID = pytest.StashKey[str]()

# (option suffix, Settings field, ini name or None, argparse kwargs)
_OPTIONS: list[tuple[str, Optional[str], Optional[str], dict[str, Any]]] = [
    ("baseline-dir", "baseline_dir", "netperf_baseline_dir", {"help": "where baselines live (default .netperf, relative to the rootdir)"}),
    ("update-baseline", "update_baseline", None, {"action": "store_true", "default": None, "help": "write this run's results as the new baselines"}),
    ("runtime", "runtime", "netperf_runtime", {"help": "runtime for topologies: docker (default)"}),
    ("driver", "driver", "netperf_driver", {"help": "load driver: rust (default) or locust"}),
    ("rounds", "rounds_min", "netperf_rounds", {"help": "rounds per target before the first verdict (default 5)"}),
    ("max-rounds", "rounds_max", "netperf_max_rounds", {"help": "rounds at most while a budget is inconclusive (default 15)"}),
    ("duration", "round_duration_s", "netperf_round_duration", {"help": "seconds per round (default 5)"}),
    ("warmup", "warmup_s", "netperf_warmup", {"help": "warmup seconds per round, excluded from results (default 1)"}),
    ("confidence", "confidence", "netperf_confidence", {"help": "confidence level of the intervals (default 0.95)"}),
    ("inconclusive", "inconclusive", "netperf_inconclusive", {"help": "what a final INCONCLUSIVE does: fail (default), warn or pass"}),
    ("fingerprint-mismatch", "fingerprint_mismatch", "netperf_fingerprint_mismatch", {"help": "baseline measured on another machine: warn (default) or fail"}),
    ("json", "json_path", "netperf_json", {"help": "write machine-readable results to PATH"}),
    ("markdown", "markdown_path", "netperf_markdown", {"help": "write a pull-request comment (markdown) to PATH"}),
    ("report-dir", "report_dir", "netperf_report_dir", {"help": "write PNG plots under DIR"}),
    ("calibrate", "calibrate", None, {"action": "store_true", "default": None, "help": "A/A run: measure each reference against itself and store the noise floor"}),
    ("max-lag", "max_lag_ms", "netperf_max_lag", {"help": "open loop: schedule-lag p99 (ms) of the driver above which a round is invalid (default 5)"}),
    ("realtime", "realtime", "netperf_realtime", {"action": "store_true", "default": None, "help": "open loop: run the Rust driver SCHED_FIFO (needs root) so a busy machine cannot delay its sends"}),
    ("locust-workers", "locust_workers", "netperf_locust_workers", {"help": "Locust worker processes on this machine (0: one process)"}),
    ("image", None, "netperf_images", {"action": "append", "help": "container image for a role, ROLE=IMAGE (repeatable; ini: one per line)"}),
]
_PATH_SETTINGS = ("baseline_dir", "json_path", "markdown_path", "report_dir")


def _dest(suffix: str) -> str:
    return "netperf_" + suffix.replace("-", "_")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netperf", "network performance gates (pytest-netperf)")
    for suffix, _field, ini, kwargs in _OPTIONS:
        group.addoption(f"--netperf-{suffix}", dest=_dest(suffix), **kwargs)
        if ini:
            parser.addini(ini, kwargs["help"], type="linelist" if suffix == "image" else "string")


def _settings_from_config(config: pytest.Config) -> Settings:
    raw: dict[str, Any] = {}
    for suffix, field, ini, _ in _OPTIONS:
        if field is None:
            continue
        value = config.getoption(_dest(suffix))
        from_ini = False
        if value is None and ini:
            value = config.getini(ini) or None
            from_ini = value is not None
        if value is None:
            continue
        if field in _PATH_SETTINGS and from_ini and config.inipath is not None:
            value = config.inipath.parent / str(value)  # ini paths are relative to the ini file
        raw[field] = value
    raw.setdefault("baseline_dir", config.rootpath / ".netperf")
    try:
        return Settings.from_mapping(raw)
    except ValueError as exc:
        raise pytest.UsageError(f"pytest-netperf: {exc}") from exc


def image_overrides(config: pytest.Config) -> dict[str, str]:
    """ROLE=IMAGE pairs from ``--netperf-image`` and the ``netperf_images`` ini key."""
    pairs = list(config.getini("netperf_images") or []) + list(config.getoption("netperf_image") or [])
    out: dict[str, str] = {}
    for pair in pairs:
        role, sep, image = pair.partition("=")
        if not sep or not role.strip() or not image.strip():
            raise pytest.UsageError(f"pytest-netperf: --netperf-image expects ROLE=IMAGE, got {pair!r}")
        out[role.strip()] = image.strip()
    return out


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    settings = _settings_from_config(config)
    plugin = NetperfPlugin(config, settings)
    plugin.images = image_overrides(config)
    config.pluginmanager.register(plugin, "netperf-session")
    from . import docker_fixtures

    if not config.pluginmanager.is_registered(docker_fixtures):
        config.pluginmanager.register(docker_fixtures, "netperf-docker-fixtures")


def _marker_budgets(item: pytest.Item) -> list[Budget]:
    budgets: list[Budget] = []
    for mark in item.iter_markers(MARKER):
        budgets.extend(budgets_from_marker(mark.args))
    return budgets


def _marker_kwargs(item: pytest.Item) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for mark in reversed(list(item.iter_markers(MARKER))):  # closest marker wins
        kwargs.update(mark.kwargs)
    unknown = set(kwargs) - MARKER_KWARGS
    if unknown:
        raise BudgetSyntaxError(
            f"unknown netperf marker argument(s): {', '.join(sorted(unknown))}; expected {', '.join(sorted(MARKER_KWARGS))}"
        )
    policy = kwargs.get("inconclusive")
    if policy is not None and policy not in INCONCLUSIVE_POLICIES:
        raise BudgetSyntaxError(f"inconclusive={policy!r}: expected one of {', '.join(INCONCLUSIVE_POLICIES)}")
    return kwargs


class NetperfPlugin:
    """The per-process plugin object: holds the core session and implements the hooks."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.session = NetperfSession(settings)
        self.images: dict[str, str] = {}
        self._store = None
        self._noise: Any = None
        self._noise_loaded = False
        self._aa_pairs: list[tuple[list, list]] = []  # A/A rounds collected by --netperf-calibrate

    # ----------------------------------------------------------------- collection
    @pytest.hookimpl(wrapper=True)
    def pytest_pycollect_makeitem(self, collector: pytest.Collector, name: str, obj: object) -> Iterator[Any]:
        result = yield
        items = result if isinstance(result, list) else [result]
        for item in items:
            if not isinstance(item, pytest.Item) or item.get_closest_marker(MARKER) is None:
                continue
            try:
                item.stash[STASH_BUDGETS] = _marker_budgets(item)
                _marker_kwargs(item)
            except (BudgetSyntaxError, TypeError) as exc:
                raise collector.CollectError(f"{item.nodeid}: invalid netperf budget: {exc}") from None
        return result

    # ----------------------------------------------------------------- running
    @property
    def store(self):  # noqa: ANN201 - BaselineStore
        if self._store is None:
            from .baseline import BaselineStore

            self._store = BaselineStore(Path(self.settings.baseline_dir))
        return self._store

    def new_gate(self, item: pytest.Item) -> Gate:
        """Create the gate for a test (called by the ``netperf`` fixture)."""
        kwargs = _marker_kwargs(item)
        budgets = item.stash.get(STASH_BUDGETS, None)
        if budgets is None:
            budgets = _marker_budgets(item)
        s = self.settings
        gs = GateSettings(
            rounds_min=int(kwargs.get("rounds") or s.rounds_min),
            rounds_max=max(int(kwargs.get("max_rounds") or s.rounds_max), int(kwargs.get("rounds") or s.rounds_min)),
            duration_s=float(kwargs.get("duration") or s.round_duration_s),
            warmup_s=float(kwargs.get("warmup") if kwargs.get("warmup") is not None else s.warmup_s),
            confidence=s.confidence,
            inconclusive=kwargs.get("inconclusive") or s.inconclusive,
            calibrate=s.calibrate,
            max_lag_ms=s.max_lag_ms,
            realtime=s.realtime,
        )
        baseline = None
        notes: list[str] = []
        if any(b.comparison == "baseline" for b in budgets):
            baseline = self.store.load(item.nodeid)  # a corrupt file raises BaselineError naming it
            if baseline is not None:
                notes.extend(self._fingerprint_notes(baseline))
        lookup = None
        if baseline is not None:
            lookup = lambda key, label, metric: baseline.values(series_name(key, label), metric)  # noqa: E731
        gate = Gate(
            item.nodeid,
            budgets,
            gs,
            driver_factory=self._driver_factory(kwargs, Path(str(item.path)).parent),
            default_driver=kwargs.get("driver") or s.driver,
            baseline_lookup=lookup,
            progress=self._progress,
            notes=notes,
            noise=self.noise_floor(),
        )
        return gate

    def noise_floor(self) -> Any:
        """The stored A/A noise floor (None before the first ``--netperf-calibrate`` run)."""
        if not self._noise_loaded:
            from .calibration import load_noise, noise_path

            self._noise = load_noise(noise_path(self.settings.baseline_dir))
            self._noise_loaded = True
        return self._noise

    def _fingerprint_notes(self, baseline: Any) -> list[str]:
        from .fingerprint import compare_fingerprints, machine_fingerprint

        diffs = compare_fingerprints(baseline.fingerprint, machine_fingerprint())
        if not diffs:
            return []
        text = "baseline measured on a different machine: " + "; ".join(diffs)
        if self.settings.fingerprint_mismatch == "fail":
            raise NetperfError(text + " (--netperf-fingerprint-mismatch=fail)")
        return [text]

    def _driver_factory(self, kwargs: dict[str, Any], test_dir: Path):  # noqa: ANN202
        settings = self.settings
        locustfile = kwargs.get("locustfile")
        if locustfile is not None and not Path(locustfile).is_absolute():
            locustfile = test_dir / locustfile  # relative to the test file, like fixtures' data

        def factory(name: Optional[str], runner: Any):  # noqa: ANN202
            name = name or settings.driver
            if name == "rust":
                from .drivers.rust import RustDriver

                return RustDriver(runner=runner)
            if name == "locust":
                if runner is not None:
                    raise NetperfError("the Locust driver runs on the host only; this target needs the in-network (rust) driver")
                from .drivers.locust_driver import LocustDriver

                return LocustDriver(
                    locustfile=locustfile,
                    user_class=kwargs.get("user_class"),
                    workers=int(settings.locust_workers),
                )
            raise NetperfError(f"unknown netperf driver {name!r}; expected 'rust' or 'locust'")

        return factory

    def _progress(self, message: str) -> None:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and self.config.getoption("verbose") > 0:
            tr.write_line(f"netperf: {message}")

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
            raise NetperfError(f"{item.nodeid} has the netperf marker but measured nothing (call netperf.measure or netperf.compare)")
        outcomes = gate.finish()
        item.stash[STASH_OUTCOMES] = outcomes
        self._after_gate(item, gate, outcomes)
        policy = gate.settings.inconclusive
        message = Gate.failure_message(outcomes, policy)
        if message:
            raise GateFailure(message)
        undecided = [o for o in outcomes if o.status == "INCONCLUSIVE"]
        if undecided and policy == "warn":
            texts = ", ".join(f"'{o.budget.text}' [{o.measurement}]" for o in undecided)
            warnings.warn(
                NetperfInconclusiveWarning(f"{item.nodeid}: inconclusive after the maximum rounds: {texts}"),
                stacklevel=1,
            )
        return result

    def _after_gate(self, item: pytest.Item, gate: Gate, outcomes: list) -> None:
        from .baseline_model import Baseline, SeriesRecord
        from .fingerprint import machine_fingerprint

        series = {series_name(m.key, sr.label): SeriesRecord.from_measured(sr) for m in gate.measurements for sr in m.series()}
        record = Baseline.new(item.nodeid, series, machine_fingerprint(), repo_dir=self.config.rootpath)
        self.store.save_pending(record)
        if self.settings.update_baseline:
            path = self.store.save(record)
            gate.notes.append(f"baseline written: {path}")
        if self.settings.report_dir:
            from .plots import write_plots

            write_plots(Path(self.settings.report_dir), item.nodeid, {n: r.rounds for n, r in series.items()})
        for o in outcomes:
            item.user_properties.append((f"netperf:{o.budget.text}", str(o.status)))
        if self.settings.calibrate:
            self._aa_pairs.extend((m.candidate.rounds, m.reference.rounds) for m in gate.measurements if m.reference)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not (self.settings.calibrate and self._aa_pairs):
            return
        from .calibration import estimate_noise, noise_path, save_noise
        from .fingerprint import machine_fingerprint

        a = [r for pair in self._aa_pairs for r in pair[0]]
        b = [r for pair in self._aa_pairs for r in pair[1]]
        noise = estimate_noise(a, b, fingerprint=machine_fingerprint())
        path = noise_path(self.settings.baseline_dir)
        save_noise(noise, path)
        self.session.warnings.append(f"noise floor from {len(a)} A/A pairs written to {path}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Iterator[Any]:
        report = yield
        if call.when == "call":
            gate = item.stash.get(STASH_GATE, None)
            if gate is not None:
                outcomes = item.stash.get(STASH_OUTCOMES, [])
                rows = [outcome_row(o, gate) for o in outcomes]
                invalid = item.stash.get(STASH_INVALID, None)
                if invalid:
                    last = gate.measurements[-1].candidate if gate.measurements else None
                    driver, where = (last.driver, last.where) if last else ("", "")
                    texts = [b.text for b in gate.budgets] or ["-"]
                    rows = [_invalid_row(item.nodeid, t, invalid, driver, where) for t in texts]
                report.netperf = {  # travels to the xdist controller with the report
                    "rows": rows,
                    "results": {item.nodeid: [measurement_summary(m) for m in gate.measurements]},
                }
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "netperf", None)
        if data:
            self.session.add(data["rows"], data.get("results"))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.session.rows or os.environ.get("PYTEST_XDIST_WORKER"):
            return
        self.session.session_holm()
        terminalreporter.section("netperf")
        terminalreporter.write_line(self.session.terminal_table())
        for line in self.session.warnings:
            terminalreporter.write_line(f"netperf: {line}")
        for path in self.session.write_reports():
            terminalreporter.write_line(f"netperf: wrote {path}")


class NetperfInconclusiveWarning(UserWarning):
    """A budget stayed INCONCLUSIVE and the policy is ``warn``."""


def _invalid_row(test_id: str, budget: str, reason: str, driver: str, where: str) -> dict[str, Any]:
    return {
        "test_id": test_id, "budget": budget, "reference": "", "measured": "", "interval": "",
        "verdict": "INVALID", "rounds": 0, "notes": [reason], "driver": driver, "where": where, "raw": {},
    }



@pytest.fixture
def netperf(request: pytest.FixtureRequest) -> Gate:
    """Measure targets for this test's ``@pytest.mark.netperf`` budgets.

    ``netperf.measure(url, connections=.., rate=.., duration=..)`` or
    ``netperf.compare(candidate, reference, ...)``; budgets are judged when the test ends.
    """
    plugin: NetperfPlugin = request.config.pluginmanager.get_plugin("netperf-session")
    item = request.node
    if item.get_closest_marker(MARKER) is None:
        raise NetperfError(f"{item.nodeid} uses the netperf fixture without @pytest.mark.netperf(...)")
    gate = plugin.new_gate(item)
    item.stash[STASH_GATE] = gate
    return gate
