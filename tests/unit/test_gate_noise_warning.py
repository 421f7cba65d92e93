"""Before measuring, the gate says which budgets this machine's stored noise floor cannot decide."""

from __future__ import annotations

from netperf_rounds import make_round

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.verdict.calibration import estimate_noise


def noisy_pairs(spread: float, n: int = 12) -> tuple[list, list]:
    """A/A rounds whose throughput swings by about ``spread`` from round to round."""
    swing = [1 + spread * ((i * 7) % 5 - 2) / 2 for i in range(n)]
    a = [make_round(rps=10_000.0 * swing[i], seed=i) for i in range(n)]
    b = [make_round(rps=10_000.0 * swing[(i + 2) % n], seed=100 + i) for i in range(n)]
    return a, b


def gate(budgets: list[str], noise: object) -> Gate:
    return Gate(
        "t.py::test",
        [parse_budget(text) for text in budgets],
        GateSettings(rounds_min=5, rounds_max=15),
        driver_factory=lambda name, runner: None,
        noise=noise,
    )


def test_a_budget_tighter_than_the_noise_is_named_before_measuring() -> None:
    noise = estimate_noise(*noisy_pairs(0.15))
    warnings = gate(["rps_loss <= 1%", "rps_loss <= 90%", "errors == 0"], noise).noise_warnings()
    assert len(warnings) == 1
    assert warnings[0].startswith("before measuring, 'rps_loss <= 1%' at 15 rounds:")


def test_no_noise_floor_no_warning() -> None:
    assert gate(["rps_loss <= 1%"], None).noise_warnings() == []
