"""Recorded real A/A rounds replayed through the default verdict: an unchanged stack stays green.

The recordings hold paired rounds of unchanged targets measured on the 2-core development
machine by ``benchmarks/record_aa_rounds.py`` (echo servers at a fixed 2000 rps for CPU per
request and P90; closed loop for throughput): ``data/aa_rounds.json`` in alternating rounds
with constant gaps (the former default schedule, the noisier data), and
``data/aa_rounds_poisson.json`` with both sides loaded at once and Poisson gaps (what a
pull request's head and base twin get by default). Each simulated gate
draws its rounds as a moving-block bootstrap of the recording (blocks of consecutive
pairs from random offsets, so the drift and the correlation of neighbouring rounds stay),
runs the real sequential procedure with the default plan and judges the final
INCONCLUSIVE with the default policy, at a budget 2.5% from no change: the tight budget
that turned about one unchanged gate in four red under the former ``estimate`` policy.

400 gates per metric and recording: a red rate near 5% has a sampling error of about 1.1 points.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from block_replay import replayed_gates

from pytest_netperf import defaults
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.verdict.sequential import SequentialPlan

RECORDINGS = ("aa_rounds.json", "aa_rounds_poisson.json")
GATES = 400
BLOCK = 5
#: metric -> (recorded set, budget 2.5% from no change)
CASES = {
    "cpu_per_request[echo]": ("open", "cpu_per_request[echo] <= 1.025x reference"),
    "p90": ("open", "p90 <= 1.025x reference"),
    "rps": ("closed", "rps >= 0.975x reference"),
}


@functools.cache
def recording(file: str) -> dict:
    """One recorded set of A/A rounds (read once)."""
    return json.loads((Path(__file__).parent / "data" / file).read_text())


def red_rate(file: str, metric: str, policy: str, seed: int = 7) -> tuple[float, float, float]:
    """Share of replayed A/A gates that end red, its standard error, and the mean rounds."""
    name, text = CASES[metric]
    budget = parse_budget(text)
    recorded = recording(file)["sets"][name]["metrics"][metric]
    cand, ref = np.asarray(recorded["candidate"]), np.asarray(recorded["reference"])
    starts = range(cand.size - BLOCK + 1)
    rate, rounds = replayed_gates(
        budget, cand, ref, starts, plan=SequentialPlan(), policy=policy, gates=GATES, block=BLOCK, seed=seed
    )
    return rate, math.sqrt(max(rate * (1 - rate), 1e-9) / GATES), rounds


@pytest.mark.parametrize("file", RECORDINGS)
@pytest.mark.parametrize("metric", list(CASES))
def test_unchanged_stacks_stay_green_with_the_default_policy(file: str, metric: str) -> None:
    rate, error, rounds = red_rate(file, metric, defaults.INCONCLUSIVE)
    assert rate <= 0.05, (
        f"{file} {metric}: {rate:.1%} ± {error:.1%} of {GATES} replayed A/A gates red ({rounds:.1f} rounds)"
    )


def test_the_replay_can_fail_the_former_default_turned_unchanged_gates_red() -> None:
    rates = {metric: red_rate(RECORDINGS[0], metric, "estimate")[0] for metric in CASES}
    assert max(rates.values()) > 0.05, rates
