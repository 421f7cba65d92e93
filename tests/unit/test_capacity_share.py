"""``rate="25%"`` (measure/capacity.py): the gate measures each side's closed-loop capacity
first and loads every side in open loop at that share of the lowest, with a note; a series
measured again soon after takes the capacity already measured; a bad share is a load-option
error naming the value."""

from __future__ import annotations

from dataclasses import replace

import pytest
from netperf_rounds import make_round

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import InvalidMeasurement
from pytest_netperf.measure.capacity import CapacityMemory
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.load_options import CapacityShare, LoadOptionError, check_load_option
from pytest_netperf.results.model import RoundResult
from pytest_netperf.verdict.status import Status

HEAD, REF = "http://10.0.0.2/", "http://10.0.0.3/"


class CapacityDriver:
    """Closed loop: the URL's capacity; open loop: the rate asked for. Records every shape."""

    name = "rust"
    cpus = None

    def __init__(self, capacity: dict[str, float]) -> None:
        self.capacity = capacity
        self.shapes: list[tuple[str, LoadShape]] = []

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.shapes.append((url, shape))
        rps = self.capacity[url] if shape.rate is None else shape.rate
        return make_round(rps=rps, url=url) if rps else replace(make_round(url=url), ok=0, achieved_rps=0.0)


def gate(
    driver: CapacityDriver, budget: str = "p50 < 100ms", capacities: CapacityMemory | None = None, name: str = "test"
) -> Gate:
    settings = GateSettings(rounds_min=2, rounds_max=2, round_duration_s=0.1, warmup_s=0.0, realtime=True)
    return Gate(
        f"t.py::{name}", [parse_budget(budget)], settings, driver_factory=lambda _n, _r: driver, capacities=capacities
    )


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def closed_loop_urls(driver: CapacityDriver) -> list[str]:
    return [url for url, s in driver.shapes if s.rate is None]


def test_a_share_of_the_lowest_capacity_loads_every_side_at_one_rate() -> None:
    driver = CapacityDriver({HEAD: 2000.0, REF: 3000.0})
    g = gate(driver, "p50 <= 1.5x reference")
    m = g.compare(HEAD, REF, rate="25%", connections=8)
    probes = [(url, s) for url, s in driver.shapes if s.rate is None]
    assert [url for url, _ in probes] == [HEAD, REF]
    assert all(s.connections == 8 and s.duration_s == 0.5 for _, s in probes)
    assert not any("realtime" in s.extra for _, s in probes), "a real-time closed loop would starve the target"
    assert all(s.extra.get("realtime") for _, s in driver.shapes if s.rate is not None)
    assert {s.rate for _, s in driver.shapes if s.rate is not None} == {500.0}
    assert m.candidate.shape.rate == m.reference.shape.rate == 500.0
    (outcome,) = g.finish()
    assert outcome.status is Status.PASS
    assert "rate=25% of the measured capacity: 500 requests/s open loop" in " ".join(outcome.notes)
    assert "candidate 2,000, reference 3,000" in " ".join(outcome.notes)


def test_a_side_that_answers_nothing_has_no_capacity_to_share() -> None:
    driver = CapacityDriver({HEAD: 0.0})
    with pytest.raises(InvalidMeasurement, match=r"capacity for rate=10%.*no successful response"):
        gate(driver).measure(HEAD, rate="10%")


def test_a_series_measured_again_soon_takes_the_capacity_already_measured() -> None:
    driver = CapacityDriver({HEAD: 2000.0, REF: 3000.0})
    clock = FakeClock()
    memory = CapacityMemory(max_age_s=120.0, now=clock)
    gate(driver, "p50 <= 1.5x reference", memory, "test_sweep").compare(HEAD, REF, rate="20%", connections=8, key="d3")
    assert closed_loop_urls(driver) == [HEAD, REF]
    clock.t += 45.0
    later = gate(driver, "p50 <= 1.5x reference", memory, "test_rates")
    m = later.compare(HEAD, REF, rate="40%", connections=8)
    assert closed_loop_urls(driver) == [HEAD, REF], "no second capacity run"
    assert m.candidate.shape.rate == 800.0  # exactly 2x the first test's 400/s
    assert "candidate 2,000 (measured 45 s before, by t.py::test_sweep [d3])" in m.rate_note


def test_a_capacity_is_measured_anew_when_old_or_for_another_shape() -> None:
    driver = CapacityDriver({HEAD: 2000.0, REF: 3000.0})
    clock = FakeClock()
    memory = CapacityMemory(max_age_s=120.0, now=clock)
    gate(driver, capacities=memory).measure(HEAD, rate="20%", connections=8)
    gate(driver, capacities=memory).measure(HEAD, rate="20%", connections=16)  # other connections
    clock.t += 121.0
    m = gate(driver, capacities=memory).measure(HEAD, rate="20%", connections=8)  # too old
    assert closed_loop_urls(driver) == [HEAD, HEAD, HEAD]
    assert "measured" not in m.rate_note.split("requests/s:")[1]


def test_without_a_memory_every_measurement_measures_its_capacity() -> None:
    driver = CapacityDriver({HEAD: 2000.0})
    gate(driver).measure(HEAD, rate="20%")
    gate(driver).measure(HEAD, rate="20%")
    assert closed_loop_urls(driver) == [HEAD, HEAD]


@pytest.mark.parametrize("given", ["25%", " 2.5 % ", "100%"])
def test_shares_parse(given: str) -> None:
    share = check_load_option("rate", "rate", given)
    assert isinstance(share, CapacityShare) and 0 < share.fraction <= 1


@pytest.mark.parametrize("given", ["0%", "150%", "fast", "25", "-5%"])
def test_a_bad_share_names_the_value(given: str) -> None:
    with pytest.raises(LoadOptionError, match=rf"rate={given!r}: expected a number of requests/s > 0, or a share"):
        check_load_option("rate", "rate", given)


def warming_gate(driver: CapacityDriver, name: str, capacities: CapacityMemory | None = None) -> Gate:
    """A gate whose first round warms up 1 s and every later round 0.1 s."""
    settings = GateSettings(
        rounds_min=2, rounds_max=2, round_duration_s=0.1, warmup_s=1.0, round_warmup_s=0.1, realtime=True
    )
    budgets = [parse_budget("p50 <= 1.5x reference")]
    return Gate(f"t.py::{name}", budgets, settings, driver_factory=lambda _n, _r: driver, capacities=capacities)


def test_a_capacity_run_warms_the_series_its_first_round_takes_the_round_warmup() -> None:
    driver = CapacityDriver({HEAD: 2000.0, REF: 3000.0})
    warming_gate(driver, "t").compare(HEAD, REF, rate="25%", connections=8)
    opened = [s.warmup_s for _, s in driver.shapes if s.rate is not None]
    assert opened == [0.1] * 4, "the capacity run warmed both sides: no round needs the first warmup"
    memory = CapacityMemory()
    warming_gate(driver, "t2", memory).compare(HEAD, REF, rate="25%", connections=8)
    driver.shapes.clear()
    warming_gate(driver, "t3", memory).compare(HEAD, REF, rate="50%", connections=8)
    firsts = [s.warmup_s for _, s in driver.shapes][:2]
    assert not [s for _, s in driver.shapes if s.rate is None], "the capacities were taken from memory"
    assert firsts == [1.0, 1.0], "a capacity taken from memory loaded nothing now: the first rounds warm up in full"
