"""pytest glue: options, the ``netperf`` marker and fixture, reports. The logic lives in the core."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from .budget import Budget
from .errors import BudgetSyntaxError, InvalidMeasurement, NetperfError
from .gate import Gate, GateFailure, GateSettings
from .session import NetperfSession, budgets_from_marker, measurement_summary, outcome_row
from .settings import Settings

MARKER = "netperf"
MARKER_HELP = (
    "netperf(*budgets, driver=None, rounds=None, duration=None, locustfile=None, user_class=None): "
    "a network performance gate; budgets like 'rps_loss <= 10%', 'p90 < 1ms', 'p99 <= 1.2x baseline'"
)
STASH_GATE = pytest.StashKey[Gate]()
STASH_BUDGETS = pytest.StashKey[list]()

# (option suffix, ini name or None, kwargs)
_OPTIONS: list[tuple[str, Optional[str], dict[str, Any]]] = [
    ("baseline-dir", "netperf_baseline_dir", {"help": "where baselines live (default .netperf)"}),
    ("update-baseline", None, {"action": "store_true", "default": None, "help": "write this run's results as the new baselines"}),
    ("runtime", "netperf_runtime", {"help": "runtime for topologies: docker (default) or local"}),
    ("driver", "netperf_driver", {"help": "load driver: rust (default) or locust"}),
    ("rounds", "netperf_rounds", {"help": "rounds per target before a verdict (default 5)"}),
    ("max-rounds", "netperf_max_rounds", {"help": "rounds at most while a budget is inconclusive (default 15)"}),
    ("duration", "netperf_round_duration", {"help": "seconds per round (default 5)"}),
    ("warmup", "netperf_warmup", {"help": "warmup seconds per round, excluded (default 1)"}),
    ("confidence", "netperf_confidence", {"help": "confidence level of intervals (default 0.95)"}),
    ("inconclusive", "netperf_inconclusive", {"help": "final INCONCLUSIVE: fail (default), warn or pass"}),
    ("fingerprint-mismatch", "netperf_fingerprint_mismatch", {"help": "baseline from another machine: warn (default) or fail"}),
    ("json", "netperf_json", {"help": "write machine-readable results to PATH"}),
    ("markdown", "netperf_markdown", {"help": "write a pull-request comment (markdown) to PATH"}),
    ("report-dir", "netperf_report_dir", {"help": "directory for plots (default .netperf-report)"}),
    ("calibrate", None, {"action": "store_true", "default": None, "help": "A/A run: measure each reference against itself and store the noise floor"}),
    ("locust-workers", "netperf_locust_workers", {"help": "Locust worker processes on this machine (0: single process)"}),
    ("image", "netperf_images", {"action": "append", "help": "image for a role, ROLE=IMAGE (repeatable)"}),
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netperf", "network performance gates (pytest-netperf)")
    for suffix, ini, kwargs in _OPTIONS:
        dest = "netperf_" + suffix.replace("-", "_")
        group.addoption(f"--netperf-{suffix}", dest=dest, **kwargs)
        if ini:
            parser.addini(ini, kwargs["help"], type="linelist" if suffix == "image" else "string")


def _settings_from_config(config: pytest.Config) -> Settings:
    raw: dict[str, Any] = {}
    for suffix, ini, _ in _OPTIONS:
        dest = "netperf_" + suffix.replace("-", "_")
        value = config.getoption(dest)
        if value is None and ini:
            value = config.getini(ini) or None
        if value is not None:
            raw[suffix.replace("-", "_")] = value
    try:
        return Settings.from_mapping(raw)
    except ValueError as exc:
        raise pytest.UsageError(f"pytest-netperf: {exc}") from exc


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    settings = _settings_from_config(config)
    config.pluginmanager.register(NetperfPlugin(config, settings), "netperf-session")
    from . import docker_fixtures

    if not config.pluginmanager.has_plugin("netperf-docker-fixtures"):
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
    unknown = set(kwargs) - {"driver", "rounds", "duration", "warmup", "locustfile", "user_class", "max_rounds"}
    if unknown:
        raise BudgetSyntaxError(f"unknown netperf marker argument(s): {', '.join(sorted(unknown))}")
    return kwargs


class NetperfPlugin:
    """The per-process plugin object: holds the core session and implements the hooks."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.session = NetperfSession(settings)
        self._store = None

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
            inconclusive=s.inconclusive,
            calibrate=s.calibrate,
        )
        baseline = None
        notes: list[str] = []
        if any(b.comparison == "baseline" for b in budgets):
            baseline = self.store.load(item.nodeid)  # BaselineError propagates: names the file
        lookup = (lambda key, label, metric: baseline.values(key, label, metric)) if baseline is not None else None
        gate = Gate(
            item.nodeid,
            budgets,
            gs,
            driver_factory=self._driver_factory(kwargs),
            default_driver=kwargs.get("driver") or s.driver,
            baseline_lookup=lookup,
            progress=self._progress,
        )
        gate.baseline = baseline  # type: ignore[attr-defined]
        gate.notes = notes  # type: ignore[attr-defined]
        return gate

    def _driver_factory(self, kwargs: dict[str, Any]):  # noqa: ANN202
        settings = self.settings

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
                    locustfile=kwargs.get("locustfile"),
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
            gate = item.stash.get(STASH_GATE, None)
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
        message = Gate.failure_message(outcomes, self.settings.inconclusive)
        if message:
            raise GateFailure(message)
        return result

    def _after_gate(self, item: pytest.Item, gate: Gate, outcomes: list) -> None:
        from .baseline import baseline_from_gate

        record = baseline_from_gate(gate)
        self.store.save_pending(record)
        if self.settings.update_baseline:
            self.store.save(record)
        for o in outcomes:
            item.user_properties.append((f"netperf:{o.budget.text}", o.status))

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
                    rows = [_invalid_row(item.nodeid, b.text, invalid) for b in gate.budgets] or [_invalid_row(item.nodeid, "-", invalid)]
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
        for path in self.session.write_reports():
            terminalreporter.write_line(f"netperf: wrote {path}")


def _invalid_row(test_id: str, budget: str, reason: str) -> dict[str, Any]:
    return {
        "test_id": test_id, "budget": budget, "reference": "", "measured": "", "interval": "",
        "verdict": "INVALID", "rounds": 0, "notes": [reason], "driver": "", "where": "", "raw": {},
    }


STASH_OUTCOMES = pytest.StashKey[list]()
STASH_INVALID = pytest.StashKey[str]()


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
