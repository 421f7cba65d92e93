"""Every tunable of pytest-netperf in one place, shared by the plugin and the CLI.

The plugin maps its command-line options and ini values onto :class:`Settings` with
:meth:`Settings.from_mapping`; the ``netperf`` command reads the same defaults, so both
agree on, for example, where baselines live.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping, Optional

from pytest_netperf import defaults
from pytest_netperf.baseline.machine import check_class_name
from pytest_netperf.cpusets import cpuset_text, parse_cpuset
from pytest_netperf.drivers import HTTP_DRIVER_NAMES
from pytest_netperf.drivers.locust.worker_service import parse_master
from pytest_netperf.measure.design import DESIGNS
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.runtime.machine_speed import SPEED_THRESHOLD
from pytest_netperf.runtime.resources import default_split, usable_cores
from pytest_netperf.verdict.policy import POLICIES

DRIVERS = HTTP_DRIVER_NAMES
#: What a final INCONCLUSIVE does: fail; estimate (fail when the point estimate is outside
#: the budget, else warn); warn; pass.
INCONCLUSIVE_POLICIES = POLICIES
FINGERPRINT_POLICIES = ("new", "warn", "fail")
#: Text settings kept as given (a git ref is case-sensitive, a reason is the user's words).
CASE_SENSITIVE_SETTINGS = ("base", "accept_regression")
PATH_SETTINGS = ("baseline_dir", "json_path", "markdown_path", "report_dir", "html_path")
#: ``driver_cpus`` words besides an explicit cpuset.
DRIVER_CPUS_AUTO = "auto"
DRIVER_CPUS_ALL = "all"

#: One help line per setting: the plugin's options and the CLI read these.
SETTING_HELP: dict[str, str] = {
    "baseline_dir": f"where baselines live (default {defaults.BASELINE_DIR}, relative to the rootdir)",
    "driver": f"load driver: {' or '.join(DRIVERS)} (default {defaults.DRIVER})",
    "rounds_min": f"rounds per target before the first verdict (default {defaults.ROUNDS_MIN})",
    "rounds_max": f"rounds at most while a budget is inconclusive (default {defaults.ROUNDS_MAX})",
    "round_batch": f"rounds added at each look while a budget is undecided (default {defaults.ROUND_BATCH})",
    "saturated_retries": "times a round whose driver's saturation spoils a budget is measured again before it "
    f"is kept and left out of the budgets it spoils (default {defaults.SATURATED_ROUND_RETRIES})",
    "round_duration_s": f"measured seconds per round (default {defaults.ROUND_DURATION_S:g})",
    "warmup_s": "warmup seconds before a target's first round of a measurement, excluded from results "
    f"(default {defaults.WARMUP_S:g}; after the capacity run of a rate that is a share of the capacity, "
    "the round warmup)",
    "round_warmup_s": "warmup seconds of every later round, when the connections are opened again "
    f"(default {defaults.ROUND_WARMUP_S:g}; at most the warmup)",
    "confidence": f"confidence level of the verdicts (default {defaults.CONFIDENCE:g})",
    "inconclusive": "what a final INCONCLUSIVE does: change (fail when the point estimate is outside the "
    "budget and the rounds show a harmful change from no change at the verdict's level, else warn); estimate "
    f"(fail when the point estimate is outside the budget); fail; warn; or pass (default {defaults.INCONCLUSIVE})",
    "design": "how the sides of a comparison share the runner's time: auto (simultaneous for a target and its "
    "base twin at a fixed rate, each on containers of its own; two closed loops of the Rust driver in fine turns; "
    "alternate otherwise), alternate (one side at a "
    "time, ABBA rounds), simultaneous (every side loaded "
    "at once by its own driver process; sides on the same containers with a cost budget, and the Locust driver, "
    f"alternate) or turns (two closed loops share each round in {defaults.TURN_S * 1000:g} ms slots, ABBA) "
    f"(default {defaults.DESIGN})",
    "counting_requests": "counting pass (instructions_per_request, syscalls_per_request budgets): requests of its "
    f"larger exact count; the smaller is a fifth of it (default {defaults.COUNTING_REQUESTS})",
    "counting_repetitions": "counting pass: times the pair of counts is repeated; their range is the verdict's "
    f"tolerance (default {defaults.COUNTING_REPETITIONS})",
    "counting_time_limit_s": "counting pass: seconds one counted run may take (start under its counting tool, "
    f"the requests, the stop); a run over it is INVALID (default {defaults.COUNTING_TIME_LIMIT_S:g})",
    "fingerprint_mismatch": "when this test's stored baseline is of another machine class only: new (not used, "
    "the budgets are NEW), warn (judge against it with a warning) or fail; default "
    f"{defaults.FINGERPRINT_MISMATCH}. Within the class, a changed kernel, version or image warns (fail: fails); "
    f"a baseline whose machine measured another speed (its calibration more than {SPEED_THRESHOLD:g}x from this "
    "machine's) "
    "makes the wall-clock budgets NEW and still judges counted costs (warn: judged with a note; fail: fails)",
    "budget_calibration_ms": "the machine calibration (ms, `python -m pytest_netperf.runtime.machine_speed`) of "
    "the machine the absolute wall-clock budgets were set on (p99 < 1ms, p90_added <= 1ms per hop, rps >= 5000): "
    "on a machine that measures at least 1.1x slower, a miss that the slowdown explains (the figures given that "
    "speed back are within the budget) is undecided on this runner, with the figures, not a FAIL; a miss beyond "
    "it stands. Ratios and losses against a side of the same run do not depend on the speed (default 0: not "
    "said, absolute budgets are judged as written)",
    "base": "the base revision of a pull request (a git ref such as origin/main): every Compose stack is "
    "stood up from it too and measured beside the working tree's; budgets against 'base' judge the pairs",
    "base_skip_unchanged": "with --netperf-base: skip a test whose Compose stack and the files it uses are the "
    "same at the base revision (saves CI minutes; by default such a test runs as the run's A/A control)",
    "machine_class": "the machine class whose baselines this run reads and writes (default: derived from the "
    "CPU model and core count, e.g. amd-epyc-7b13-2c); name your CI runner types here",
    "json_path": "write machine-readable results to PATH",
    "markdown_path": "write a pull-request comment (Markdown) to PATH",
    "report_dir": "write PNG plots under DIR (and the HTML report to DIR/report.html unless --netperf-html says where)",
    "html_path": "write one self-contained HTML report (verdicts, failures, plots inline) to PATH",
    "locust_workers": "Locust worker processes on this machine (0: one process)",
    "locust_remote_workers": "Locust workers on other machines or containers (`netperf locust-worker --master "
    "HOST:PORT`) that attach once to this session's Locust master and serve every round; the gate waits for "
    f"them (default {defaults.LOCUST_REMOTE_WORKERS})",
    "locust_master": "BIND:PORT the session's Locust master listens on for workers (default "
    f"{defaults.LOCUST_MASTER_BIND}:{defaults.LOCUST_MASTER_PORT} with remote workers, else 127.0.0.1 and a free port)",
    "locust_workers_timeout_s": "seconds the Locust master waits for all its workers to attach "
    f"(default {defaults.LOCUST_WORKERS_TIMEOUT_S:g})",
    "update_baseline": "write this run's results as the new baselines (not of a test whose budget FAILed, other "
    "than against the old baseline, or was INVALID: see --netperf-accept-failed-baseline)",
    "accept_failed_baseline": "with --netperf-update-baseline: write the baseline of a test whose budgets FAILed or "
    "were INVALID too (refused otherwise: a broken run is nobody's baseline)",
    "record_missing": "write a test's baseline where this machine class has none for it yet (a machine's first "
    "run records its wall-clock figures; a run with a FAIL or INVALID budget writes nothing)",
    "calibrate": "A/A run: measure each reference against itself and store the noise floor",
    "max_lag_ms": "open loop: schedule-lag p99 (ms) of the driver above which a round is "
    f"invalid (default {defaults.MAX_LAG_MS:g})",
    "realtime": "open loop: run the Rust driver SCHED_FIFO (needs root) so a busy machine cannot delay its sends",
    "driver_cpus": "cores of the load driver (the Rust driver, Locust, the driver container): auto (default: "
    "its own cores, away from the system under test, where this machine has 4 or more; all of them below), "
    "all (no pinning), or a cpuset such as 0-1 or 0,2",
    "cpu_weight": "the CPU weight of the stack's containers and the load drivers, as a multiple of the default "
    f"(default {defaults.CPU_WEIGHT:g}; 1: the default weight): they run in a cgroup of this session, so other "
    "processes on the runner take less of their time. Needs root and Docker's cgroupfs driver; elsewhere a note "
    "says the stack runs at the default weight",
    "accept_regression": "accept the regressions of this run with a reason: a budget that FAILs is ACCEPTED (shown as "
    "ACCEPTED with the reason, counted, warned about; the test passes); INVALID and INCONCLUSIVE are never "
    "accepted. REASON, or SCOPE: REASON where SCOPE is a test (test_name or a node id), a quoted budget "
    "('p50 < 1ms') or both. Default: the environment variable NETPERF_ACCEPT (empty: nothing accepted). "
    "A Netperf-Accept: trailer of the HEAD commit accepts the same way",
    "strict": "a netperf-marked test that would be skipped for a netperf reason (Docker unreachable, an image "
    "missing) fails instead, so a merge gate cannot pass by not running; default: on when the environment "
    "variable CI is true (1, true, yes, on), off otherwise; --no-netperf-strict turns it off",
}


@dataclass(frozen=True)
class Settings(GateSettings):
    """Validated settings of one netperf session (see :data:`SETTING_HELP`): the gate's
    (:class:`~pytest_netperf.measure.gate.GateSettings`, inherited) and the session's own."""

    baseline_dir: Path = Path(defaults.BASELINE_DIR)
    driver: str = defaults.DRIVER
    fingerprint_mismatch: str = defaults.FINGERPRINT_MISMATCH
    budget_calibration_ms: float = 0.0
    machine_class: str = ""
    base: str = ""
    base_skip_unchanged: bool = False
    json_path: Optional[Path] = None
    markdown_path: Optional[Path] = None
    report_dir: Optional[Path] = None
    html_path: Optional[Path] = None
    locust_workers: int = defaults.LOCUST_WORKERS
    locust_remote_workers: int = defaults.LOCUST_REMOTE_WORKERS
    locust_master: str = ""
    locust_workers_timeout_s: float = defaults.LOCUST_WORKERS_TIMEOUT_S
    update_baseline: bool = False
    accept_failed_baseline: bool = False
    record_missing: bool = False
    strict: bool = False
    accept_regression: str = ""
    driver_cpus: str = defaults.DRIVER_CPUS
    cpu_weight: float = defaults.CPU_WEIGHT

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Settings:
        """Build from option/ini values; ``None`` means "use the default".

        Keys are setting names (``-`` and ``_`` are interchangeable). Strings, as ini
        files give them, are converted. Raises ValueError naming the setting and the
        problem for an unknown key or an invalid value.
        """
        known = {f.name: f for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for raw_key, raw_value in values.items():
            key = raw_key.replace("-", "_")
            if key not in known:
                raise ValueError(f"unknown netperf setting {raw_key!r}; known: {', '.join(sorted(known))}")
            if raw_value is None:
                continue
            kwargs[key] = _convert(key, raw_value)
        settings = cls(**kwargs)
        settings.validate()
        return settings

    def validate(self) -> None:
        """Raise ValueError when a value is out of range or not one of the choices."""
        _check_choice("driver", self.driver, DRIVERS)
        _check_choice("inconclusive", self.inconclusive, INCONCLUSIVE_POLICIES)
        _check_choice("design", self.design, DESIGNS)
        _check_choice("fingerprint_mismatch", self.fingerprint_mismatch, FINGERPRINT_POLICIES)
        check_rounds(self.rounds_min, self.rounds_max)
        if self.round_batch < 1:
            raise SettingError("round_batch", f"round_batch must be >= 1 (got {self.round_batch})")
        if self.saturated_retries < 0:
            raise SettingError("saturated_retries", f"saturated_retries must be >= 0 (got {self.saturated_retries})")
        check_durations(self.round_duration_s, self.warmup_s)
        if self.counting_requests < 10:
            raise SettingError("counting_requests", f"counting_requests must be >= 10 (got {self.counting_requests})")
        if self.counting_repetitions < 2:
            raise SettingError(
                "counting_repetitions",
                f"counting_repetitions must be >= 2 (got {self.counting_repetitions}): the counted verdicts "
                "rest on the spread of the repetitions, and one repetition has no spread",
            )
        if not self.counting_time_limit_s > 0:
            raise SettingError(
                "counting_time_limit_s", f"counting_time_limit_s must be > 0 (got {self.counting_time_limit_s:g})"
            )
        check_durations(self.round_duration_s, self.round_warmup_s, warmup_setting="round_warmup_s")
        if not 0.5 <= self.confidence < 1.0:
            raise SettingError("confidence", f"confidence must be in [0.5, 1) (got {self.confidence:g}); e.g. 0.95")
        if self.max_lag_ms <= 0:
            raise SettingError("max_lag_ms", f"max_lag_ms must be > 0 (got {self.max_lag_ms:g})")
        if self.locust_workers < 0:
            raise SettingError("locust_workers", f"locust_workers must be >= 0 (got {self.locust_workers})")
        if self.locust_remote_workers < 0:
            raise SettingError(
                "locust_remote_workers", f"locust_remote_workers must be >= 0 (got {self.locust_remote_workers})"
            )
        if not self.locust_workers_timeout_s > 0:
            raise SettingError(
                "locust_workers_timeout_s",
                f"locust_workers_timeout_s must be > 0 (got {self.locust_workers_timeout_s:g})",
            )
        if self.locust_master:
            try:
                parse_master(self.locust_master)
            except ValueError as exc:
                raise SettingError("locust_master", f"locust_master: {exc}") from None
        if self.accept_failed_baseline and not self.update_baseline:
            raise SettingError(
                "accept_failed_baseline",
                "accept_failed_baseline only says what update_baseline may write: pass both",
                "update_baseline",
            )
        check_driver_cpus(self.driver_cpus)
        if not self.budget_calibration_ms >= 0:
            raise SettingError(
                "budget_calibration_ms",
                f"budget_calibration_ms must be a calibration in ms, >= 0 (got {self.budget_calibration_ms:g})",
            )
        if not self.cpu_weight >= 1:
            raise SettingError("cpu_weight", f"cpu_weight must be 1 or more (got {self.cpu_weight:g})")
        if self.machine_class:
            try:
                check_class_name(self.machine_class)
            except ValueError as exc:
                raise SettingError("machine_class", str(exc)) from None

    def locust_master_address(self) -> tuple[str, int]:
        """(bind host, port) of the session's Locust master; port 0 picks a free one."""
        if self.locust_master:
            return parse_master(self.locust_master)
        if self.locust_remote_workers:
            return defaults.LOCUST_MASTER_BIND, defaults.LOCUST_MASTER_PORT
        return "127.0.0.1", 0


class SettingError(ValueError):
    """A bad value of one setting; ``setting`` names it (so the plugin can name its option).

    The message names the setting (and ``others`` it is checked against) by their setting
    names; :meth:`worded` puts what the user wrote in their place (an option, an ini key).
    """

    def __init__(self, setting: str, message: str, *others: str) -> None:
        super().__init__(message)
        self.setting = setting
        #: Every setting the message names, ``setting`` first.
        self.settings = (setting, *others)

    def worded(self, names: Mapping[str, str]) -> str:
        """The message with each setting it names replaced by ``names[setting]`` (the option
        or ini key the user wrote); a setting without a name keeps its own."""
        known = {setting: names[setting] for setting in self.settings if setting in names}
        if not known:
            return str(self)
        pattern = re.compile(r"\b(" + "|".join(re.escape(s) for s in sorted(known, key=len, reverse=True)) + r")\b")
        if pattern.search(str(self)) is None:  # a message that names no setting: say whose it is
            return f"{known.get(self.setting, self.setting)}: {self}"
        return pattern.sub(lambda match: known[match.group(1)], str(self))


def check_driver_cpus(value: str) -> None:
    """:class:`SettingError` unless ``value`` is ``auto``, ``all`` or a cpuset (``0-1``, ``0,2``)."""
    if value in (DRIVER_CPUS_AUTO, DRIVER_CPUS_ALL):
        return
    try:
        parse_cpuset(value)
    except ValueError:
        raise SettingError(
            "driver_cpus",
            f"driver_cpus must be {DRIVER_CPUS_AUTO}, {DRIVER_CPUS_ALL} or a cpuset such as 0-1 or 0,2 (got {value!r})",
        ) from None


def resolve_driver_cpus(value: str, cores: Optional[list[int]] = None) -> Optional[str]:
    """The cpuset the load driver runs on, or None (no pinning), for a ``driver_cpus`` value.

    ``auto``: the driver's share of :func:`~pytest_netperf.runtime.resources.default_split`
    of ``cores`` (default: the cores this process may use), None below 4 cores; ``all``:
    None; a cpuset: itself, normalised (``0,1`` -> ``0-1``). Raises :class:`SettingError`
    for a cpuset naming a core this process may not use, or any cpuset where the platform
    cannot pin processes (not Linux).
    """
    check_driver_cpus(value)
    can_pin = hasattr(os, "sched_setaffinity")
    if value == DRIVER_CPUS_ALL:
        return None
    if value == DRIVER_CPUS_AUTO:
        split = default_split(cores) if can_pin else None
        return split.driver if split is not None else None
    if not can_pin:
        raise SettingError("driver_cpus", f"driver_cpus {value!r}: this platform cannot pin processes to cores")
    usable = usable_cores() if cores is None else sorted(cores)
    wanted = parse_cpuset(value)
    missing = [core for core in wanted if core not in usable]
    if missing:
        raise SettingError(
            "driver_cpus",
            f"driver_cpus {value!r}: core(s) {cpuset_text(missing)} not available to this process "
            f"(usable: {cpuset_text(usable)})",
        )
    return cpuset_text(wanted)


def check_rounds(rounds_min: int, rounds_max: int) -> None:
    """:class:`SettingError` unless ``2 <= rounds_min <= rounds_max`` (the marker checks the same)."""
    if rounds_min < 2:
        raise SettingError("rounds_min", f"rounds_min must be at least 2 (got {rounds_min})")
    if rounds_max < rounds_min:
        raise SettingError(
            "rounds_max", f"rounds_max ({rounds_max}) must be >= rounds_min ({rounds_min})", "rounds_min"
        )


def check_durations(round_duration_s: float, warmup_s: float, warmup_setting: str = "warmup_s") -> None:
    """:class:`SettingError` unless the round lasts > 0 s and the warmup (the setting
    ``warmup_setting``) >= 0 s."""
    if not round_duration_s > 0:
        raise SettingError("round_duration_s", f"round_duration_s must be > 0 (got {round_duration_s:g})")
    if not warmup_s >= 0:
        raise SettingError(warmup_setting, f"{warmup_setting} must be >= 0 (got {warmup_s:g})")


def strict_default(environ: Optional[Mapping[str, str]] = None) -> bool:
    """The default of ``strict``: True when the environment variable CI is a true value."""
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() in _TRUE


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise SettingError(name, f"{name} must be one of {', '.join(choices)} (got {value!r})")


def _convert(key: str, value: Any) -> Any:
    """Convert one raw value to the type of setting ``key``."""
    default = Settings.__dataclass_fields__[key].default
    try:
        if key in PATH_SETTINGS:
            return Path(value)
        if key in CASE_SENSITIVE_SETTINGS:
            return str(value).strip()
        if isinstance(default, bool):
            return _to_bool(value)
        if isinstance(default, int):
            return to_int(value)
        if isinstance(default, float):
            return to_float(value)
        return str(value).strip().lower()
    except (TypeError, ValueError) as exc:
        raise SettingError(key, f"invalid value {value!r} for {key}: {exc}") from None


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError("expected true/false")


def to_int(value: Any) -> int:
    """An integer from an int, an integral float or text; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("expected an integer")
        return int(value)
    return int(str(value).strip())


def to_float(value: Any) -> float:
    """A finite float from a number or text; ValueError otherwise (booleans too)."""
    if isinstance(value, bool):
        raise ValueError("expected a number")
    number = float(str(value).strip()) if isinstance(value, str) else float(value)
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError("expected a finite number")
    return number
