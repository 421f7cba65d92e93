"""Pacing: per-user schedules, phase spread, catch-up and Poisson gaps."""

from __future__ import annotations

import random
import statistics
from types import SimpleNamespace

import pytest

from pytest_netperf import defaults
from pytest_netperf.drivers.locust.in_locust.pacing import ARRIVALS, Pacing


def test_the_workers_pacing_knows_every_arrival_the_gate_accepts() -> None:
    # the worker's copy exists because it runs without this package; it must not drift
    assert ARRIVALS == defaults.ARRIVALS


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run(wait, clock: ManualClock, user: SimpleNamespace, task_s: float, iterations: int) -> list[float]:
    """Simulate a user loop: task takes task_s, then sleeps what wait_time says; returns start times."""
    starts = []
    for _ in range(iterations):
        starts.append(clock.now)
        clock.now += task_s
        clock.now += wait(user)
    return starts


def test_constant_pacing_holds_the_rate_after_the_random_phase() -> None:
    clock = ManualClock()
    wait = Pacing(10.0, clock=clock, rng=random.Random(1)).wait_time
    starts = _run(wait, clock, SimpleNamespace(), task_s=0.01, iterations=50)
    gaps = [b - a for a, b in zip(starts[1:], starts[2:], strict=False)]
    assert all(gap == pytest.approx(0.1) for gap in gaps)
    assert 0.0 <= starts[1] - starts[0] - 0.01 <= 0.1  # the random initial phase


def test_users_get_independent_phases() -> None:
    clock = ManualClock()
    wait = Pacing(1.0, clock=clock, rng=random.Random(7)).wait_time
    first_waits = {round(wait(SimpleNamespace()), 6) for _ in range(20)}
    assert len(first_waits) == 20


def test_a_late_user_catches_up_without_waiting() -> None:
    clock = ManualClock()
    wait = Pacing(10.0, clock=clock, rng=random.Random(2)).wait_time
    user = SimpleNamespace()
    _run(wait, clock, user, task_s=0.01, iterations=3)
    clock.now += 0.5  # a stall of five periods
    assert wait(user) == 0.0
    assert wait(user) == 0.0


def test_counts_each_iteration() -> None:
    calls = []
    clock = ManualClock()
    wait = Pacing(100.0, on_iteration=lambda: calls.append(1), clock=clock).wait_time
    _run(wait, clock, SimpleNamespace(), task_s=0.001, iterations=25)
    assert len(calls) == 25


def test_poisson_gaps_have_the_requested_mean() -> None:
    clock = ManualClock()
    wait = Pacing(50.0, arrival="poisson", clock=clock, rng=random.Random(3)).wait_time
    starts = _run(wait, clock, SimpleNamespace(), task_s=0.0, iterations=4000)
    gaps = [b - a for a, b in zip(starts[1:], starts[2:], strict=False)]
    assert statistics.mean(gaps) == pytest.approx(0.02, rel=0.05)
    assert statistics.stdev(gaps) == pytest.approx(0.02, rel=0.1)


@pytest.mark.parametrize(("rate", "arrival"), [(0.0, "constant"), (-1.0, "constant"), (1.0, "burst")])
def test_rejects_bad_arguments(rate: float, arrival: str) -> None:
    with pytest.raises(ValueError):
        Pacing(rate, arrival=arrival)


def test_poisson_schedules_count_the_starts_they_intended() -> None:
    clock = ManualClock()
    pacing = Pacing(20.0, arrival="poisson", clock=clock, rng=random.Random(5))
    users = [SimpleNamespace(), SimpleNamespace()]
    wakes = {id(user): 0.0 for user in users}
    started, second, per_second = 0, 1.0, []
    while clock.now < 30.0:  # two punctual users, each woken at the start it waited for
        user = min(users, key=lambda u: wakes[id(u)])
        moment = wakes[id(user)]
        while second <= moment:  # read the schedules at every whole second in between
            clock.now = second
            per_second.append(pacing.intended_by(second))
            # each user's first start ran before it was paced: one more begun than intended
            assert per_second[-1] == started - 2
            second += 1.0
        clock.now = moment
        started += 1
        wakes[id(user)] = clock.now + pacing.wait_time(user)
    assert len(per_second) >= 29
    counts = {b - a for a, b in zip(per_second, per_second[1:], strict=False)}
    assert len(counts) > 3  # Poisson counts per second vary around 40


def test_a_late_user_stays_behind_its_intended_starts() -> None:
    clock = ManualClock()
    pacing = Pacing(10.0, clock=clock, rng=random.Random(2))
    user = SimpleNamespace()
    pacing.wait_time(user)
    clock.now = 1.0  # the first start was due before 0.1 s; nothing ran since
    assert pacing.intended_by(1.0) == 10
    assert pacing.intended_by(0.5) == 5


def test_set_on_a_user_class_it_receives_the_user() -> None:
    clock = ManualClock()
    pacing = Pacing(10.0, clock=clock, rng=random.Random(4))

    class User:
        wait_time = pacing.as_user_method()

    assert 0.0 <= User().wait_time() <= 0.1
    assert pacing.intended_by(0.1) == 1
