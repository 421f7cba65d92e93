"""The ``netperf`` marker: budgets as positional arguments, per-test options as keywords.

Both are checked at collection, so a malformed budget or a bad keyword fails there,
naming the test and the text, before anything is measured.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest

from pytest_netperf.budget.grammar import Budget, coerce_budget
from pytest_netperf.drivers import HTTP_DRIVER_NAMES
from pytest_netperf.errors import MarkerError
from pytest_netperf.measure.design import DESIGNS
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.settings import INCONCLUSIVE_POLICIES, Settings, check_rounds, to_float, to_int

MARKER = "netperf"
MARKER_HELP = (
    "netperf(*budgets, driver=None, rounds=None, max_rounds=None, duration=None, warmup=None, "
    "inconclusive=None, design=None, locustfile=None, user_class=None): "
    "a network performance gate; budgets like 'rps_loss <= 10%', 'p90 < 1ms', 'p99 <= 1.2x baseline'"
)


@dataclass(frozen=True)
class MarkerOptions:
    """The marker's keyword arguments, validated; ``None`` means the session setting."""

    driver: Optional[str] = None
    rounds: Optional[int] = None
    max_rounds: Optional[int] = None
    duration: Optional[float] = None
    warmup: Optional[float] = None
    inconclusive: Optional[str] = None
    design: Optional[str] = None
    locustfile: Optional[str] = None
    user_class: Optional[str] = None

    def gate_settings(self, settings: Settings) -> GateSettings:
        """The gate's settings: these options over the session's."""
        rounds_min = self.rounds if self.rounds is not None else settings.rounds_min
        if self.max_rounds is not None:
            # max_rounds=3 alone caps the session's rounds_min (5) instead of contradicting it
            rounds_min = min(rounds_min, self.max_rounds) if self.rounds is None else rounds_min
            rounds_max = self.max_rounds
        else:
            rounds_max = max(settings.rounds_max, rounds_min)
        return settings.gate_view(
            rounds_min=rounds_min,
            rounds_max=rounds_max,
            round_duration_s=self.duration if self.duration is not None else settings.round_duration_s,
            warmup_s=self.warmup if self.warmup is not None else settings.warmup_s,
            inconclusive=self.inconclusive or settings.inconclusive,
            design=self.design or settings.design,
        )

    def locustfile_path(self, test_dir: Path) -> Optional[Path]:
        """The locustfile, relative to the test file's folder like fixture data."""
        if self.locustfile is None:
            return None
        path = Path(self.locustfile)
        return path if path.is_absolute() else test_dir / path


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "driver": str,
    "rounds": to_int,
    "max_rounds": to_int,
    "duration": to_float,
    "warmup": to_float,
    "inconclusive": str,
    "design": str,
    "locustfile": str,
    "user_class": str,
}


def marker_budgets(item: pytest.Item) -> list[Budget]:
    """Every budget of every ``netperf`` marker on ``item`` (text or Budget objects)."""
    return [coerce_budget(arg) for mark in item.iter_markers(MARKER) for arg in mark.args]


def marker_options(item: pytest.Item) -> MarkerOptions:
    """The keyword arguments (the closest marker wins), validated; MarkerError names the bad one."""
    kwargs: dict[str, Any] = {}
    for mark in reversed(list(item.iter_markers(MARKER))):
        kwargs.update(mark.kwargs)
    unknown = sorted(set(kwargs) - set(_CONVERTERS))
    if unknown:
        raise MarkerError(
            f"unknown netperf marker argument(s): {', '.join(unknown)}; expected {', '.join(sorted(_CONVERTERS))}"
        )
    values: dict[str, Any] = {}
    for name, value in kwargs.items():
        if value is None:
            continue
        try:
            values[name] = _CONVERTERS[name](value)
        except (TypeError, ValueError) as exc:
            raise MarkerError(f"netperf marker argument {name}={value!r}: {exc}") from None
    options = MarkerOptions(**values)
    _check(options)
    return options


def _check(options: MarkerOptions) -> None:
    def fail(name: str, problem: str) -> None:
        raise MarkerError(f"netperf marker argument {name}={getattr(options, name)!r}: {problem}")

    if options.driver is not None and options.driver not in HTTP_DRIVER_NAMES:
        fail("driver", f"expected one of {', '.join(HTTP_DRIVER_NAMES)}")
    if options.inconclusive is not None and options.inconclusive not in INCONCLUSIVE_POLICIES:
        fail("inconclusive", f"expected one of {', '.join(INCONCLUSIVE_POLICIES)}")
    if options.design is not None and options.design not in DESIGNS:
        fail("design", f"expected one of {', '.join(DESIGNS)}")
    if options.rounds is not None and options.rounds < 2:
        fail("rounds", "needs at least 2 rounds for a confidence interval")
    if options.max_rounds is not None:
        try:
            check_rounds(options.rounds or 2, options.max_rounds)
        except ValueError:
            fail("max_rounds", f"must be >= rounds ({options.rounds or 2})")
    if options.duration is not None and not options.duration > 0:
        fail("duration", "a round lasts more than 0 s")
    if options.warmup is not None and not options.warmup >= 0:
        fail("warmup", "a warmup lasts 0 s or more")
