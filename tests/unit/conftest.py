"""Unit tests run pure code: a gate's rounds come from fake drivers, so the real machine's
state (the other xdist worker, a neighbour on a busy CI runner) must not reach them."""

from __future__ import annotations

import itertools
import time

import pytest

from pytest_netperf.measure import runner_watch
from pytest_netperf.runtime.machine_load import CpuTicks, MachineSample

#: Clock ticks a quiet sample advances by: every CPU idle.
_IDLE_TICKS = 100


def quiet_runner_sampler() -> runner_watch.Sampler:
    """Samples of a quiet 2-core runner: time passes, the CPUs idle, nothing else runs, no
    steal; what the fake driver and stack report is all the runner did."""
    reads = itertools.count(1)

    def sample() -> MachineSample:
        n = next(reads)
        ticks = CpuTicks(0, 0, 0, n * _IDLE_TICKS, 0, 0, 0, 0, cores=2)
        return MachineSample(at=time.monotonic(), wall=time.time(), cpu=ticks, load_1m=0.0, task_ns=None)

    return sample


@pytest.fixture(autouse=True)
def quiet_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate reads a quiet runner around each round, not this machine's counters: beside the
    busy neighbour and the other test worker, a gate with a fake driver found its rounds
    "measured while the runner was busy" and a CI run's unit test did not see the early stop on
    a FAIL it tests. A test of the runner's state gives its rounds their own."""
    monkeypatch.setattr(runner_watch, "read_sample", quiet_runner_sampler())
    monkeypatch.setattr(runner_watch, "IDLE_WATCH_S", 0.0)  # the quiet runner needs no watching
