"""The run's own A/A noise floor: base budgets of stacks that did not change since the base."""

from __future__ import annotations

from pytest_netperf.report.aa_control import noise_floor_note
from pytest_netperf.report.rows import ReportRow


def row(budget: str, low: float, high: float, changes: str, reference: str = "base") -> ReportRow:
    return ReportRow(
        test_id="t.py::test",
        budget=budget,
        reference=reference,
        measured="",
        interval="",
        verdict="PASS",
        rounds=5,
        raw={"estimate": (low + high) / 2, "ci_low": low, "ci_high": high, "exact": False},
        facts={"candidate": {"vs base": changes}},
    )


def test_the_widest_interval_of_the_unchanged_stacks_per_metric() -> None:
    note = noise_floor_note(
        [
            row("rps >= 0.9x base", 0.95, 1.04, "main (abc1234): unchanged (A/A control)"),
            row("rps >= 0.8x base", 0.93, 1.02, "main (abc1234): unchanged (A/A control)"),
            row("p90_added <= 100us vs base", -20_000.0, 40_000.0, "main (abc1234): unchanged (A/A control)"),
            row("rps >= 0.9x base", 0.40, 0.60, "main (abc1234): nginx/edge.conf +0 -1"),  # changed: not A/A
            row("rps_loss <= 80%", 0.60, 0.80, "main (abc1234): unchanged (A/A control)", reference="reference"),
        ]
    )
    assert note is not None
    assert "rps ±7.0% (2 budgets)" in note
    assert "p90 added ±30us (1 budget)" in note
    assert "40" not in note.split("rps ±")[1].split(",")[0]  # the changed stack does not count


def test_no_unchanged_stack_no_note() -> None:
    assert noise_floor_note([row("rps >= 0.9x base", 0.4, 0.6, "main (abc1234): nginx/edge.conf +0 -1")]) is None
    assert noise_floor_note([]) is None
