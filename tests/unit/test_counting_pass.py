"""The counting pass's pure parts: tool output parsing, marginal costs, verdicts on repetitions,
the grammar and registry entries, and the pass's orchestration of exact counts."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from netperf_rounds import make_round

from pytest_netperf.baseline.model import Baseline, SeriesRecord, dumps, loads
from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import BudgetSyntaxError, parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import BaselineError
from pytest_netperf.measure.counting_pass import (
    COUNTED_REQUEST_TIMEOUT_S,
    Clock,
    CountingPassError,
    CountingPlan,
    at_address,
    exact_shape,
    run_counting_pass,
)
from pytest_netperf.report.counted import counted_fact, counted_notes, timing_note
from pytest_netperf.results.counted import CountedCost, CountedRun, changed_most, marginal
from pytest_netperf.results.model import RoundResult
from pytest_netperf.runtime.trace_output import (
    TraceOutputError,
    cachegrind_counts,
    merge_cachegrind,
    strace_counts,
    valgrind_problems,
)
from pytest_netperf.settings import SettingError, Settings
from pytest_netperf.tls_options import TlsOptions
from pytest_netperf.verdict.counted import evaluate_repetitions
from pytest_netperf.verdict.status import Status

CACHEGRIND = """desc: I1 cache: 32768 B, 64 B, 8-way associative
cmd: nginx -e stderr -c /netperf/nginx.conf
events: Ir
fl=src/http/ngx_http_parse.c
fn=ngx_http_parse_header_line
120 40
121 60
fn=ngx_http_parse_request_line
300 25
fl=src/core/ngx_hash.c
fn=ngx_hash_find
10 7
fl=???
fn=???
0 3
summary: 135
"""

STRACE = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 40.12    0.001000           1      1007           epoll_wait
 30.00    0.000700           0      1003       501 recvfrom
 20.00    0.000500           0      1000           writev
  0.50    0.000010          10         1           exit_group
------ ----------- ----------- --------- --------- ----------------
100.00    0.002210                  3011       501 total
"""


def test_cachegrind_file_gives_total_and_instructions_by_function() -> None:
    total, functions = cachegrind_counts(CACHEGRIND)
    assert total == 135
    assert functions == {
        "ngx_http_parse_header_line": 100,
        "ngx_http_parse_request_line": 25,
        "ngx_hash_find": 7,
        "??? [nginx]": 3,  # no symbol: named by the program of the process
    }


def test_cachegrind_files_of_master_and_workers_are_summed() -> None:
    idle = "events: Ir\nsummary: 0\n"
    total, functions, processes = merge_cachegrind({"cachegrind.7": CACHEGRIND, "cachegrind.9": CACHEGRIND, "x": idle})
    assert (total, functions["ngx_hash_find"], processes) == (270, 14, 2)


def test_cachegrind_file_without_summary_is_an_error_naming_it() -> None:
    with pytest.raises(TraceOutputError, match=r"cachegrind\.9: .*no summary"):
        merge_cachegrind({"cachegrind.9": "events: Ir\nfn=main\n1 2\n"})


def test_strace_summary_gives_calls_by_system_call() -> None:
    total, calls = strace_counts(STRACE)
    assert total == 3011
    assert calls == {"epoll_wait": 1007, "recvfrom": 1003, "writev": 1000, "exit_group": 1}
    with pytest.raises(TraceOutputError, match="no total row"):
        strace_counts(STRACE.rsplit("\n", 2)[0])


def test_a_worker_valgrind_could_not_write_for_is_reported() -> None:
    log = "==9== error: can't open cache simulation output file '/tmp/netperf-cost/cachegrind.9'\n"
    assert valgrind_problems({"valgrind.9.log": log, "valgrind.7.log": "==7== I refs: 8\n"}) == [
        "valgrind.9.log: ==9== error: can't open cache simulation output file '/tmp/netperf-cost/cachegrind.9'"
    ]


def _count(requests: int, per_request: float, start: float = 8_000_000.0, **by_name: float) -> CountedRun:
    names = {name: value * requests for name, value in by_name.items()}
    return CountedRun("instructions", requests, start + per_request * requests, names)


def test_marginal_cost_cancels_start_up_and_keeps_each_repetition() -> None:
    pairs = [
        (_count(200, 18_000.0, parse=300.0), _count(1000, 18_000.0, parse=300.0)),
        (_count(200, 18_000.0, start=8_100_000.0), _count(1000, 18_010.0, start=8_100_000.0)),
    ]
    cost = marginal("gw", pairs)
    assert cost.per_request[0] == pytest.approx(18_000.0)
    assert cost.per_request[1] == pytest.approx((18_010.0 * 1000 - 18_000.0 * 200) / 800)
    assert cost.requests == (200, 1000) and cost.tool == "instructions"
    assert cost.by_name["parse"] == pytest.approx(150.0)  # median of 300 and 0
    assert 0 < cost.spread < 0.003
    with pytest.raises(ValueError, match="more requests"):
        marginal("gw", [(_count(1000, 1.0), _count(200, 1.0))])
    assert CountedCost.from_dict(cost.to_dict()) == cost


def test_changed_most_ranks_by_size_and_drops_small_changes() -> None:
    head = {"ngx_regex_exec_array": 790.0, "ngx_hash_find": 100.0, "memcpy": 50.2}
    base = {"ngx_hash_find": 100.5, "memcpy": 50.0, "gone": 40.0}
    assert changed_most(head, base, limit=3, floor=1.0) == [("ngx_regex_exec_array", 790.0), ("gone", -40.0)]


@pytest.mark.parametrize(
    ("candidate", "reference", "status"),
    [
        ([18_360.0, 18_362.0, 18_358.0], [18_359.0, 18_361.0, 18_360.0], Status.PASS),
        ([18_727.0, 18_730.0, 18_725.0], [18_359.0, 18_361.0, 18_360.0], Status.FAIL),  # +2%
        ([18_400.0, 18_582.0, 18_500.0], [18_300.0, 18_420.0, 18_350.0], Status.INCONCLUSIVE),
    ],
)
def test_ratio_verdict_is_the_range_of_every_pair_of_repetitions(
    candidate: list[float], reference: list[float], status: Status
) -> None:
    verdict = evaluate_repetitions(parse_budget("instructions_per_request[gw] <= 1.01x base"), candidate, reference)
    assert verdict.status is status
    assert verdict.ci_low == pytest.approx(min(candidate) / max(reference))
    assert verdict.ci_high == pytest.approx(max(candidate) / min(reference))
    assert verdict.exact and verdict.method == "counted" and verdict.n_rounds == 3


def test_identical_system_call_counts_meet_a_budget_of_no_change() -> None:
    budget = parse_budget("syscalls_per_request[gw] <= 1.0x base")
    assert evaluate_repetitions(budget, [7.0, 7.0, 7.0], [7.0, 7.0, 7.0]).status is Status.PASS
    assert evaluate_repetitions(budget, [8.0, 8.0, 8.0], [7.0, 7.0, 7.0]).status is Status.FAIL


def test_absolute_verdicts_in_both_directions() -> None:
    assert evaluate_repetitions(parse_budget("instructions_per_request[gw] <= 25k"), [20e3, 20.1e3]).passed
    below = evaluate_repetitions(parse_budget("syscalls_per_request[gw] >= 8"), [7.0, 7.0])
    assert below.status is Status.FAIL and below.estimate == 7.0


def test_grammar_and_registry_know_the_counted_metrics() -> None:
    budget = parse_budget("instructions_per_request[edge] <= 1.01x base")
    assert (budget.comparison, budget.form, budget.threshold) == ("baseline", "ratio", 1.01)
    assert parse_budget("instructions_per_request[edge] <= 25k").threshold == 25_000
    metric = metrics.get("syscalls_per_request[edge]")
    assert metric.counted and metric.unit == "syscalls/request"
    assert metrics.tool_of("instructions_per_request[gw]") == "instructions"
    assert not metrics.get("cpu_per_request[edge]").counted
    with pytest.raises(BudgetSyntaxError, match="needs what it is relative to"):
        parse_budget("instructions_per_request[edge] <= 1.01x")


def test_counted_values_are_the_named_nodes_repetitions() -> None:
    costs = {
        "edge": CountedCost("edge", "instructions", (100.0, 101.0)),
        "app": CountedCost("app", "instructions", (10.0, 12.0)),
    }
    assert metrics.counted_values("instructions_per_request[edge]", costs) == [100.0, 101.0]
    with pytest.raises(metrics.MetricUnavailable, match="counted: edge, app"):
        metrics.counted_values("instructions_per_request[db]", costs)
    with pytest.raises(metrics.MetricUnavailable, match="counted by a counting pass"):
        metrics.get("instructions_per_request[edge]").value(None)  # type: ignore[arg-type]


def test_exact_shape_keeps_the_request_and_sends_it_alone() -> None:
    shape = LoadShape(
        connections=64, rate=1000.0, headers=(("Host", "api.example.com"),), body_size=10, extra={"max_lag": "1ms"}
    )
    exact = exact_shape(shape, 1000, 300.0)
    assert (exact.connections, exact.rate, exact.warmup_s, exact.duration_s) == (1, None, 0.0, 300.0)
    assert exact.headers == shape.headers and exact.body_size == 10
    assert exact.extra == {"requests": 1000}
    assert exact.timeout_s == COUNTED_REQUEST_TIMEOUT_S  # a clone's first TLS handshake under valgrind is slow
    assert exact_shape(replace(shape, timeout_s=90.0), 10, 300.0).timeout_s == 90.0
    assert exact_shape(shape, 10, 20.0).timeout_s == 20.0  # never beyond the counted run's time limit
    tls = TlsOptions(ca="ca.pem", resumption=False)
    handshakes = exact_shape(replace(shape, new_connection_per_request=True, tls=tls), 10, 300.0)
    assert handshakes.new_connection_per_request and handshakes.tls == tls
    assert (
        at_address("http://172.18.0.3:80/api/orders?size=16", "172.18.0.9:80")
        == "http://172.18.0.9:80/api/orders?size=16"
    )


class _LinearServer:
    """A counter whose counts are known: 5,000 to start, 2,000 instructions and 3 calls per request."""

    node = "gw"

    def __init__(self, per_request: float = 2_000.0, now: Callable[[], float] = lambda: 0.0) -> None:
        self.now = now
        self.calls: list[tuple[str, int]] = []
        self.per_request = per_request
        self.live = 0
        self.removed = 0

    def prepare(self) -> None:
        pass

    @contextmanager
    def clone(self, tool: str, time_limit_s: float) -> Iterator[_LinearClone]:
        self.live += 1
        try:
            yield _LinearClone(self, tool, self.now())
        finally:
            self.live -= 1
            self.removed += 1


class _LinearClone:
    address = "10.0.0.9:8000"

    def __init__(self, server: _LinearServer, tool: str, ready_at: float) -> None:
        self.server, self.tool, self.ready_at = server, tool, ready_at

    def counts(self, requests: int) -> CountedRun:
        self.server.calls.append((self.tool, requests))
        per = self.server.per_request if self.tool == "instructions" else 3.0
        return CountedRun(self.tool, requests, 5_000 + per * requests, {"f": per * requests})


def test_counting_pass_counts_low_and_high_per_repetition_and_tool() -> None:
    elapsed = [0.0]
    server = _LinearServer(now=lambda: elapsed[0])
    sent: list[tuple[str, LoadShape]] = []

    def run(url: str, shape: LoadShape) -> RoundResult:
        sent.append((url, shape))
        requests = int(shape.extra["requests"])
        elapsed[0] += requests / (shape.rate or 200.0)  # the larger count takes 5 s
        return make_round(rps=requests / 5, url=url)

    def sleep(seconds: float) -> None:
        elapsed[0] += seconds

    plan = CountingPlan(low=200, high=1000, repetitions=2, time_limit_s=60.0)
    clock = Clock(now=lambda: elapsed[0], sleep=sleep)
    costs = run_counting_pass(
        server, ["instructions", "syscalls"], run, "http://172.18.0.3:8000/x", LoadShape(), plan, clock=clock
    )
    assert costs["instructions"].per_request == (2_000.0, 2_000.0)
    assert costs["syscalls"].by_name == {"f": 3.0}
    # the larger count first, as fast as it goes; the smaller one paced over the same 5 s
    per_tool = {tool: [(tool, 1000), (tool, 200)] * 2 for tool in ("instructions", "syscalls")}
    assert server.calls == per_tool["instructions"] + per_tool["syscalls"]
    assert {url for url, _ in sent} == {"http://10.0.0.9:8000/x"}
    assert [shape.rate for _, shape in sent[:2]] == [None, pytest.approx(40.0)]
    notes = counted_notes(parse_budget("syscalls_per_request[gw] <= 1.0x base"), costs_by_tool(costs), None, "base")
    assert notes == [
        "counting pass of gw (candidate): syscalls under strace, 2 x (1000 - 200) requests, 0.0s; "
        "3.0 per request, spread 0.00%"
    ]


def test_parallel_tools_give_the_same_counts_each_in_its_own_order() -> None:
    server = _LinearServer()

    def run(url: str, shape: LoadShape) -> RoundResult:
        return make_round(rps=int(shape.extra["requests"]) / 5, url=url)

    plan = CountingPlan(low=200, high=1000, repetitions=2, time_limit_s=60.0)
    serial = run_counting_pass(_LinearServer(), ["instructions", "syscalls"], run, "http://h:1/x", LoadShape(), plan)
    both = run_counting_pass(
        server, ["instructions", "syscalls"], run, "http://h:1/x", LoadShape(), plan, parallel=True
    )
    assert both == serial
    for tool in ("instructions", "syscalls"):  # each tool still runs high, then low, per repetition
        assert [n for t, n in server.calls if t == tool] == [1000, 200, 1000, 200]


@pytest.mark.parametrize("per_request", [0.0, -3.0, 40.0])
def test_a_count_below_any_requests_work_is_an_error_not_a_small_cost(per_request: float) -> None:
    """A trace that missed the serving processes (nginx's master counted, its workers not)
    counts start-up only: its marginal cost is about zero and must not be judged as a cost."""

    def run(url: str, shape: LoadShape) -> RoundResult:
        return make_round(rps=int(shape.extra["requests"]) / 5, url=url)

    plan = CountingPlan(low=200, high=1000, repetitions=1, time_limit_s=60.0)
    with pytest.raises(CountingPassError, match=r"instructions per request of gw counted .* below the 1000"):
        run_counting_pass(
            _LinearServer(per_request), ["instructions"], run, "http://172.18.0.3:8000/x", LoadShape(), plan
        )


class _ExtraProcessServer(_LinearServer):
    """The linear server whose first ``uneven`` runs of 200 requests count one process more
    (its start-up and exit: 400,000 instructions) than the runs of 1000 do."""

    def __init__(self, uneven: int) -> None:
        super().__init__()
        self.uneven = uneven

    @contextmanager
    def clone(self, tool: str, time_limit_s: float) -> Iterator[_LinearClone]:
        with super().clone(tool, time_limit_s) as clone:
            yield _ExtraProcessClone(self, tool, clone.ready_at)


class _ExtraProcessClone(_LinearClone):
    server: _ExtraProcessServer

    def counts(self, requests: int) -> CountedRun:
        run = replace(super().counts(requests), processes=2)
        if requests == 200 and self.server.uneven > 0:
            self.server.uneven -= 1
            return replace(run, total=run.total + 400_000, processes=3)
        return run


@pytest.mark.parametrize(("uneven", "runs", "per_request"), [(1, 6, (2_000.0, 2_000.0)), (3, 8, (1_500.0, 2_000.0))])
def test_a_repetition_whose_runs_counted_different_processes_is_counted_again(
    uneven: int, runs: int, per_request: tuple[float, ...]
) -> None:
    """An extra process in one run (a worker started again, a master counted once more) adds its
    start-up to that run alone: the repetition is counted again, at most twice more, and where
    its runs still differ the note says so beside the spread it caused."""
    server = _ExtraProcessServer(uneven)
    said: list[str] = []

    def run(url: str, shape: LoadShape) -> RoundResult:
        return make_round(rps=int(shape.extra["requests"]) / 5, url=url)

    plan = CountingPlan(low=200, high=1000, repetitions=2, time_limit_s=60.0)
    cost = run_counting_pass(server, ["instructions"], run, "http://h:1/x", LoadShape(), plan, progress=said.append)[
        "instructions"
    ]
    assert len(server.calls) == runs
    assert cost.per_request == per_request
    assert "counting pass gw instructions repetition 1/2: its runs counted 3 and 2 processes; counted again" in said
    assert cost.processes[1] == (2, 2)
    note = timing_note(cost, "candidate")
    if uneven > 2:  # still uneven after two recounts: kept, and named
        assert cost.processes[0] == (3, 2)
        assert said[2] == "counting pass gw instructions repetition 1/2: 0.0s, 3 and 2 processes"
        assert note.endswith(
            "its runs counted different numbers of processes (repetition 1: 3 and 2), so a process's start-up "
            "and exit did not cancel"
        )
    else:
        assert "different numbers of processes" not in note
    assert CountedCost.from_dict(json.loads(json.dumps(cost.to_dict()))) == cost


def test_a_clone_that_answered_fewer_requests_is_an_error_and_is_removed() -> None:
    """A count over fewer requests than were sent would be too small: the pass says so (in
    its own error, which the gate turns into INVALID budgets) and the clone still goes."""
    server = _LinearServer()

    def run(url: str, shape: LoadShape) -> RoundResult:
        return make_round(rps=30.0, url=url)  # 150 requests answered over its 5 s

    plan = CountingPlan(low=40, high=200, repetitions=2, time_limit_s=30.0)
    with pytest.raises(CountingPassError, match=r"gw: 150 of 200 requests answered under strace \(no error reported\)"):
        run_counting_pass(server, ["syscalls"], run, "http://172.18.0.3:8000/x", LoadShape(), plan)
    assert (server.live, server.removed) == (0, 1)


def test_a_driver_failure_in_a_pass_is_a_counting_pass_error_naming_it() -> None:
    from pytest_netperf.errors import DriverError

    def run(url: str, shape: LoadShape) -> RoundResult:
        raise DriverError("connection refused by 10.0.0.9:8000")

    plan = CountingPlan(low=40, high=200, repetitions=1, time_limit_s=30.0)
    with pytest.raises(CountingPassError, match=r"connection refused by 10\.0\.0\.9:8000"):
        run_counting_pass(_LinearServer(), ["instructions"], run, "http://h:1/x", LoadShape(), plan)


def test_a_plain_bug_in_a_pass_is_not_turned_into_an_invalid_budget() -> None:
    def run(url: str, shape: LoadShape) -> RoundResult:
        raise ValueError("a bug")

    plan = CountingPlan(low=40, high=200, repetitions=1, time_limit_s=30.0)
    with pytest.raises(ValueError, match="a bug"):
        run_counting_pass(_LinearServer(), ["instructions"], run, "http://h:1/x", LoadShape(), plan)


def costs_by_tool(costs: dict[str, CountedCost]) -> dict[str, dict[str, CountedCost]]:
    return {tool: {cost.node: cost} for tool, cost in costs.items()}


def test_a_stored_baseline_keeps_the_counted_costs_and_names_a_corrupt_entry(tmp_path: Path) -> None:
    cost = CountedCost("edge", "instructions", (25_100.0, 25_110.0, 25_090.0), {"ngx_hash_find": 170.0}, (200, 1000))
    record = SeriesRecord(rounds=[make_round()], counted={"instructions": {"edge": cost}})
    stored = Baseline.new("test_gate.py::test_edge", {"candidate": record}, fingerprint={}, repo_dir=tmp_path)
    source = tmp_path / "baseline.json"
    loaded = loads(dumps(stored), source)
    assert loaded.values("candidate", "instructions_per_request[edge]") == [25_100.0, 25_110.0, 25_090.0]
    assert loaded.series["candidate"].counted["instructions"]["edge"] == cost
    with pytest.raises(KeyError, match="no counted node matches"):
        loaded.values("candidate", "syscalls_per_request[edge]")  # recorded without system calls: NEW

    doc = json.loads(dumps(stored))
    doc["series"]["candidate"]["counted"]["instructions"]["edge"]["per_request"] = ["many"]
    with pytest.raises(BaselineError, match=r"baseline\.json: .*counted\.instructions\.edge\.per_request"):
        loads(json.dumps(doc), source)


def test_a_baseline_written_before_the_rename_keeps_its_counted_costs_under_traced(tmp_path: Path) -> None:
    cost = CountedCost("edge", "syscalls", (8.0, 8.0), {"writev": 2.0}, (200, 1000))
    stored = Baseline.new(
        "test_gate.py::test_edge",
        {"candidate": SeriesRecord(rounds=[make_round()], counted={"syscalls": {"edge": cost}})},
        fingerprint={},
        repo_dir=tmp_path,
    )
    doc = json.loads(dumps(stored))
    series = doc["series"]["candidate"]
    series["traced"] = series.pop("counted")  # as 0.1 wrote it
    loaded = loads(json.dumps(doc), tmp_path / "old.json")
    assert loaded.values("candidate", "syscalls_per_request[edge]") == [8.0, 8.0]
    series["traced"]["syscalls"]["edge"]["per_request"] = "eight"
    with pytest.raises(BaselineError, match=r"old\.json: .*traced\.syscalls\.edge\.per_request"):
        loads(json.dumps(doc), tmp_path / "old.json")
    assert "counted" in json.loads(dumps(loaded))["series"]["candidate"]  # written back under its new name


def test_counting_pass_settings_are_validated_and_make_the_plan() -> None:
    settings = Settings.from_mapping(
        {"counting_requests": "500", "counting_repetitions": "2", "counting_time_limit_s": "60"}
    )
    plan = CountingPlan.of(settings.counting_requests, settings.counting_repetitions, settings.counting_time_limit_s)
    assert (plan.low, plan.high, plan.repetitions, plan.time_limit_s) == (100, 500, 2, 60.0)
    assert CountingPlan() == CountingPlan.of(1000, 3, 300.0)
    with pytest.raises(SettingError, match="counting_requests must be >= 10"):
        Settings.from_mapping({"counting_requests": "5"})
    with pytest.raises(SettingError, match="counting_repetitions must be >= 2"):
        Settings.from_mapping({"counting_repetitions": "1"})


def test_the_cost_fact_lists_each_node_and_its_most_frequent_system_calls() -> None:
    counted = {
        "instructions": {"edge": CountedCost("edge", "instructions", (25_088.0, 25_090.0, 25_080.0))},
        "syscalls": {
            "edge": CountedCost(
                "edge", "syscalls", (8.0, 8.0, 8.0), {"epoll_wait": 2.0, "recvfrom": 2.0, "writev": 2.0, "brk": 0.001}
            )
        },
    }
    assert counted_fact(counted) == (
        "edge 25,088 instructions; 8.00 system calls (epoll_wait 2.00, recvfrom 2.00, writev 2.00)"
    )


def test_the_comparison_note_names_the_functions_that_changed_most_against_the_other_side() -> None:
    """Where the cost went: the parts whose per-request count moved most, largest first, in the
    tool's own precision; a move under the repetitions' resolution is not named."""
    budget = parse_budget("instructions_per_request[edge] <= 1.01x base")
    before = CountedCost(
        "edge", "instructions", (18_400.0, 18_410.0), {"ngx_http_parse": 900.0, "pcre2_match_8": 0.0, "memcpy": 50.0}
    )
    after = CountedCost(
        "edge", "instructions", (19_100.0, 19_090.0), {"ngx_http_parse": 902.0, "pcre2_match_8": 664.0, "memcpy": 80.0}
    )
    notes = counted_notes(budget, {"instructions": {"edge": after}}, {"instructions": {"edge": before}}, "base")
    assert notes[0].startswith("counting pass of edge (candidate): instructions under valgrind, 2 x (0 - 0) requests")
    assert notes[1].startswith("counting pass of edge (base): instructions under valgrind")
    # the floor is 0.2% of the base's 18,405 per request (36.8): +2 in ngx_http_parse is noise
    assert notes[2] == "edge: functions whose instructions per request changed most vs base: pcre2_match_8 +664"


def test_the_comparison_note_says_when_no_system_call_moved() -> None:
    budget = parse_budget("syscalls_per_request[edge] <= 1.0x base")
    same = CountedCost("edge", "syscalls", (8.0, 8.0), {"epoll_wait": 2.0, "recvfrom": 2.0, "writev": 2.0})
    notes = counted_notes(budget, {"syscalls": {"edge": same}}, {"syscalls": {"edge": same}}, "reference")
    assert notes[-1] == "edge: no system calls changed by 0.05 or more per request vs reference"
    dropped_pool = CountedCost("edge", "syscalls", (10.0, 10.0), {"epoll_wait": 2.0, "connect": 1.0, "close": 1.0})
    notes = counted_notes(budget, {"syscalls": {"edge": dropped_pool}}, {"syscalls": {"edge": same}}, "base")
    assert notes[-1] == (
        "edge: system calls whose syscalls per request changed most vs base: recvfrom -2.00, writev -2.00, close +1.00"
    )


def test_a_clone_gets_the_bind_mounts_named_volumes_and_tmpfs_of_its_node() -> None:
    """A TLS proxy's certificates may come in a bind mount or a named volume (certbot's): the
    counted clone must have them to serve TLS as the node does."""
    from types import SimpleNamespace

    from pytest_netperf.runtime.counting_clone import _clone_options

    attrs = {
        "Config": {"Env": ["A=1"], "Labels": {}},
        "HostConfig": {"Tmpfs": {"/var/cache/nginx": "size=16m"}},
        "Mounts": [
            {"Type": "bind", "Source": "/repo/nginx/edge.conf", "Destination": "/etc/nginx/conf.d/d.conf", "RW": False},
            {"Type": "volume", "Name": "stack_certs", "Destination": "/etc/letsencrypt", "RW": False},
            {"Type": "volume", "Name": "stack_cache", "Destination": "/cache", "RW": True},
            {"Type": "tmpfs", "Destination": "/run"},
        ],
    }
    options = _clone_options(SimpleNamespace(attrs=attrs), "edge-counted-1")  # type: ignore[arg-type]
    assert options["volumes"] == [
        "/repo/nginx/edge.conf:/etc/nginx/conf.d/d.conf:ro",
        "stack_certs:/etc/letsencrypt:ro",
        "stack_cache:/cache:rw",
    ]
    assert options["tmpfs"] == {"/var/cache/nginx": "size=16m"}


def test_a_steady_system_call_is_named_beside_one_that_moved_between_repetitions() -> None:
    """A dropped keep-alive pool on a noisy runner: ``readv`` moved by 1.18 per request between
    the candidate's repetitions (its total spread 8.7%), ``connect`` went from 0 to exactly 1.
    The change inside ``readv``'s own spread is not named; ``connect``'s is."""
    budget = parse_budget("syscalls_per_request[edge] <= 1.0x base")
    base = CountedCost("edge", "syscalls", (7.0, 7.0, 7.0), {"epoll_wait": 2.0, "readv": 1.0, "writev": 2.0})
    head = CountedCost(
        "edge",
        "syscalls",
        (13.56, 12.83, 14.01),
        {"epoll_wait": 2.0, "readv": 1.9, "writev": 2.0, "connect": 1.0, "close": 1.0},
        varying={"readv": (0.83, 2.01)},
    )
    notes = counted_notes(budget, {"syscalls": {"edge": head}}, {"syscalls": {"edge": base}}, "base")
    assert notes[-1] == "edge: system calls whose syscalls per request changed most vs base: close +1.00, connect +1.00"
