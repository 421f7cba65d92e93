"""The counting pass profiles call stacks (a callgrind pair, its longest run) only for a budget
that can have the report's picture: instructions judged against a side measured in this run.
An absolute budget, or one against a stored baseline, gets no picture, so no profile."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from netperf_rounds import make_round

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.counting_pass import CountingPlan
from pytest_netperf.measure.counting_step import CountingStep
from pytest_netperf.measure.model import Measurement, Series
from pytest_netperf.results.counted import STACKS, CountedRun
from pytest_netperf.results.model import RoundResult


class _Counter:
    """Counts 18,000 instructions and 7 system calls a request; remembers the tools it ran."""

    node = "gw"
    address = "10.0.0.9:80"
    ready_at = 0.0

    def __init__(self) -> None:
        self.tools: list[str] = []

    def prepare(self) -> None:
        pass

    @contextmanager
    def clone(self, tool: str, time_limit_s: float) -> Iterator[_Clone]:
        self.tools.append(tool)
        yield _Clone(tool)


class _Clone:
    address = "10.0.0.9:80"
    ready_at = 0.0

    def __init__(self, tool: str) -> None:
        self.tool = tool

    def counts(self, requests: int) -> CountedRun:
        per_request = 7.0 if self.tool == "syscalls" else 18_000.0
        stacks = {"main;serve": per_request * requests} if self.tool == STACKS else {}
        return CountedRun(self.tool, requests, 9_000 + per_request * requests, {}, stacks=stacks)


class _Driver:
    def run(self, url: str, shape: LoadShape) -> RoundResult:
        return make_round(rps=int(shape.extra["requests"]) / 5, url=url)


def _series(label: str, counter: _Counter) -> Series:
    return Series(
        label,
        "http://172.18.0.3:80/",
        "gw",
        "rust",
        LoadShape(),
        driver_instance=_Driver(),
        counter=counter,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("budget", "with_reference", "profiled"),
    [
        ("instructions_per_request[gw] <= 30k", False, False),
        ("instructions_per_request[gw] <= 1.02x baseline", False, False),  # a stored baseline: no picture
        ("syscalls_per_request[gw] <= 1.0x reference", True, False),  # system calls have no stacks
        ("instructions_per_request[gw] <= 1.01x reference", True, True),
    ],
)
def test_stacks_are_profiled_only_for_a_budget_the_report_can_picture(
    budget: str, with_reference: bool, profiled: bool
) -> None:
    candidate_counter, reference_counter = _Counter(), _Counter()
    m = Measurement(
        "default",
        _series("candidate", candidate_counter),
        reference=_series("reference", reference_counter) if with_reference else None,
    )
    step = CountingStep("t.py::test_gw", [parse_budget(budget)], CountingPlan(20, 100, 1, 60.0, stacks=True), print)
    assert step.pictured(m) is profiled
    step.run(m)
    assert (STACKS in candidate_counter.tools) is profiled
    assert (STACKS in reference_counter.tools) is (profiled and with_reference)
    counted = next(iter(m.candidate.counted.values()))["gw"]
    assert bool(counted.stacks) is profiled
