"""The warmup happens once per target: a series' first round gets the full warmup, every later
round only the short ``round_warmup_s`` its new connections need to settle."""

from __future__ import annotations

from netperf_rounds import make_round

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.results.model import RoundResult


class RecordingDriver:
    """Answers every round at the same throughput and keeps (url, warmup) of each run."""

    name = "rust"

    def __init__(self) -> None:
        self.runs: list[tuple[str, float]] = []

    cpus = None  # not pinned

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.runs.append((url, shape.warmup_s))
        return make_round(rps=1000.0 + len(self.runs) % 3, url=url)


def gate_with(driver: RecordingDriver, warmup_s: float, round_warmup_s: float, budget: str = "rps_loss <= 50%") -> Gate:
    settings = GateSettings(
        rounds_min=3, rounds_max=3, round_duration_s=0.1, warmup_s=warmup_s, round_warmup_s=round_warmup_s
    )
    return Gate("t.py::test", [parse_budget(budget)], settings, driver_factory=lambda name, runner: driver)


def test_each_series_warms_up_fully_once_then_settles_briefly() -> None:
    driver = RecordingDriver()
    g = gate_with(driver, warmup_s=2.0, round_warmup_s=0.25)
    g.compare("http://10.0.0.2/", reference="http://10.0.0.3/")
    g.compare("http://10.0.0.2/?depth=3", reference="http://10.0.0.3/?depth=3", key="depth=3")
    for url in {url for url, _ in driver.runs}:
        warmups = [w for u, w in driver.runs if u == url]
        assert warmups == [2.0, 0.25, 0.25], url


def test_the_round_warmup_never_exceeds_the_warmup() -> None:
    driver = RecordingDriver()
    gate_with(driver, 0.1, 0.25, budget="rps > 10").measure("http://10.0.0.2/")
    assert [w for _, w in driver.runs] == [0.1, 0.1, 0.1]
