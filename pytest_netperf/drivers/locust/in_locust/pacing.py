"""Rate pacing for Locust users: an approximation of open-loop load.

Each paced user keeps its own schedule of intended start times (constant gaps, or
exponential gaps for Poisson arrivals) with a random initial phase, so N users together
send about ``rate`` task iterations per second.  A user that falls behind starts its next
iteration at once and catches up; it never sends more than one request at a time, so a
slow target still lowers the achieved rate (Locust cannot send at intended times the way
the Rust driver does; latency is measured from the actual send).

The schedules are kept, so a window can be judged against the starts they intended in it
(:meth:`Pacing.intended_by`): with Poisson gaps that count varies by about its square root
from ``rate * duration``, which no rate check may mistake for a slow driver.
"""

from __future__ import annotations

import random
import time
from collections import deque
from typing import Any, Callable, Optional

ARRIVALS = ("constant", "poisson")


class UserSchedule:
    """One user's intended start times: a first one, then gaps drawn ahead on demand."""

    def __init__(self, first: float, gap: Callable[[], float]) -> None:
        self._gap = gap
        self._pending: deque[float] = deque([first])
        self._drawn = 1
        self._last = first
        self._handed_out: Optional[float] = None

    def _draw(self) -> None:
        self._last += self._gap()
        self._pending.append(self._last)
        self._drawn += 1

    def next_start(self) -> float:
        """The next intended start time (each one is handed out once)."""
        if not self._pending:
            self._draw()
        self._handed_out = self._pending.popleft()
        return self._handed_out

    def intended_by(self, moment: float) -> int:
        """How many start times of this schedule fall at or before ``moment``: the present
        or later, as a window's clock reads it (of the starts handed out, only the last,
        one a user may still be waiting for, is remembered)."""
        while self._last <= moment:
            self._draw()
        later = sum(1 for start in self._pending if start > moment)
        awaited = self._handed_out is not None and self._handed_out > moment
        return self._drawn - later - int(awaited)


class Pacing:
    """Paces every user of a round at ``per_user_rate`` iterations/s.

    ``on_iteration`` is called once per finished task iteration (the achieved-rate count).
    """

    def __init__(
        self,
        per_user_rate: float,
        arrival: str = "constant",
        on_iteration: Optional[Callable[[], None]] = None,
        clock: Callable[[], float] = time.monotonic,
        rng: Optional[random.Random] = None,
    ) -> None:
        if per_user_rate <= 0:
            raise ValueError("per_user_rate must be positive")
        if arrival not in ARRIVALS:
            raise ValueError(f"arrival must be one of {ARRIVALS}, not {arrival!r}")
        self._rate = per_user_rate
        self._arrival = arrival
        self._on_iteration = on_iteration
        self._clock = clock
        self._draw = rng or random.Random()
        self._schedules: list[UserSchedule] = []

    def _gap(self) -> float:
        return self._draw.expovariate(self._rate) if self._arrival == "poisson" else 1.0 / self._rate

    def _schedule_of(self, user: Any, now: float) -> UserSchedule:
        owned = getattr(user, "_netperf_schedule", None)
        if owned is not None and owned[0] is self:
            return owned[1]
        schedule = UserSchedule(now + self._draw.random() / self._rate, self._gap)
        self._schedules.append(schedule)
        user._netperf_schedule = (self, schedule)
        return schedule

    def wait_time(self, user: Any) -> float:
        """Seconds until ``user``'s next intended start (0 when it is behind)."""
        now = self._clock()
        if self._on_iteration is not None:
            self._on_iteration()
        return max(0.0, self._schedule_of(user, now).next_start() - now)

    def as_user_method(self) -> Callable[[Any], float]:
        """:meth:`wait_time` as a plain function, to set as a User class's ``wait_time``
        (a bound method would not receive the user)."""

        def wait_time(user: Any) -> float:
            return self.wait_time(user)

        return wait_time

    def intended_by(self, moment: float) -> int:
        """Intended starts of every user at or before ``moment`` (the present; see
        :meth:`UserSchedule.intended_by`)."""
        return sum(schedule.intended_by(moment) for schedule in self._schedules)
