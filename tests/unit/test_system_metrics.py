"""Budgets on what the system under test spends: grammar, extraction per node and scope,
and the gate reading a probe around each round (a probe here is plain data, no Docker)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from netperf_rounds import make_round

from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import BudgetSyntaxError, CgroupError, InvalidMeasurement, NetperfError
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.results.model import NodeCosts, RoundResult, SystemCosts
from pytest_netperf.runtime.endpoints import Endpoint as RuntimeEndpoint
from pytest_netperf.verdict.status import Status

MIB = 2**20


def costs(edge_cpu_ns: int, app_cpu_ns: int = 1_000_000, served: int = 1000) -> SystemCosts:
    return SystemCosts(
        nodes={
            "edge": NodeCosts(cpu_ns=edge_cpu_ns, mem_bytes=10 * MIB, mem_peak_bytes=12 * MIB),
            "envoy-1": NodeCosts(cpu_ns=2_000_000, mem_bytes=20 * MIB, mem_peak_bytes=20 * MIB),
            "envoy-2": NodeCosts(cpu_ns=3_000_000, mem_bytes=30 * MIB, mem_peak_bytes=31 * MIB),
            "app": NodeCosts(cpu_ns=app_cpu_ns, mem_bytes=5 * MIB, mem_peak_bytes=5 * MIB),
        },
        served=served,
        span_s=1.5,
        source="cgroup v1",
    )


# ----- grammar -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "metric", "threshold", "form", "comparison"),
    [
        ("cpu_per_request[edge] <= 1.05x base", "cpu_per_request[edge]", 1.05, "ratio", "baseline"),
        ("cpu_per_request[envoy-*] <= 1.1x reference", "cpu_per_request[envoy-*]", 1.1, "ratio", "reference"),
        ("cpu_per_request[edge] < 50us", "cpu_per_request[edge]", 50_000, "value", "absolute"),
        ("cpu[*] <= 1.5", "cpu[*]", 1.5, "value", "absolute"),
        ("cpu[*] <= 0.6 per 1k rps", "cpu_per_request[*]", 600_000, "value", "absolute"),
        ("mem[edge] <= 64MB", "mem[edge]", 64 * MIB, "value", "absolute"),
        ("mem[edge] <= 64m", "mem[edge]", 64 * MIB, "value", "absolute"),
        ("mem_peak[app, edge] <= 1.2x base", "mem_peak[app,edge]", 1.2, "ratio", "baseline"),
    ],
)
def test_system_budgets_parse(text: str, metric: str, threshold: float, form: str, comparison: str) -> None:
    budget = parse_budget(text)
    assert (budget.metric, budget.threshold, budget.form, budget.comparison) == (metric, threshold, form, comparison)


def test_per_1k_rps_reads_in_cores_per_1k_rps() -> None:
    budget = parse_budget("cpu[*] <= 0.6 per 1k rps")
    assert budget.per_krps and budget.format_value(budget.threshold) == "0.6 cores per 1k rps"
    assert "cores per 1000 rps" in budget.describe()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("cpu <= 1", "read per node; name them"),
        ("cpu[] <= 1", "the brackets name nodes"),
        ("cpu_per_request[a < 1us", "close the brackets"),
        ("cpu[edge] <= 1ms", "number of cores"),
        ("mem[x] <= 5", "memory limit takes a unit"),
        ("cpu_per_request[e] <= 5", "takes a time unit"),
        ("cpu[*] <= 0.6 per 1k rps vs base", "'per 1k rps' takes an absolute number of cores"),
        ("p99[edge] < 1ms", "only these take [nodes]"),
    ],
)
def test_bad_system_budgets_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(BudgetSyntaxError) as info:
        parse_budget(text)
    assert says in str(info.value) and text in str(info.value)


# ----- extraction ----------------------------------------------------------------------
def test_values_per_scope() -> None:
    r = replace(make_round(rps=1000.0), system=costs(edge_cpu_ns=40_000_000))
    assert metrics.metric_value(r, "cpu_per_request[edge]") == pytest.approx(40_000)  # 40 ms over 1000 responses
    assert metrics.metric_value(r, "cpu_per_request[envoy-*]") == pytest.approx(5_000)
    assert metrics.metric_value(r, "cpu_per_request[*]") == pytest.approx(46_000)
    assert metrics.metric_value(r, "cpu[edge]") == pytest.approx(0.04)  # 40 us per response at 1000 rps
    assert metrics.metric_value(r, "mem[envoy-*]") == 50 * MIB
    assert metrics.metric_value(r, "mem_peak[edge,app]") == 17 * MIB
    assert metrics.format_metric("mem[edge]", 10 * MIB) == "10MiB"
    assert metrics.format_metric("cpu_per_request[edge]", 40_000) == "40us"


def test_a_round_without_costs_or_a_scope_without_nodes_is_unavailable_not_zero() -> None:
    with pytest.raises(metrics.MetricUnavailable, match="no system-under-test costs"):
        metrics.metric_value(make_round(), "cpu[*]")
    r = replace(make_round(), system=costs(1))
    with pytest.raises(metrics.MetricUnavailable, match="no node matches; the nodes are edge, envoy-1"):
        metrics.metric_value(r, "cpu[gateway]")


def test_costs_survive_the_round_trip_through_json() -> None:
    r = replace(make_round(), system=costs(7), completed_total=1234)
    again = RoundResult.from_dict(r.to_dict())
    assert again.system == r.system and again.completed_total == 1234


# ----- the gate ------------------------------------------------------------------------
class Probe:
    """A system under test whose edge spends ``edge_us`` (+ noise) of CPU per response."""

    def __init__(self, edge_us: float, seed: int, fail_at: int | None = None) -> None:
        self.edge_us, self.rng, self.fail_at, self.rounds = edge_us, random.Random(seed), fail_at, 0
        self.nodes = ("edge", "envoy-1", "envoy-2", "app")

    def begin(self) -> Probe:
        self.rounds += 1
        return self

    def cancel(self) -> None:
        pass

    def end(self, served: int) -> SystemCosts:
        if self.rounds == self.fail_at:
            raise CgroupError("container x of node 'edge' restarted during the round (its counters were reset)")
        edge_ns = int(self.edge_us * 1000 * served * self.rng.gauss(1.0, 0.01))
        return costs(edge_ns, served=served)


def Endpoint(url: str, probe: Probe | None) -> RuntimeEndpoint:
    return RuntimeEndpoint(url, None, "host", costs=probe)  # type: ignore[arg-type]


class Driver:
    name = "rust"
    cpus = None  # not pinned

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        result = make_round(rps=1000.0, url=url)
        return replace(result, mode="open" if shape.rate else "closed", completed_total=1500)


def gate(*budgets: str, rounds: int = 6) -> Gate:
    settings = GateSettings(rounds_min=rounds, rounds_max=rounds, round_duration_s=0.1, warmup_s=0.0)
    return Gate("t.py::test", [parse_budget(b) for b in budgets], settings, lambda name, runner: Driver())


def test_a_cpu_regression_fails_and_an_unchanged_system_passes() -> None:
    g = gate("cpu_per_request[edge] <= 1.05x reference")
    g.compare(Endpoint("http://c/", Probe(44.0, 1)), Endpoint("http://r/", Probe(40.0, 2)), rate=1000)
    (outcome,) = g.finish()
    assert outcome.status is Status.FAIL
    assert outcome.verdict is not None and outcome.verdict.estimate == pytest.approx(1.1, abs=0.02)
    g = gate("cpu_per_request[edge] <= 1.05x reference")
    g.compare(Endpoint("http://c/", Probe(40.0, 3)), Endpoint("http://r/", Probe(40.0, 4)), rate=1000)
    assert [o.status for o in g.finish()] == [Status.PASS]


def test_per_request_divides_by_every_response_of_the_sampled_span() -> None:
    g = gate("cpu_per_request[edge] < 1ms")
    m = g.measure(Endpoint("http://c/", Probe(40.0, 1)), rate=1000)
    assert all(r.system is not None and r.system.served == 1500 for r in m.candidate.rounds)


def test_an_unknown_node_is_an_error_before_any_load_naming_test_budget_and_nodes() -> None:
    probe = Probe(40.0, 1)
    with pytest.raises(NetperfError, match=r"t.py::test: budget 'cpu\[edgy\] <= 2': .*the nodes are edge, envoy-1"):
        gate("cpu[edgy] <= 2").measure(Endpoint("http://c/", probe))
    assert probe.rounds == 0


def test_a_plain_url_cannot_carry_a_cpu_budget() -> None:
    with pytest.raises(NetperfError, match="is a plain URL: measure an endpoint of netperf_topology"):
        gate("mem[*] <= 64MB").measure("http://c/")


def test_a_container_restarted_mid_round_invalidates_the_measurement() -> None:
    with pytest.raises(InvalidMeasurement, match=r"\(round 2\): container x of node 'edge' restarted"):
        gate("cpu_per_request[edge] < 1ms").measure(Endpoint("http://c/", Probe(40.0, 1, fail_at=2)), rate=100)


def test_without_a_cost_budget_an_unreadable_probe_is_a_note_not_an_invalid_round() -> None:
    g = gate("rps > 10", rounds=3)
    m = g.measure(Endpoint("http://c/", Probe(40.0, 1, fail_at=2)))
    assert len(m.candidate.rounds) == 3 and m.candidate.rounds[1].system is None
    assert any("system-under-test costs not recorded" in n for n in g.notes)


def test_a_cpu_budget_on_closed_loop_rounds_is_warned_about() -> None:
    g = gate("cpu_per_request[edge] < 1ms")
    g.measure(Endpoint("http://c/", Probe(40.0, 1)))
    (outcome,) = g.finish()
    assert any("closed-loop rounds" in n and "fixed rate below the knee" in n for n in outcome.notes)
    g = gate("cpu_per_request[edge] < 1ms")
    g.measure(Endpoint("http://c/", Probe(40.0, 1)), rate=1000)
    assert not any("closed-loop" in n for o in g.finish() for n in o.notes)


# ----- reports -------------------------------------------------------------------------
def test_reports_carry_per_node_costs(tmp_path) -> None:
    from pytest_netperf.report.plots import plot_system_costs
    from pytest_netperf.report.system_costs import SYSTEM_FACT, costs_fact, costs_json

    rounds = [replace(make_round(rps=1000.0), system=costs(40_000_000 + i * 1_000_000)) for i in range(3)]
    fact = costs_fact(rounds)
    assert fact.startswith("edge 41us CPU/request, 0.041 cores, 10MiB; envoy-1 2us CPU/request"), fact
    assert costs_json(rounds)["edge"]["mem_peak_bytes"] == 12 * MIB
    assert costs_fact([make_round()]) == ""  # a plain URL target: nothing to say
    g = gate("cpu_per_request[edge] < 1ms", rounds=3)
    g.measure(Endpoint("http://c/", Probe(40.0, 1)), rate=1000)
    from pytest_netperf.report.rows import series_facts

    assert "edge 40" in series_facts(g.measurements[0])["candidate"][SYSTEM_FACT]
    png = plot_system_costs({"candidate": rounds, "reference": rounds}, tmp_path / "s.png", "t")
    assert png is not None and png.read_bytes().startswith(b"\x89PNG")
    assert plot_system_costs({"candidate": [make_round()]}, tmp_path / "none.png") is None


def test_stored_baselines_keep_the_costs_and_name_a_corrupt_one(tmp_path) -> None:
    import json
    from pathlib import Path

    from pytest_netperf.baseline.model import Baseline, SeriesRecord, dumps, loads
    from pytest_netperf.errors import BaselineError

    rounds = [replace(make_round(), system=costs(7_000_000), completed_total=5000) for _ in range(3)]
    stored = Baseline("t", {"candidate": SeriesRecord(rounds=rounds)}, "2026-11-23T00:00:00Z", None, "x", None)
    text = dumps(stored)
    assert loads(text, Path("b.json")).values("candidate", "cpu_per_request[edge]") == [7000.0] * 3
    doc = json.loads(text)
    doc["series"]["candidate"]["rounds"][0]["system"]["nodes"]["edge"]["cpu_ns"] = "lots"
    with pytest.raises(BaselineError, match=r"b.json: series.candidate.rounds\[0\].system.nodes.edge.cpu_ns"):
        loads(json.dumps(doc), Path("b.json"))
