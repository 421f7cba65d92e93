"""Settings shared by the plugin and the CLI: defaults, conversion, validation."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from pytest_netperf import defaults
from pytest_netperf.settings import SETTING_HELP, Settings, strict_default


def test_defaults() -> None:
    s = Settings()
    assert s.baseline_dir == Path(defaults.BASELINE_DIR) == Path(".netperf")
    assert (s.driver, s.inconclusive, s.fingerprint_mismatch) == (
        "rust",
        "change",
        "new",
    )
    assert (s.rounds_min, s.rounds_max, s.round_duration_s, s.warmup_s, s.round_warmup_s) == (5, 15, 5.0, 1.0, 0.25)
    assert s.confidence == 0.95 and s.locust_workers == 0
    assert (s.json_path, s.markdown_path, s.report_dir) == (None, None, None)
    assert s.update_baseline is False and s.calibrate is False


def test_every_setting_has_help() -> None:
    assert set(SETTING_HELP) == {f.name for f in fields(Settings)}


def test_none_means_default_and_ini_strings_are_converted() -> None:
    s = Settings.from_mapping(
        {
            "baseline_dir": "perf/baselines",
            "rounds-min": "3",
            "rounds_max": "7",
            "round_duration_s": "2.5",
            "confidence": "0.99",
            "inconclusive": "WARN",
            "update_baseline": "true",
            "calibrate": None,
            "json_path": "out/netperf.json",
            "locust_workers": 2,
        }
    )
    assert s.baseline_dir == Path("perf/baselines")
    assert (s.rounds_min, s.rounds_max, s.round_duration_s, s.confidence) == (3, 7, 2.5, 0.99)
    assert s.inconclusive == "warn" and s.update_baseline is True and s.calibrate is False
    assert s.json_path == Path("out/netperf.json") and s.locust_workers == 2


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"rounds_min": 1}, "rounds_min must be at least 2 (got 1)"),
        ({"rounds_min": 6, "rounds_max": 5}, "rounds_max (5) must be >= rounds_min (6)"),
        ({"round_duration_s": 0}, "round_duration_s must be > 0 (got 0)"),
        ({"warmup_s": -1}, "warmup_s must be >= 0 (got -1)"),
        ({"confidence": 95}, "confidence must be in [0.5, 1) (got 95); e.g. 0.95"),
        ({"inconclusive": "ignore"}, "inconclusive must be one of change, estimate, fail, warn, pass (got 'ignore')"),
        (
            {"fingerprint_mismatch": "pass"},
            "fingerprint_mismatch must be one of new, warn, fail (got 'pass')",
        ),
        ({"runtime": "docker"}, "unknown netperf setting 'runtime'"),
        ({"driver": "wrk"}, "driver must be one of rust, locust (got 'wrk')"),
        ({"locust_workers": -2}, "locust_workers must be >= 0 (got -2)"),
        ({"rounds_min": "five"}, "invalid value 'five' for rounds_min"),
        (
            {"rounds_max": 7.5},
            "invalid value 7.5 for rounds_max: expected an integer",
        ),
        (
            {"update_baseline": "maybe"},
            "invalid value 'maybe' for update_baseline: expected true/false",
        ),
        (
            {"round_secs": 3},
            "unknown netperf setting 'round_secs'; known: accept_failed_baseline, accept_regression, base, "
            "base_skip_unchanged",
        ),
    ],
)
def test_invalid_values_are_explained(values: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        Settings.from_mapping(values)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("environ", "strict"),
    [
        ({}, False),
        ({"CI": ""}, False),
        ({"CI": "false"}, False),
        ({"CI": "0"}, False),
        ({"CI": "true"}, True),
        ({"CI": "True"}, True),
        ({"CI": "1"}, True),
        ({"CI": " yes "}, True),
        ({"CI": "on"}, True),
    ],
)
def test_strict_defaults_to_on_under_ci(environ: dict[str, str], strict: bool) -> None:
    assert strict_default(environ) is strict
    assert Settings().strict is False  # the environment is read by the plugin, not by Settings
