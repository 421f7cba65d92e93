"""The injection calibration of ``benchmarks/gate_power.py`` (its pure step, ``next_burn``):
from the (burn, measured effect) pairs tried so far, the burn that should move the metric by
the injected 5%. On an Intel Xeon VM three tries of a P90 spin read +8.1%, +10.7% and +10.0%
at 4.72, 2.91 and 5.81 us; the fallback of a falling line then doubled the burn to 12.6 us,
which the gates read as +25% rather than +5%."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))  # gate_power imports its sibling _neighbour
    try:
        spec = importlib.util.spec_from_file_location("gate_power", BENCHMARKS / "gate_power.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


gate_power = _load()
next_burn = gate_power.next_burn


def test_a_first_try_scales_the_burn_to_the_injected_effect() -> None:
    assert next_burn([(4.0, 0.10)], 4.0) == pytest.approx(2.0)


def test_a_rising_line_is_crossed_at_the_injected_effect() -> None:
    # effect = 0.01 + 0.02 x burn: 5% at 2 us
    assert next_burn([(1.0, 0.03), (3.0, 0.07)], 3.0) == pytest.approx(2.0)


def test_a_falling_line_of_noisy_tries_is_replaced_by_the_line_through_the_origin() -> None:
    tried = [(4.72, 0.081), (2.907, 0.107), (5.814, 0.100)]
    burn = next_burn(tried, 5.814)
    assert 2.0 < burn < 3.0, burn  # not 11.6 (twice the last try)
    assert burn < min(b for b, _ in tried)  # every try overshot 5%: go below them all


def test_no_effect_at_all_doubles_the_burn() -> None:
    assert next_burn([(1.0, -0.01)], 1.0) == pytest.approx(2.0)
    assert next_burn([(1.0, 0.0), (2.0, 0.0)], 2.0) == pytest.approx(4.0)
