"""Periodic work in the counting pass (issue #41): DNS re-resolution, health checks and stats
flushes scale with the time a counted server runs, not with its requests. The pass gives the
smaller count as long a life as the larger one, from the moment the server listens to its
stop, so that work cancels whatever the start-up and idle waits of the two clones took."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from netperf_rounds import make_round

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.counting_pass import Clock, CountingPlan, run_counting_pass
from pytest_netperf.results.counted import CountedRun
from pytest_netperf.results.model import RoundResult

PER_REQUEST = 20_000.0
#: a resolver firing every second under valgrind: 200k instructions per second of life
PERIODIC_PER_S = 200_000.0
#: seconds each clone waits, after it listens, until its processes are idle (they vary a lot
#: when a resolver keeps waking the server up)
IDLE_WAITS = itertools.cycle([0.5, 4.0, 3.0, 0.5, 1.0, 2.5, 6.0])


class _Time:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.t += seconds


class _TimerServer:
    """A server with periodic work: its count is start-up + requests + periodic work over its life."""

    node = "haproxy"

    def __init__(self, time: _Time) -> None:
        self.time = time
        self.spans: list[tuple[int, float]] = []

    def prepare(self) -> None:
        pass

    @contextmanager
    def clone(self, tool: str, time_limit_s: float) -> Iterator[_Clone]:
        self.time.t += 7.0  # start-up under valgrind, until the port accepts a connection
        clone = _Clone(self, self.time.t)
        self.time.t += next(IDLE_WAITS)
        yield clone


class _Clone:
    address = "10.0.0.9:80"

    def __init__(self, server: _TimerServer, ready_at: float) -> None:
        self.server = server
        self.ready_at = ready_at

    def counts(self, requests: int) -> CountedRun:
        life = self.server.time.t - self.ready_at
        self.server.spans.append((requests, life))
        total = 5e6 + PER_REQUEST * requests + PERIODIC_PER_S * life
        return CountedRun("instructions", requests, total, {})


def test_periodic_work_cancels_whatever_the_idle_waits_took() -> None:
    time = _Time()
    server = _TimerServer(time)

    def run(url: str, shape: LoadShape) -> RoundResult:
        requests = int(shape.extra["requests"])
        rate = shape.rate or 400.0  # as fast as the counted server answers: 400 requests/s
        time.t += requests / rate
        return make_round(rps=requests / 5, url=url)

    plan = CountingPlan(low=200, high=1000, repetitions=3, time_limit_s=300.0)
    clock = Clock(now=time.now, sleep=time.sleep)
    costs = run_counting_pass(server, ["instructions"], run, "http://h:80/", LoadShape(), plan, clock=clock)
    cost = costs["instructions"]
    assert cost.per_request == pytest.approx((PER_REQUEST,) * 3, rel=1e-9)
    # the second low run waited 4 s to be idle, longer than the first high run lived (3 s):
    # a high run was counted again, made to live as long
    assert len(server.spans) > 6
