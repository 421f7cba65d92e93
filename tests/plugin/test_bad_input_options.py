"""A bad option value names what the user wrote, never an internal field (issue #41):
``--netperf-duration must be > 0``, not ``round_duration_s must be > 0``."""

from __future__ import annotations

import pytest

INTERNAL_NAMES = ("round_duration_s", "warmup_s", "rounds_min", "rounds_max", ": confidence must", "max_lag_ms")


@pytest.mark.parametrize(
    ("ini", "args", "message"),
    [
        ("", ["--netperf-duration=0"], "--netperf-duration must be > 0 (got 0)"),
        ("netperf_round_duration = 0", [], "ini netperf_round_duration must be > 0 (got 0)"),
        ("", ["--netperf-warmup=-1"], "--netperf-warmup must be >= 0 (got -1)"),
        ("", ["--netperf-round-warmup=-1"], "--netperf-round-warmup must be >= 0 (got -1)"),
        ("", ["--netperf-rounds=1"], "--netperf-rounds must be at least 2 (got 1)"),
        (
            "",
            ["--netperf-rounds=5", "--netperf-max-rounds=3"],
            "--netperf-max-rounds (3) must be >= --netperf-rounds (5)",
        ),
        (
            "netperf_max_rounds = 3",
            ["--netperf-rounds=5"],
            "ini netperf_max_rounds (3) must be >= --netperf-rounds (5)",
        ),
        ("", ["--netperf-confidence=2"], "--netperf-confidence must be in ?0.5, 1) (got 2); e.g. 0.95"),
        ("", ["--netperf-max-lag=0"], "--netperf-max-lag must be > 0 (got 0)"),
        ("", ["--netperf-locust-workers=-1"], "--netperf-locust-workers must be >= 0 (got -1)"),
        ("", ["--netperf-driver=wrk"], "--netperf-driver must be one of rust, locust (got 'wrk')"),
        ("", ["--netperf-rounds=many"], "invalid value 'many' for --netperf-rounds: *"),
        ("netperf_confidence = high", [], "invalid value 'high' for ini netperf_confidence: *"),
        (
            "",
            ["--netperf-accept-failed-baseline"],
            "--netperf-accept-failed-baseline only says what --netperf-update-baseline may write: pass both",
        ),
    ],
)
def test_a_bad_value_names_the_option_or_ini_key_the_user_wrote(
    pytester: pytest.Pytester, no_ci: None, ini: str, args: list[str], message: str
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*args)
    result.stderr.fnmatch_lines([f"ERROR: pytest-netperf: {message}"])
    errors = result.stderr.str()
    assert not any(name in errors for name in INTERNAL_NAMES), errors
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_help_lists_every_option_with_its_text(pytester: pytest.Pytester) -> None:
    """``pytest --help`` formats every option's help (argparse reads ``%`` in it as a format:
    a ``rate="N%"`` in one help text once broke ``--help`` for the whole plugin)."""
    result = pytester.runpytest("--help")
    assert result.ret == 0, result.stderr.str()[-2000:]
    out = result.stdout.str()
    assert "--netperf-warmup=" in out and "--netperf-base=" in out and "netperf_round_warmup" in out
