"""Every tunable of pytest-netperf in one place, shared by the plugin and the CLI.

The plugin maps its command-line options and ini values onto :class:`Settings` with
:meth:`Settings.from_mapping`; the ``netperf`` command reads the same defaults, so both
agree on, for example, where baselines live.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping, Optional

DEFAULT_BASELINE_DIR = ".netperf"
DEFAULT_REPORT_DIR = ".netperf-report"

RUNTIMES = ("docker", "local")
DRIVERS = ("rust", "locust")
INCONCLUSIVE_POLICIES = ("fail", "warn", "pass")
FINGERPRINT_POLICIES = ("warn", "fail")

#: One help line per setting, for option definitions in the plugin and the CLI.
SETTING_HELP: dict[str, str] = {
    "baseline_dir": "directory of the stored baseline files",
    "runtime": "where topologies run: " + " | ".join(RUNTIMES),
    "driver": "load driver: " + " | ".join(DRIVERS),
    "rounds_min": "rounds measured before a verdict is attempted",
    "rounds_max": "rounds measured at most while the verdict stays inconclusive",
    "round_duration_s": "measured seconds per round",
    "warmup_s": "warmup seconds per round (excluded from the measurement)",
    "confidence": "confidence level of the intervals, e.g. 0.95",
    "inconclusive": "what a final INCONCLUSIVE does: " + " | ".join(INCONCLUSIVE_POLICIES),
    "fingerprint_mismatch": "baseline from another machine: " + " | ".join(FINGERPRINT_POLICIES),
    "json_path": "write a machine-readable JSON report to this file",
    "markdown_path": "write a Markdown report (pull-request comment) to this file",
    "report_dir": "write plots and reports into this directory",
    "locust_workers": "Locust worker processes (0 = run Locust in one process)",
    "update_baseline": "store this run's results as the new baselines",
    "calibrate": "run the A/A calibration (noise floor) instead of the budgets",
    "max_lag_ms": "open loop: the driver's schedule-lag p99 above this (ms) invalidates a round",
    "realtime": "open loop: run the Rust driver's threads SCHED_FIFO (root) so other processes cannot delay sends",
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True)
class Settings:
    """Validated settings of one netperf session (see :data:`SETTING_HELP`)."""

    baseline_dir: Path = Path(DEFAULT_BASELINE_DIR)
    runtime: str = "docker"
    driver: str = "rust"
    rounds_min: int = 5
    rounds_max: int = 15
    round_duration_s: float = 5.0
    warmup_s: float = 1.0
    confidence: float = 0.95
    inconclusive: str = "fail"
    fingerprint_mismatch: str = "warn"
    json_path: Optional[Path] = None
    markdown_path: Optional[Path] = None
    report_dir: Optional[Path] = None
    locust_workers: int = 0
    update_baseline: bool = False
    calibrate: bool = False
    max_lag_ms: float = 5.0
    realtime: bool = False

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "Settings":
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
                raise ValueError(
                    f"unknown netperf setting {raw_key!r}; known: {', '.join(sorted(known))}"
                )
            if raw_value is None:
                continue
            kwargs[key] = _convert(key, raw_value)
        settings = cls(**kwargs)
        settings.validate()
        return settings

    def validate(self) -> None:
        """Raise ValueError when a value is out of range or not one of the choices."""
        _check_choice("runtime", self.runtime, RUNTIMES)
        _check_choice("driver", self.driver, DRIVERS)
        _check_choice("inconclusive", self.inconclusive, INCONCLUSIVE_POLICIES)
        _check_choice("fingerprint_mismatch", self.fingerprint_mismatch, FINGERPRINT_POLICIES)
        if self.rounds_min < 2:
            raise ValueError(f"rounds_min must be at least 2 (got {self.rounds_min})")
        if self.rounds_max < self.rounds_min:
            raise ValueError(
                f"rounds_max ({self.rounds_max}) must be >= rounds_min ({self.rounds_min})"
            )
        if self.round_duration_s <= 0:
            raise ValueError(f"round_duration_s must be > 0 (got {self.round_duration_s:g})")
        if self.warmup_s < 0:
            raise ValueError(f"warmup_s must be >= 0 (got {self.warmup_s:g})")
        if not 0.5 <= self.confidence < 1.0:
            raise ValueError(f"confidence must be in [0.5, 1) (got {self.confidence:g}); e.g. 0.95")
        if self.max_lag_ms <= 0:
            raise ValueError(f"max_lag_ms must be > 0 (got {self.max_lag_ms:g})")
        if self.locust_workers < 0:
            raise ValueError(f"locust_workers must be >= 0 (got {self.locust_workers})")


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)} (got {value!r})")


def _convert(key: str, value: Any) -> Any:
    """Convert one raw value to the type of setting ``key``."""
    default = Settings.__dataclass_fields__[key].default
    try:
        if key in ("baseline_dir", "json_path", "markdown_path", "report_dir"):
            return Path(value)
        if isinstance(default, bool):
            return _to_bool(value)
        if isinstance(default, int):
            return _to_int(value)
        if isinstance(default, float):
            return float(value)
        return str(value).strip().lower()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"invalid value {value!r} for netperf setting {key}: {exc}") from None


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError("expected true/false")


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("expected an integer")
        return int(value)
    return int(str(value).strip())
