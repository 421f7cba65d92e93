"""Scaffolds of the pytester runs shared by tests/plugin/ and tests/integration/ (see tests/README.md)."""

from __future__ import annotations

import json

import pytest

from pytest_netperf import defaults
from pytest_netperf.measure.validity import BUSY_OUTSIDE_SHARE, BUSY_STEAL_SHARE


def netperf_args(rounds: int, max_rounds: int, duration: str, warmup: str, *more: str) -> list[str]:
    """The options of a short netperf run in a pytester subprocess: ``rounds`` to ``max_rounds``
    rounds of ``duration`` seconds after ``warmup`` seconds, then ``more``, with pytest's cache
    plugin off (a run must not leave .pytest_cache in the test's folder)."""
    return [
        f"--netperf-rounds={rounds}",
        f"--netperf-max-rounds={max_rounds}",
        f"--netperf-duration={duration}",
        f"--netperf-warmup={warmup}",
        *more,
        "-p",
        "no:cacheprovider",
    ]


def json_report(pytester: pytest.Pytester, name: str = "results.json") -> dict:
    """The JSON report (``--netperf-json=name``) the run wrote in the pytester folder."""
    return json.loads((pytester.path / name).read_text())


#: Why a gate leaves a budget undecided on a busy or noisy runner, as its notes say it: the
#: runner took too much of the machine for the rounds (validity), or the rounds spread too wide
#: to resolve the budget within the most rounds (the verdict's early stop).
TOO_BUSY = "too busy"
UNDECIDABLE_HERE = "cannot be decided on this runner"
RUNNER_REASONS = (TOO_BUSY, UNDECIDABLE_HERE)


def undecided_for(row: dict, *reasons: str) -> bool:
    """Whether ``row`` (a JSON report row) is INCONCLUSIVE with notes that give one of
    ``reasons`` (by default either of :data:`RUNNER_REASONS`): the gate's honest answer on a
    busy or noisy machine, green under the default policy."""
    notes = " ".join(row["notes"])
    return row["verdict"] == "INCONCLUSIVE" and any(reason in notes for reason in reasons or RUNNER_REASONS)


def on_a_busy_runner(row: dict) -> bool:
    """Whether ``row``'s rounds ran on a runner busy by the gate's own rule: the hypervisor stole
    :data:`~pytest_netperf.measure.validity.BUSY_STEAL_SHARE` of the time or more, or other
    processes held :data:`~pytest_netperf.measure.validity.BUSY_OUTSIDE_SHARE` of the cores."""
    runner = row.get("runner") or {}
    if not runner:
        return False
    steal = runner.get("steal_share") or 0.0
    others = runner.get("other_cores") or 0.0
    return steal >= BUSY_STEAL_SHARE or others >= BUSY_OUTSIDE_SHARE * runner["cores"]


def held_back_on_a_busy_runner(result: pytest.RunResult, row: dict) -> bool:
    """Whether ``row`` was left undecided after the gate set aside the rounds a busy runner
    spoiled (``judged on the quiet rounds`` / ``alike-contended rounds``) and the run stayed
    red under the default policy: the change is held back, without a FAIL the neighbours
    could have caused."""
    notes = " ".join(row["notes"])
    judged_apart = "left out" in notes and "judged on the" in notes
    return row["verdict"] == "INCONCLUSIVE" and judged_apart and result.ret == 1


def caught(result: pytest.RunResult, row: dict) -> bool:
    """A regression's row: True when it FAILed and the run is red; False when the runner was too
    busy to decide it (:func:`undecided_for` ``TOO_BUSY``, e.g. beside busy-neighbor) or the rounds it left
    undecided were judged apart from the busy ones and the run is red
    (:func:`held_back_on_a_busy_runner`); anything else (a PASS, an undecided verdict on a
    quiet runner) fails the calling test."""
    if row["verdict"] == "FAIL":
        assert result.ret == 1, result.stdout.str()[-3000:]
        return True
    assert undecided_for(row, TOO_BUSY) or held_back_on_a_busy_runner(result, row), (
        f"{row}\n{result.stdout.str()[-3000:]}"
    )
    return False


def counted_each_side(row: dict, repetitions: int) -> bool:
    """Whether a counted row's sides were counted ``repetitions`` times each, or counted again
    with the confirming repetitions after a first pass that failed by less than its spread."""
    notes = " ".join(row["notes"])
    again = defaults.COUNTING_CONFIRM_REPETITIONS
    recounted = f"counted again, {again} repetitions" in notes and f"counted: {again} repetitions each side" in notes
    return f"counted: {repetitions} repetitions each side" in notes or recounted
