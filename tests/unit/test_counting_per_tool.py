"""A counting pass counts each tool on its own: when one tool cannot count, the budgets of the
other are still judged, and the failed one's note names its own metric and tool (issue #41:
the system calls budget repeated the instructions message)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from netperf_rounds import make_round

from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.counting_pass import CountingPlan
from pytest_netperf.measure.counting_step import CountingStep
from pytest_netperf.measure.model import Measurement, Series
from pytest_netperf.results.counted import CountedRun
from pytest_netperf.results.model import RoundResult
from pytest_netperf.verdict.status import Status

INSTRUCTIONS = "instructions_per_request[gw] <= 30k"
SYSCALLS = "syscalls_per_request[gw] <= 20"


class _WorkersNotTraced:
    """valgrind counts start-up only (0 per request); strace counts 7 calls per request."""

    node = "gw"
    address = "10.0.0.9:80"
    ready_at = 0.0

    def prepare(self) -> None:
        pass

    @contextmanager
    def clone(self, tool: str, time_limit_s: float) -> Iterator[_WorkersNotTraced]:
        self.tool = tool
        yield self

    def counts(self, requests: int) -> CountedRun:
        per_request = 0.0 if self.tool == "instructions" else 7.0
        return CountedRun(self.tool, requests, 9_000 + per_request * requests, {"writev": per_request * requests})


class _Driver:
    def run(self, url: str, shape: LoadShape) -> RoundResult:
        return make_round(rps=int(shape.extra["requests"]) / 5, url=url)


def test_a_tool_that_cannot_count_leaves_the_other_tools_budgets_judged_and_names_itself() -> None:
    series = Series(
        "candidate",
        "http://172.18.0.3:80/",
        "gw",
        "rust",
        LoadShape(),
        driver_instance=_Driver(),  # type: ignore[arg-type]
        counter=_WorkersNotTraced(),
    )
    m = Measurement("default", series)
    budgets = [parse_budget(INSTRUCTIONS), parse_budget(SYSCALLS)]
    step = CountingStep("t.py::test_gw", budgets, CountingPlan(200, 1000, 2, 60.0), lambda _: None)
    step.run(m)
    assert m.verdicts[SYSCALLS].status is Status.PASS
    assert INSTRUCTIONS not in m.verdicts
    problem = m.data_problem(budgets[0])
    assert problem and "instructions per request of gw counted 0, 0" in problem
    assert m.data_problem(budgets[1]) is None
    assert series.values("syscalls_per_request[gw]") == [7.0, 7.0]
    with pytest.raises(metrics.MetricUnavailable, match=r"^instructions_per_request\[gw\]: the counting pass could"):
        series.values("instructions_per_request[gw]")
