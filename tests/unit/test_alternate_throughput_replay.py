"""Recorded alternating throughput gates replayed through the sequential procedure: a real
5% cut is caught, unchanged stacks stay green.

``data/rps_alternate_gates.json`` holds the rounds of 40 unchanged and 23 cut gates
(``benchmarks/gate_power.py --rounds-out``, one side at a time, ABBA). With the former early
stop (kept measuring only while a truth one standard error worse could still fail the
budget) 7 of those 23 cut gates stopped after 6-16 rounds as "cannot be decided" and
passed; replayed with that rule, 77% are caught, 98% with today's. Each simulated gate draws moving blocks of 5
consecutive pairs from within the recorded gates and runs gate_power's plan (6 pairs, +5,
up to 32) with the default policy, at the benchmark's budget 2.5% from no change.
400 gates: a rate near 95% has a sampling error of about 1.1 points.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from block_replay import replayed_gates
from scipy import special

from pytest_netperf import defaults
from pytest_netperf.budget.grammar import Budget, parse_budget
from pytest_netperf.verdict import stats
from pytest_netperf.verdict.estimators import Estimate
from pytest_netperf.verdict.sequential import SequentialPlan

BUDGET = parse_budget("rps >= 0.975x reference")
PLAN = SequentialPlan(min_rounds=6, max_rounds=32, batch=5)
GATES = 400
BLOCK = 5


@functools.cache
def recorded(name: str) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Candidate and reference rounds of one set, and where a block may start (inside a gate)."""
    gates = json.loads((Path(__file__).parent / "data" / "rps_alternate_gates.json").read_text())["sets"][name]
    cand: list[float] = []
    ref: list[float] = []
    starts: list[int] = []
    for gate in gates:
        pairs = min(len(gate["candidate"]), len(gate["reference"]))
        starts.extend(len(cand) + i for i in range(pairs - BLOCK + 1))
        cand.extend(gate["candidate"][:pairs])
        ref.extend(gate["reference"][:pairs])
    return np.asarray(cand), np.asarray(ref), starts


def red_share(name: str, seed: int = 3) -> float:
    """Share of replayed gates of set ``name`` that end red under the default policy."""
    cand, ref, starts = recorded(name)
    return replayed_gates(
        BUDGET, cand, ref, starts, plan=PLAN, policy=defaults.INCONCLUSIVE, gates=GATES, block=BLOCK, seed=seed
    )[0]


def test_a_five_percent_cut_taken_in_turns_is_caught() -> None:
    assert red_share("cut") >= 0.90


def test_unchanged_stacks_taken_in_turns_stay_green() -> None:
    assert red_share("A/A") <= 0.05


def former_undecidable_note(
    budget: Budget, est: Estimate, null_z: float, last_alpha: float, max_rounds: int, higher_is_worse: bool
) -> str:
    """The early stop before 2026-11-26: a reach of one standard error, also past the budget."""
    if est.n >= max_rounds or not math.isfinite(est.se):
        return ""
    half_max = float(special.stdtrit(est.df + max_rounds - est.n, 1.0 - last_alpha)) * est.se
    half_max *= math.sqrt(est.n / max_rounds)
    threshold = math.log(budget.threshold)
    past = (1.0 if higher_is_worse else -1.0) * (est.center - threshold)
    return "undecidable" if half_max > abs(threshold - null_z) and past + est.se <= half_max else ""


def test_the_replay_can_fail_the_former_early_stop_let_cuts_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "undecidable_note", former_undecidable_note)
    assert red_share("cut") < 0.90
