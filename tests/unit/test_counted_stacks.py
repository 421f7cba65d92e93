"""Call stacks per request: the marginal of two profiled runs, the cap, the folded text, their
place on a counted cost (and in old baselines without them), and the counting pass's profiling pair."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from netperf_rounds import make_round

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import NetperfError
from pytest_netperf.measure.counting_pass import Clock, CountingPlan, count_tools, run_counting_pass
from pytest_netperf.results.counted import CountedCost, CountedRun, marginal
from pytest_netperf.results.model import RoundResult
from pytest_netperf.results.stacks import OTHER_STACK, folded, heaviest, marginal_stacks
from pytest_netperf.runtime.callgrind_output import by_leaf


def test_a_stacks_cost_per_request_is_the_median_marginal_and_start_up_cancels() -> None:
    start = {"nginx;main;init": 5_000.0}

    def run(requests: int, regex: float) -> dict[str, float]:
        return {**start, "nginx;main;handle": 100.0 * requests, "nginx;main;handle;pcre2_match": regex * requests}

    pairs = [
        (run(200, 30.0), run(1000, 30.0), 800),
        (run(200, 31.0), run(1000, 31.0), 800),
        (run(200, 29.5), run(1000, 29.5), 800),
    ]
    assert marginal_stacks(pairs) == {"nginx;main;handle": 100.0, "nginx;main;handle;pcre2_match": 30.0}


def test_a_stack_only_one_run_had_counts_zero_in_the_other() -> None:
    low = {"a;b": 100.0, "a;gone": 50.0}
    high = {"a;b": 900.0, "a;new": 80.0}
    assert marginal_stacks([(low, high, 8)]) == {"a;b": 100.0, "a;gone": -6.25, "a;new": 10.0}


def test_the_heaviest_stacks_are_kept_the_rest_summed_into_other() -> None:
    stacks = {"a": 10.0, "b": -20.0, "c": 5.0, "d": 1.0, "e": 0.5}
    kept = heaviest(stacks, limit=2)
    assert kept == {"b": -20.0, "a": 10.0, OTHER_STACK: 6.5}
    assert sum(kept.values()) == sum(stacks.values())
    assert heaviest(stacks, limit=10) == stacks  # nothing left out: no "other"


def test_folded_text_scales_rounds_and_leaves_out_what_a_picture_cannot_draw() -> None:
    text = folded({"nginx;main;handle": 12.3456, "nginx;main": -3.0, "nginx;tiny": 0.0001}, scale=1000)
    assert text == "nginx;main;handle 12346\n"
    assert folded({}) == ""


def test_marginal_costs_keep_the_heaviest_stacks_and_their_functions() -> None:
    def profiled(requests: int) -> CountedRun:
        stacks = {"nginx;main;handle": 100.0 * requests + 7, "nginx;main;handle;pcre2_match": 30.0 * requests}
        return CountedRun("stacks", requests, sum(stacks.values()), by_leaf(stacks), stacks=stacks)

    cost = marginal("gw", [(profiled(200), profiled(1000))])
    assert cost.tool == "stacks" and cost.per_request == (130.0,)
    assert cost.stacks == {"nginx;main;handle": 100.0, "nginx;main;handle;pcre2_match": 30.0}
    assert cost.by_name == {"handle": 100.0, "pcre2_match": 30.0}


def test_stacks_round_trip_and_an_old_cost_without_them_still_loads() -> None:
    cost = CountedCost("gw", "instructions", (130.0, 130.5), {"handle": 100.0}, (200, 1000), 4.0, {}, {"a;b": 1.5})
    again = CountedCost.from_dict(cost.to_dict())
    assert again == cost and again.stacks == {"a;b": 1.5}
    old = cost.to_dict()
    del old["stacks"]
    assert CountedCost.from_dict(old).stacks == {}


class _Server:
    """Instructions counted at 2,000 per request; the profiling run sees one more stack."""

    node = "gw"

    def __init__(self, profiling_fails: bool = False) -> None:
        self.tools: list[str] = []
        self.profiling_fails = profiling_fails

    def prepare(self) -> None:
        pass

    @contextmanager
    def clone(self, tool: str, time_limit_s: float) -> Iterator[_Clone]:
        yield _Clone(self, tool)


class _Clone:
    address = "10.0.0.9:8000"
    ready_at = 0.0

    def __init__(self, server: _Server, tool: str) -> None:
        self.server, self.tool = server, tool

    def counts(self, requests: int) -> CountedRun:
        self.server.tools.append(self.tool)
        if self.tool == "stacks":
            if self.server.profiling_fails:
                raise NetperfError("gw: valgrind wrote no counts")
            stacks = {"gw;main;handle": 1_990.0 * requests + 5_000, "gw;main;handle;pcre2_match": 5.0 * requests}
            return CountedRun(self.tool, requests, sum(stacks.values()), by_leaf(stacks), stacks=stacks)
        return CountedRun(self.tool, requests, 5_000 + 2_000.0 * requests, {"handle": 2_000.0 * requests})


def _run(url: str, shape: LoadShape) -> RoundResult:
    return make_round(rps=int(shape.extra["requests"]) / 5, url=url)


@pytest.mark.parametrize("stacks", [False, True])
def test_the_profiling_pair_runs_only_when_asked_and_never_changes_the_count(stacks: bool) -> None:
    server = _Server()
    plan = CountingPlan(low=200, high=1000, repetitions=2, time_limit_s=60.0, stacks=stacks)
    clock = Clock(now=lambda: 0.0, sleep=lambda _: None)
    costs = run_counting_pass(server, ["instructions", "syscalls"], _run, "http://gw/x", LoadShape(), plan, clock=clock)
    cost = costs["instructions"]
    assert cost.per_request == (2_000.0, 2_000.0) and cost.by_name == {"handle": 2_000.0}
    assert server.tools.count("stacks") == (2 if stacks else 0)  # one pair, after the repetitions
    assert cost.stacks == ({"gw;main;handle": 1_990.0, "gw;main;handle;pcre2_match": 5.0} if stacks else {})
    assert costs["syscalls"].stacks == {}


def test_a_failed_profiling_run_leaves_the_count_without_stacks() -> None:
    server = _Server(profiling_fails=True)
    plan = CountingPlan(low=200, high=1000, repetitions=2, time_limit_s=60.0, stacks=True)
    said: list[str] = []
    costs = run_counting_pass(
        server, ["instructions"], _run, "http://gw/x", LoadShape(), plan, said.append, clock=Clock(lambda: 0.0)
    )
    assert costs["instructions"].per_request == (2_000.0, 2_000.0) and costs["instructions"].stacks == {}
    assert any("no call stacks" in line and "valgrind wrote no counts" in line for line in said)


class _MeetingServer(_Server):
    """A server whose first instructions run and first profiling run each wait for the other:
    a pass that ran them one after the other would break the barrier."""

    def __init__(self) -> None:
        super().__init__()
        self.meeting = threading.Barrier(2, timeout=5)

    @contextmanager
    def clone(self, tool: str, time_limit_s: float) -> Iterator[_Clone]:
        if tool in ("instructions", "stacks") and tool not in self.tools:
            self.meeting.wait()
        yield _Clone(self, tool)


def test_in_parallel_the_profiling_pair_runs_beside_the_counts_and_gives_the_same_cost() -> None:
    plan = CountingPlan(low=200, high=1000, repetitions=2, time_limit_s=60.0, stacks=True)
    clock = Clock(now=lambda: 0.0, sleep=lambda _: None)
    tools = ["instructions", "syscalls"]
    after = run_counting_pass(_Server(), tools, _run, "http://gw/x", LoadShape(), plan, clock=clock)
    server = _MeetingServer()
    beside = run_counting_pass(server, tools, _run, "http://gw/x", LoadShape(), plan, parallel=True, clock=clock)
    assert beside == after
    assert beside["instructions"].stacks == {"gw;main;handle": 1_990.0, "gw;main;handle;pcre2_match": 5.0}
    assert server.tools.count("stacks") == 2
    # the tools' counts one after the other beside the profile: strace's beside two valgrinds
    # spread wider than beside one
    counted = [tool for tool in server.tools if tool != "stacks"]
    assert counted == ["instructions"] * 4 + ["syscalls"] * 4


class _FailingInstructions(_Server):
    """A server whose instructions clone dies under valgrind; its profiling clone works."""

    @contextmanager
    def clone(self, tool: str, time_limit_s: float) -> Iterator[_Clone]:
        if tool == "instructions":
            raise NetperfError("gw: the clone exited under valgrind")
        yield _Clone(self, tool)


def test_a_failed_count_beside_a_good_profile_gives_no_cost_and_its_own_reason() -> None:
    plan = CountingPlan(low=200, high=1000, repetitions=1, time_limit_s=60.0, stacks=True)
    costs, errors = count_tools(
        _FailingInstructions(),
        ["instructions", "syscalls"],
        _run,
        "http://gw/x",
        LoadShape(),
        plan,
        parallel=True,
        clock=Clock(lambda: 0.0),
    )
    assert set(costs) == {"syscalls"} and costs["syscalls"].stacks == {}
    assert errors == {"instructions": "gw: the clone exited under valgrind"}
