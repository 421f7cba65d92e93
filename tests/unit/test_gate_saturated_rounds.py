"""A round whose load driver was saturated is measured again (a passing disturbance of a shared
machine); a driver saturated on every attempt makes the test INVALID, never PASS or FAIL."""

from __future__ import annotations

from dataclasses import replace

import pytest
from netperf_rounds import make_round

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import InvalidMeasurement
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.results.model import RoundResult
from pytest_netperf.verdict.status import Status


class LaggingDriver:
    """Saturated on the runs whose (1-based) numbers are in ``saturated``."""

    name = "rust"

    def __init__(self, saturated: set[int]) -> None:
        self.saturated, self.calls = saturated, 0

    cpus = None  # not pinned

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.calls += 1
        result = make_round(rps=1000.0 + self.calls % 2, url=url)
        if self.calls in self.saturated:
            health = replace(result.client, saturated=True, saturation_reasons=["schedule lag p99 14180 us"])
            result = replace(result, client=health)
        return result


def gate_with(driver: LaggingDriver) -> Gate:
    settings = GateSettings(rounds_min=3, rounds_max=3, round_duration_s=0.1, warmup_s=0.0, saturated_retries=2)
    return Gate("t.py::test", [parse_budget("rps > 10")], settings, driver_factory=lambda name, runner: driver)


def test_a_round_saturated_once_is_measured_again_and_noted() -> None:
    driver = LaggingDriver(saturated={2})
    g = gate_with(driver)
    g.measure("http://10.0.0.2/")
    (outcome,) = g.finish()
    assert outcome.status is Status.PASS and outcome.verdict.n_rounds == 3
    assert driver.calls == 4
    assert any("(round 2) measured again: the load driver was saturated" in note for note in outcome.notes)


def test_a_driver_saturated_on_every_attempt_invalidates_the_test() -> None:
    driver = LaggingDriver(saturated={2, 3, 4})
    with pytest.raises(InvalidMeasurement, match=r"round 2\): the load driver was saturated.* in 3 attempts"):
        gate_with(driver).measure("http://10.0.0.2/")
    assert driver.calls == 4
