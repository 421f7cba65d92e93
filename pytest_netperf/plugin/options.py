"""Command-line options and ini keys, all ``--netperf-*``, mapped onto :class:`Settings`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest

from pytest_netperf import defaults
from pytest_netperf.images.resolve import is_image_reference
from pytest_netperf.images.roles import ROLES
from pytest_netperf.revision.trailers import head_trailers
from pytest_netperf.settings import (
    PATH_SETTINGS,
    SETTING_HELP,
    SettingError,
    Settings,
    resolve_driver_cpus,
    strict_default,
)
from pytest_netperf.verdict.acceptance import (
    ACCEPT_ENV,
    ACCEPT_INI,
    ACCEPT_TRAILER,
    Acceptance,
    AcceptanceError,
    parse_acceptance,
)


@dataclass(frozen=True)
class Option:
    """One ``--netperf-<suffix>`` option, the setting it fills and its ini key."""

    suffix: str
    setting: str
    ini: Optional[str]
    flag: bool = False
    #: A flag that also has ``--no-netperf-<suffix>`` (to turn off a default that is on).
    negatable: bool = False
    #: The option's and ini key's former names, still accepted (``cost-requests``, 0.1).
    former: Optional[str] = None
    former_ini: Optional[str] = None
    #: An environment variable that is the option's default (read before the ini key; empty: unset).
    env: Optional[str] = None

    @property
    def dest(self) -> str:
        """The argparse destination."""
        return "netperf_" + self.suffix.replace("-", "_")


OPTIONS = (
    Option("baseline-dir", "baseline_dir", "netperf_baseline_dir"),
    Option("update-baseline", "update_baseline", None, flag=True),
    Option("accept-failed-baseline", "accept_failed_baseline", None, flag=True),
    Option("record-missing-baselines", "record_missing", "netperf_record_missing_baselines", flag=True),
    Option("driver", "driver", "netperf_driver"),
    Option("rounds", "rounds_min", "netperf_rounds"),
    Option("max-rounds", "rounds_max", "netperf_max_rounds"),
    Option("duration", "round_duration_s", "netperf_round_duration"),
    Option("warmup", "warmup_s", "netperf_warmup"),
    Option("round-warmup", "round_warmup_s", "netperf_round_warmup"),
    Option("confidence", "confidence", "netperf_confidence"),
    Option("inconclusive", "inconclusive", "netperf_inconclusive"),
    Option("design", "design", "netperf_design"),
    Option(
        "counting-requests",
        "counting_requests",
        "netperf_counting_requests",
        former="cost-requests",
        former_ini="netperf_cost_requests",
    ),
    Option(
        "counting-repetitions",
        "counting_repetitions",
        "netperf_counting_repetitions",
        former="cost-repetitions",
        former_ini="netperf_cost_repetitions",
    ),
    Option(
        "counting-time-limit",
        "counting_time_limit_s",
        "netperf_counting_time_limit",
        former="cost-time-limit",
        former_ini="netperf_cost_time_limit",
    ),
    Option("fingerprint-mismatch", "fingerprint_mismatch", "netperf_fingerprint_mismatch"),
    Option("machine-class", "machine_class", "netperf_machine_class"),
    Option("budget-calibration", "budget_calibration_ms", "netperf_budget_calibration"),
    Option("base", "base", "netperf_base"),
    Option("base-skip-unchanged", "base_skip_unchanged", "netperf_base_skip_unchanged", flag=True),
    Option("json", "json_path", "netperf_json"),
    Option("markdown", "markdown_path", "netperf_markdown"),
    Option("report-dir", "report_dir", "netperf_report_dir"),
    Option("html", "html_path", "netperf_html"),
    Option("calibrate", "calibrate", None, flag=True),
    Option("max-lag", "max_lag_ms", "netperf_max_lag"),
    Option("realtime", "realtime", "netperf_realtime", flag=True),
    Option("locust-workers", "locust_workers", "netperf_locust_workers"),
    Option("locust-remote-workers", "locust_remote_workers", "netperf_locust_remote_workers"),
    Option("locust-master", "locust_master", "netperf_locust_master"),
    Option("locust-workers-timeout", "locust_workers_timeout_s", "netperf_locust_workers_timeout"),
    Option("driver-cpus", "driver_cpus", "netperf_driver_cpus"),
    Option("cpu-weight", "cpu_weight", "netperf_cpu_weight"),
    Option("strict", "strict", "netperf_strict", flag=True, negatable=True),
    Option("accept", "accept_regression", ACCEPT_INI, env=ACCEPT_ENV),
)
#: The option that accepts this run's regressions (:mod:`pytest_netperf.verdict.acceptance`).
ACCEPT = next(option for option in OPTIONS if option.setting == "accept_regression")
IMAGE_OPTION = "--netperf-image"
IMAGE_INI = "netperf_images"


def add_options(parser: pytest.Parser) -> None:
    """Register every option in one group, and its ini key."""
    group = parser.getgroup("netperf", "network performance gates (pytest-netperf)")
    for option in OPTIONS:
        kwargs: dict[str, Any] = {"dest": option.dest, "help": SETTING_HELP[option.setting]}
        if option.flag:
            kwargs.update(action="store_true", default=None)
        former = [f"--netperf-{option.former}"] if option.former else []
        group.addoption(f"--netperf-{option.suffix}", *former, **kwargs)
        if option.negatable:
            group.addoption(
                f"--no-netperf-{option.suffix}",
                dest=option.dest,
                action="store_false",
                default=None,
                help=f"turn --netperf-{option.suffix} off",
            )
        if option.ini:
            parser.addini(option.ini, SETTING_HELP[option.setting], type="string")
        if option.former_ini:
            parser.addini(option.former_ini, f"former name of {option.ini}", type="string")
    image_help = (
        f"container image for a role, ROLE=IMAGE (roles: {', '.join(ROLES)}), or an image mapping "
        "IMAGE=IMAGE for Compose services and file-backed nodes, e.g. nginx:1.27=pytest-netperf/nginx:local "
        "(repeatable)"
    )
    group.addoption(IMAGE_OPTION, dest="netperf_image", action="append", help=image_help)
    parser.addini(IMAGE_INI, image_help + " (one per line)", type="linelist")


def settings_from_config(config: pytest.Config) -> Settings:
    """Options over ini values over defaults; a bad value is a usage error naming it.

    ``strict`` defaults to the environment (:func:`strict_default`: on under CI). Paths are
    checked here too (:func:`check_paths`), where a wrong kind of path is already known, and
    so are the driver's cores (:func:`~pytest_netperf.settings.resolve_driver_cpus`: a core
    this process may not use). A bad value of one setting names the option or ini key it
    came from.
    """
    raw: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for option in OPTIONS:
        given = option_value(config, option)
        if given is None:
            continue
        value, source = given
        if option.setting in PATH_SETTINGS and source.startswith("ini ") and config.inipath is not None:
            value = config.inipath.parent / str(value)  # ini paths are relative to the ini file
        raw[option.setting] = value
        sources[option.setting] = source
    option_acceptance(config)  # a malformed reason is a usage error naming where it was given
    raw.setdefault("baseline_dir", config.rootpath / defaults.BASELINE_DIR)
    sources.setdefault("baseline_dir", f"--netperf-baseline-dir (default {defaults.BASELINE_DIR})")
    raw.setdefault("strict", strict_default())
    try:
        settings = Settings.from_mapping(raw)
        resolve_driver_cpus(settings.driver_cpus)
    except SettingError as exc:
        raise pytest.UsageError(f"pytest-netperf: {exc.worded(user_names(sources))}") from exc
    except ValueError as exc:
        raise pytest.UsageError(f"pytest-netperf: {exc}") from exc
    check_paths(settings, sources)
    return settings


def option_value(config: pytest.Config, option: Option) -> Optional[tuple[Any, str]]:
    """(value, where it came from) of one option: the command line, else its environment
    variable (not empty), else its ini key (or the key's former name); None when unset."""
    value = config.getoption(option.dest)
    if value is not None:
        return value, f"--netperf-{option.suffix}"
    if option.env and os.environ.get(option.env, "").strip():
        return os.environ[option.env], option.env
    for ini in (option.ini, option.former_ini):
        if ini and config.getini(ini):
            return config.getini(ini), f"ini {ini}"
    return None


def option_acceptance(config: pytest.Config) -> Optional[Acceptance]:
    """The acceptance of ``--netperf-accept`` (or ``NETPERF_ACCEPT``, or the ini key), None
    when none is given; a UsageError naming where it was given and the text when malformed."""
    given = option_value(config, ACCEPT)
    if given is None:
        return None
    try:
        return parse_acceptance(str(given[0]), given[1])
    except AcceptanceError as exc:
        raise pytest.UsageError(f"pytest-netperf: {exc}") from None


def trailer_acceptances(repository: Path) -> list[Acceptance]:
    """The acceptances of the ``Netperf-Accept:`` trailers of the HEAD commit of the repository
    holding ``repository`` (none without git or a repository); a UsageError naming the trailer,
    the commit and the text when one is malformed."""
    found = head_trailers(repository, ACCEPT_TRAILER)
    source = f"trailer {ACCEPT_TRAILER} of commit {found.commit}"
    try:
        return [parse_acceptance(value, source) for value in found.values]
    except AcceptanceError as exc:
        raise pytest.UsageError(f"pytest-netperf: {exc}") from None


def user_names(sources: dict[str, str]) -> dict[str, str]:
    """Setting -> what the user knows it as: where its value came from (``--netperf-duration``,
    ``ini netperf_round_duration``), else its option; a message names these, never a field."""
    names = {option.setting: f"--netperf-{option.suffix}" for option in OPTIONS}
    names.update({setting: source.split(" (default", 1)[0] for setting, source in sources.items()})
    return names


#: Settings that name a directory (the others in PATH_SETTINGS name a file).
_DIRECTORY_SETTINGS = ("baseline_dir", "report_dir")


def check_paths(settings: Settings, sources: Optional[dict[str, str]] = None) -> None:
    """UsageError naming the option and the path when a path is of the wrong kind.

    Knowable before any test runs: a file where a directory is needed, a directory where
    a file is needed, an ancestor that is a file. Whether a path can be written is only
    known by writing; that is checked at run time (a warning, never a changed verdict).
    """
    for setting in PATH_SETTINGS:
        value = getattr(settings, setting)
        if value is None:
            continue
        problem = path_problem(Path(value), directory=setting in _DIRECTORY_SETTINGS)
        if problem:
            source = (sources or {}).get(setting, setting)
            raise pytest.UsageError(f"pytest-netperf: {source}: {problem}")


def path_problem(path: Path, directory: bool) -> Optional[str]:
    """Why ``path`` cannot be used as a directory (``directory``) or a file, or None."""
    try:
        if path.is_dir():
            return None if directory else f"{path} is a directory; expected a file path"
        if path.exists():
            return f"{path} is a file; expected a directory" if directory else None
        for parent in path.absolute().parents:
            if parent.is_dir():
                return None
            if parent.exists():
                return f"{path}: its parent {parent} is not a directory"
    except OSError as exc:  # e.g. a parent that may not be searched
        return f"{path}: cannot be examined ({exc.strerror or exc})"
    return None


def image_overrides(config: pytest.Config) -> dict[str, str]:
    """ROLE=IMAGE and IMAGE=IMAGE pairs from ``--netperf-image`` and the ``netperf_images`` ini key.

    A role key (``nginx``) picks the image of the built-in topologies' nodes of that role;
    an image key (``nginx:1.27``) maps an image a Compose file or a node's ``image=`` names
    to the one that runs instead (e.g. the local offline build).
    """
    pairs = list(config.getini(IMAGE_INI) or []) + list(config.getoption("netperf_image") or [])
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, image = (part.strip() for part in pair.partition("="))
        if not sep or not key or not image:
            raise pytest.UsageError(f"pytest-netperf: {IMAGE_OPTION} expects ROLE=IMAGE or IMAGE=IMAGE, got {pair!r}")
        if key not in ROLES and not is_image_reference(key):
            raise pytest.UsageError(
                f"pytest-netperf: {IMAGE_OPTION} {pair!r}: {key!r} is neither a role "
                f"({', '.join(ROLES)}) nor an image reference such as nginx:1.27"
            )
        out[key] = image
    return out
