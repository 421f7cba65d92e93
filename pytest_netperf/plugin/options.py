"""Command-line options and ini keys, all ``--netperf-*``, mapped onto :class:`Settings`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pytest

from pytest_netperf import defaults
from pytest_netperf.images.resolve import ROLES
from pytest_netperf.settings import PATH_SETTINGS, SETTING_HELP, Settings


@dataclass(frozen=True)
class Option:
    """One ``--netperf-<suffix>`` option, the setting it fills and its ini key."""

    suffix: str
    setting: str
    ini: Optional[str]
    flag: bool = False

    @property
    def dest(self) -> str:
        """The argparse destination."""
        return "netperf_" + self.suffix.replace("-", "_")


OPTIONS = (
    Option("baseline-dir", "baseline_dir", "netperf_baseline_dir"),
    Option("update-baseline", "update_baseline", None, flag=True),
    Option("driver", "driver", "netperf_driver"),
    Option("rounds", "rounds_min", "netperf_rounds"),
    Option("max-rounds", "rounds_max", "netperf_max_rounds"),
    Option("duration", "round_duration_s", "netperf_round_duration"),
    Option("warmup", "warmup_s", "netperf_warmup"),
    Option("confidence", "confidence", "netperf_confidence"),
    Option("inconclusive", "inconclusive", "netperf_inconclusive"),
    Option("fingerprint-mismatch", "fingerprint_mismatch", "netperf_fingerprint_mismatch"),
    Option("json", "json_path", "netperf_json"),
    Option("markdown", "markdown_path", "netperf_markdown"),
    Option("report-dir", "report_dir", "netperf_report_dir"),
    Option("calibrate", "calibrate", None, flag=True),
    Option("max-lag", "max_lag_ms", "netperf_max_lag"),
    Option("realtime", "realtime", "netperf_realtime", flag=True),
    Option("locust-workers", "locust_workers", "netperf_locust_workers"),
)
IMAGE_OPTION = "--netperf-image"
IMAGE_INI = "netperf_images"


def add_options(parser: pytest.Parser) -> None:
    """Register every option in one group, and its ini key."""
    group = parser.getgroup("netperf", "network performance gates (pytest-netperf)")
    for option in OPTIONS:
        kwargs: dict[str, Any] = {"dest": option.dest, "help": SETTING_HELP[option.setting]}
        if option.flag:
            kwargs.update(action="store_true", default=None)
        group.addoption(f"--netperf-{option.suffix}", **kwargs)
        if option.ini:
            parser.addini(option.ini, SETTING_HELP[option.setting], type="string")
    image_help = f"container image for a role, ROLE=IMAGE; roles: {', '.join(ROLES)} (repeatable)"
    group.addoption(IMAGE_OPTION, dest="netperf_image", action="append", help=image_help)
    parser.addini(IMAGE_INI, image_help + " (one per line)", type="linelist")


def settings_from_config(config: pytest.Config) -> Settings:
    """Options over ini values over defaults; a bad value is a usage error naming it."""
    raw: dict[str, Any] = {}
    for option in OPTIONS:
        value = config.getoption(option.dest)
        from_ini = False
        if value is None and option.ini:
            value = config.getini(option.ini) or None
            from_ini = value is not None
        if value is None:
            continue
        if option.setting in PATH_SETTINGS and from_ini and config.inipath is not None:
            value = config.inipath.parent / str(value)  # ini paths are relative to the ini file
        raw[option.setting] = value
    raw.setdefault("baseline_dir", config.rootpath / defaults.BASELINE_DIR)
    try:
        return Settings.from_mapping(raw)
    except ValueError as exc:
        raise pytest.UsageError(f"pytest-netperf: {exc}") from exc


def image_overrides(config: pytest.Config) -> dict[str, str]:
    """ROLE=IMAGE pairs from ``--netperf-image`` and the ``netperf_images`` ini key."""
    pairs = list(config.getini(IMAGE_INI) or []) + list(config.getoption("netperf_image") or [])
    out: dict[str, str] = {}
    for pair in pairs:
        role, sep, image = (part.strip() for part in pair.partition("="))
        if not sep or not role or not image:
            raise pytest.UsageError(f"pytest-netperf: {IMAGE_OPTION} expects ROLE=IMAGE, got {pair!r}")
        if role not in ROLES:
            raise pytest.UsageError(
                f"pytest-netperf: {IMAGE_OPTION} {pair!r}: unknown role {role!r}; expected one of {', '.join(ROLES)}"
            )
        out[role] = image
    return out
