"""What a counted budget may name, and what a counting pass says when it runs out of time
(issue #41): a counting pass counts one node, the one the target enters, so ``[*]``, a list or
a pattern (which mean every matching node for ``cpu``/``mem``) are refused; a counted run cut
by its time limit says so and names the option that raises it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from netperf_rounds import make_round

from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import BudgetSyntaxError, parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.counting_pass import CountingPassError, CountingPlan, run_counting_pass
from pytest_netperf.results.counted import CountedRun
from pytest_netperf.results.model import RoundResult


@pytest.mark.parametrize(
    "text",
    [
        "syscalls_per_request[*] <= 1.0x base",
        "instructions_per_request[edge,app] <= 1.01x base",
        "instructions_per_request[envoy-*] <= 200k",
    ],
)
def test_a_counted_budget_over_several_nodes_is_refused_naming_the_one_node_it_counts(text: str) -> None:
    with pytest.raises(BudgetSyntaxError, match=r"counts one node: the one the target enters.*name it"):
        parse_budget(text)


def test_a_counted_budget_on_one_node_and_cpu_over_every_node_are_still_fine() -> None:
    assert parse_budget("syscalls_per_request[edge] <= 1.0x base").metric == "syscalls_per_request[edge]"
    assert metrics.get("cpu[*]").scope == ("*",)


class _SlowServer:
    node = "edge"
    address = "10.0.0.9:80"
    ready_at = 0.0

    def prepare(self) -> None:
        pass

    @contextmanager
    def clone(self, tool: str, time_limit_s: float) -> Iterator[_SlowServer]:
        yield self

    def counts(self, requests: int) -> CountedRun:  # pragma: no cover - never reached
        raise AssertionError("a run that answered too few requests was counted")


def test_a_counted_run_cut_by_its_time_limit_says_so_and_names_the_option() -> None:
    def run(url: str, shape: LoadShape) -> RoundResult:
        assert shape.duration_s == 5.0
        return make_round(rps=1.8, url=url)  # 9 answered in the 5 s allowed

    plan = CountingPlan(low=4, high=20, repetitions=2, time_limit_s=5.0)
    with pytest.raises(CountingPassError) as caught:
        run_counting_pass(_SlowServer(), ["instructions"], run, "http://h:80/", LoadShape(), plan)
    text = str(caught.value)
    assert "hit the counting time limit of 5s" in text
    assert "9 of 20 requests answered" in text and "--netperf-counting-time-limit" in text


def test_a_counted_run_short_of_answers_for_another_reason_names_the_errors_not_the_limit() -> None:
    def run(url: str, shape: LoadShape) -> RoundResult:
        short = make_round(rps=1.8, url=url)
        return dataclasses.replace(short, duration_s=0.4, errors={"connection reset": 11})

    plan = CountingPlan(low=4, high=20, repetitions=2, time_limit_s=5.0)
    with pytest.raises(CountingPassError) as caught:
        run_counting_pass(_SlowServer(), ["syscalls"], run, "http://h:80/", LoadShape(), plan)
    text = str(caught.value)
    assert "9 of 20 requests answered under strace" in text and "connection reset: 11" in text
    assert "time limit" not in text
