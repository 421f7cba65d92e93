"""A test whose budgets are all counted (instructions, system calls) runs only
``defaults.COUNTED_ONLY_ROUNDS`` timed rounds: they check that the target answers without
errors; the counting pass judges the budgets. A timed budget beside them keeps the
sequential procedure's rounds."""

from __future__ import annotations

from netperf_rounds import make_round

from pytest_netperf import defaults
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.results.model import RoundResult

URL = "http://10.0.0.2/"


class CountingRunsDriver:
    """Answers every run with the same round and counts the runs."""

    name = "rust"
    cpus = None

    def __init__(self) -> None:
        self.calls = 0

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.calls += 1
        return make_round(rps=1000.0, url=url)


def measured_rounds(*budgets: str, rounds: int | None = None) -> int:
    driver = CountingRunsDriver()
    settings = GateSettings(rounds_min=5, rounds_max=15, round_duration_s=0.1, warmup_s=0.0)
    gate = Gate("t.py::test", [parse_budget(b) for b in budgets], settings, driver_factory=lambda n, r: driver)
    m = gate.measure(URL, rounds=rounds)
    assert driver.calls == len(m.candidate.rounds)
    return len(m.candidate.rounds)


def test_counted_budgets_alone_run_the_fewest_timed_rounds() -> None:
    assert defaults.COUNTED_ONLY_ROUNDS == 2
    assert measured_rounds("instructions_per_request[gw] <= 30k", "syscalls_per_request[gw] <= 8") == 2


def test_a_timed_budget_beside_counted_ones_keeps_the_sequential_rounds() -> None:
    assert measured_rounds("instructions_per_request[gw] <= 30k", "rps >= 10") == 5


def test_rounds_given_by_the_test_are_kept_for_counted_budgets() -> None:
    assert measured_rounds("instructions_per_request[gw] <= 30k", rounds=4) == 4
