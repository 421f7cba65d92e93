"""The sequential rounds stop on the same verdicts the test ends with: Holm's correction over a
test's budgets is applied at every look, so a FAIL that stopped the rounds early is never
turned INCONCLUSIVE afterwards with rounds left unmeasured."""

from __future__ import annotations

import random

from netperf_rounds import make_round

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.results.model import RoundResult
from pytest_netperf.verdict.status import Status

BUDGETS = ["rps >= 0.9x reference", "rps_loss <= 10%", "p99 <= 1.5x reference"]


class NoisyDriver:
    """The candidate serves ``shift`` times the reference's throughput, with per-round noise."""

    name = "rust"

    def __init__(self, seed: int, shift: float) -> None:
        self.rng, self.shift = random.Random(seed), shift

    cpus = None  # not pinned

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        level = self.shift if "candidate" in url else 1.0
        return make_round(rps=1000.0 * level * self.rng.lognormvariate(0.0, 0.08), url=url)


def test_no_budget_ends_inconclusive_with_rounds_left() -> None:
    settings = GateSettings(rounds_min=4, rounds_max=12, round_duration_s=0.1, warmup_s=0.0)
    ended_early_failing = 0
    for seed in range(60):
        driver = NoisyDriver(seed, shift=0.83)
        gate = Gate(
            "t.py::test", [parse_budget(b) for b in BUDGETS], settings, driver_factory=lambda name, runner, d=driver: d
        )
        m = gate.compare("http://candidate/", "http://reference/")
        rounds = len(m.candidate.rounds)
        for outcome in gate.finish():
            if outcome.status is Status.INCONCLUSIVE and rounds < settings.rounds_max:
                # stopped early only because this runner cannot decide it, and says so
                assert outcome.verdict is not None and outcome.verdict.undecidable, (seed, outcome.budget.text)
                assert any("cannot be decided on this runner" in n for n in outcome.notes), outcome.notes
            if outcome.status is Status.FAIL and rounds < settings.rounds_max:
                ended_early_failing += 1
    assert ended_early_failing > 0  # the early stop on a FAIL was exercised
