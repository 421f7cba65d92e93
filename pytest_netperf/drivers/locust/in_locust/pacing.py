"""Rate pacing for Locust users: an approximation of open-loop load.

Each paced user keeps its own schedule of intended start times (constant gaps, or
exponential gaps for Poisson arrivals) with a random initial phase, so N users together
send about ``rate`` task iterations per second.  A user that falls behind starts its next
iteration at once and catches up; it never sends more than one request at a time, so a
slow target still lowers the achieved rate (Locust cannot send at intended times the way
the Rust driver does; latency is measured from the actual send).
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Optional

ARRIVALS = ("constant", "poisson")


def paced_wait_time(
    per_user_rate: float,
    arrival: str = "constant",
    on_iteration: Optional[Callable[[], None]] = None,
    clock: Callable[[], float] = time.monotonic,
    rng: Optional[random.Random] = None,
) -> Callable[[Any], float]:
    """Return a Locust ``wait_time`` function pacing each user at ``per_user_rate``/s.

    ``on_iteration`` is called once per finished task iteration (the achieved-rate count).
    """
    if per_user_rate <= 0:
        raise ValueError("per_user_rate must be positive")
    if arrival not in ARRIVALS:
        raise ValueError(f"arrival must be one of {ARRIVALS}, not {arrival!r}")
    period = 1.0 / per_user_rate
    draw = rng or random.Random()

    def gap() -> float:
        return draw.expovariate(per_user_rate) if arrival == "poisson" else period

    def wait_time(user: Any) -> float:
        now = clock()
        if on_iteration is not None:
            on_iteration()
        intended = getattr(user, "_netperf_next_start", None)
        intended = now + draw.random() * period if intended is None else intended + gap()
        user._netperf_next_start = intended
        return max(0.0, intended - now)

    return wait_time
