"""Fixed-rate rounds use Poisson gaps by default, each side and round with a schedule of its
own (two sides loaded at once with one constant phase against each other for a whole round
measured P90 24-43% apart), and the same schedules on every run."""

from __future__ import annotations

from netperf_rounds import make_round

from pytest_netperf import defaults
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.results.model import RoundResult


class RecordingDriver:
    """Answers every round alike and keeps the shape of each run."""

    name = "rust"
    cpus = None  # not pinned

    def __init__(self) -> None:
        self.shapes: list[tuple[str, LoadShape]] = []

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.shapes.append((url, shape))
        return make_round(rps=1000.0 + len(self.shapes) % 3, url=url)


def compared(driver: RecordingDriver, design: str = "alternate", **load: object) -> None:
    settings = GateSettings(rounds_min=4, rounds_max=4, round_duration_s=0.1, warmup_s=0.1, design=design)
    gate = Gate("t.py::test", [parse_budget("rps_loss <= 50%")], settings, driver_factory=lambda n, r: driver)
    gate.compare("http://10.0.0.2/", reference="http://10.0.0.3/", **load)


def test_fixed_rate_rounds_default_to_poisson_with_a_seed_per_side_and_round() -> None:
    assert defaults.ARRIVAL == "poisson"
    for design in ("alternate", "simultaneous"):
        driver = RecordingDriver()
        compared(driver, design, rate=500)
        assert {shape.arrival for _, shape in driver.shapes} == {"poisson"}
        seeds = [shape.extra["seed"] for _, shape in driver.shapes]
        assert len(seeds) == 8 and len(set(seeds)) == 8, seeds


def test_the_schedules_are_the_same_on_every_run() -> None:
    first, second = RecordingDriver(), RecordingDriver()
    compared(first, rate=500)
    compared(second, rate=500)
    assert [(u, s.extra["seed"]) for u, s in first.shapes] == [(u, s.extra["seed"]) for u, s in second.shapes]


def test_constant_gaps_and_closed_loops_get_no_seed() -> None:
    for load in ({"rate": 500, "arrival": "constant"}, {"connections": 4}):
        driver = RecordingDriver()
        compared(driver, **load)
        assert all("seed" not in shape.extra for _, shape in driver.shapes), load


def test_the_rust_driver_is_told_the_gaps_and_the_seed() -> None:
    shape = LoadShape(rate=500.0, extra={"seed": 77})
    argv = RustDriver().argv("http://10.0.0.2/", shape)
    assert argv[argv.index("--arrival") + 1] == "poisson"
    assert argv[argv.index("--seed") + 1] == "77"
    assert "poisson arrivals" in shape.describe_request("http://10.0.0.2/")
