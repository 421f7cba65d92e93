"""The tunables of a gate, defined once: the session's
:class:`~pytest_netperf.settings.Settings` extends :class:`GateSettings`.

Kept apart from the gate (no numpy, no scipy): the settings module, and so the CLI inside
the Locust worker image, import it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from pytest_netperf import defaults


@dataclass(frozen=True)
class GateSettings:
    """The tunables a gate needs. The session's :class:`~pytest_netperf.settings.Settings`
    extends this class, so each is defined once; a gate gets :meth:`gate_view` of them."""

    rounds_min: int = defaults.ROUNDS_MIN
    rounds_max: int = defaults.ROUNDS_MAX
    round_batch: int = defaults.ROUND_BATCH
    round_duration_s: float = defaults.ROUND_DURATION_S
    warmup_s: float = defaults.WARMUP_S
    #: Warmup of every round after a series' first (never longer than ``warmup_s``).
    round_warmup_s: float = defaults.ROUND_WARMUP_S
    confidence: float = defaults.CONFIDENCE
    inconclusive: str = defaults.INCONCLUSIVE  # verdict/policy.py POLICIES
    #: How the sides of a comparison share the runner's time (measure/design.py DESIGNS).
    design: str = defaults.DESIGN
    calibrate: bool = False
    max_lag_ms: float = defaults.MAX_LAG_MS
    realtime: bool = False
    #: A round whose driver was saturated is measured again this many times, then INVALID.
    saturated_retries: int = defaults.SATURATED_ROUND_RETRIES
    #: The counting pass: requests of its larger count (the smaller is a fifth), repetitions of
    #: the pair, and the time bound of one counted run.
    counting_requests: int = defaults.COUNTING_REQUESTS
    counting_repetitions: int = defaults.COUNTING_REPETITIONS
    counting_time_limit_s: float = defaults.COUNTING_TIME_LIMIT_S

    def gate_view(self, **overrides: Any) -> GateSettings:
        """These settings as a gate sees them (only the gate's fields), with ``overrides``
        (a test's marker options) applied."""
        values = {f.name: getattr(self, f.name) for f in fields(GateSettings)}
        values.update(overrides)
        return GateSettings(**values)
