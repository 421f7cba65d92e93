"""The measurement designs (measure/design.py): in ``simultaneous`` rounds every side of a
comparison is loaded at the same moment (their drivers' runs overlap in time), in
``alternate`` rounds one side at a time in ABBA order; sides that cannot run side by side
alternate with a note; a saturated side makes the whole round run again together; the
report says which design a verdict came from.

A driver that sleeps through each run and records when it ran, so overlap is measured on
the clock, not assumed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Optional

import pytest
from netperf_rounds import make_round

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import InvalidMeasurement, MarkerError
from pytest_netperf.measure.design import (
    ALTERNATE,
    AUTO,
    DESIGNS,
    SIMULTANEOUS,
    TURNS,
    choose_design,
    design_problem,
    fine_turns,
    queue_outlasts_turn,
    round_groups,
    run_side_by_side,
)
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.model import Series
from pytest_netperf.report.rows import DESIGN_FACT, describe_facts, row_for_outcome
from pytest_netperf.results.model import NodeCosts, RoundResult, SystemCosts
from pytest_netperf.runtime.endpoints import Endpoint
from pytest_netperf.settings import Settings
from pytest_netperf.verdict.status import Status

HEAD, BASE = "http://10.0.0.2/", "http://10.0.1.2/"
RUN_S = 0.05


class ClockedDriver:
    """Sleeps ``RUN_S`` per run and records (url, start, end); saturated on the listed run numbers."""

    cpus = None

    def __init__(
        self,
        name: str = "rust",
        rps: Optional[dict[str, float]] = None,
        saturated: frozenset = frozenset(),
        median_ns: float = 500_000.0,
    ):
        self.name = name
        self.rps = rps or {}
        self.median_ns = median_ns
        self.saturated = saturated
        self.runs: list[tuple[str, float, float]] = []
        self._lock = threading.Lock()
        self.calls = 0

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        with self._lock:
            self.calls += 1
            call = self.calls
        start = time.monotonic()
        time.sleep(RUN_S)
        end = time.monotonic()
        with self._lock:
            self.runs.append((url, start, end))
        rps = self.rps.get(url, 1000.0) * (1.0 + 0.01 * (call % 3))
        result = make_round(rps=rps, median_ns=self.median_ns, url=url)
        if call in self.saturated:
            health = replace(result.client, saturated=True, saturation_reasons=["schedule lag p99 9000 us"])
            result = replace(result, client=health)
        return result

    def overlapping_pairs(self) -> int:
        """Runs of different URLs whose time spans overlap."""
        count = 0
        for i, (url_a, start_a, end_a) in enumerate(self.runs):
            for url_b, start_b, end_b in self.runs[i + 1 :]:
                if url_a != url_b and start_a < end_b and start_b < end_a:
                    count += 1
        return count


def gate(driver: ClockedDriver, design: str, budgets: tuple[str, ...] = ("rps >= 0.9x reference",)) -> Gate:
    settings = GateSettings(rounds_min=4, rounds_max=4, round_duration_s=0.1, warmup_s=0.0, design=design)
    return Gate("t.py::test", [parse_budget(b) for b in budgets], settings, driver_factory=lambda n, r: driver)


def test_simultaneous_rounds_load_both_sides_at_the_same_moment() -> None:
    driver = ClockedDriver()
    g = gate(driver, SIMULTANEOUS)
    m = g.compare(HEAD, BASE)
    assert m.design == SIMULTANEOUS and len(m.candidate.rounds) == len(m.reference.rounds) == 4
    assert driver.overlapping_pairs() == 4  # each round's two runs overlap, no run overlaps another round's
    (outcome,) = g.finish()
    assert outcome.status is Status.PASS


def test_alternating_rounds_never_overlap_and_keep_the_abba_order() -> None:
    driver = ClockedDriver()
    m = gate(driver, ALTERNATE).compare(HEAD, BASE)
    assert m.design == ALTERNATE and driver.overlapping_pairs() == 0
    assert [url for url, _, _ in driver.runs] == [BASE, HEAD, HEAD, BASE, BASE, HEAD, HEAD, BASE]


def test_a_regression_is_judged_the_same_way_in_simultaneous_rounds() -> None:
    driver = ClockedDriver(rps={HEAD: 500.0, BASE: 1000.0})
    g = gate(driver, SIMULTANEOUS)
    g.compare(HEAD, BASE)
    (outcome,) = g.finish()
    assert outcome.status is Status.FAIL and outcome.verdict.estimate == pytest.approx(0.5, rel=0.05)


def test_the_base_twin_is_loaded_beside_head() -> None:
    driver = ClockedDriver()
    g = gate(driver, SIMULTANEOUS, ("rps >= 0.9x base",))
    m = g.measure(Endpoint(HEAD, None, "host", base=Endpoint(BASE, None, "host")))
    assert m.design == SIMULTANEOUS and driver.overlapping_pairs() == 4
    (outcome,) = g.finish()
    row = row_for_outcome(outcome, g)
    assert row.design == SIMULTANEOUS
    assert any(DESIGN_FACT + ": simultaneous" in line for line in describe_facts(row.facts)), row.facts


def test_a_single_side_has_no_design_in_its_row() -> None:
    driver = ClockedDriver()
    g = gate(driver, SIMULTANEOUS, ("rps > 10",))
    g.measure(HEAD)
    (outcome,) = g.finish()
    row = row_for_outcome(outcome, g)
    assert row.design == "" and DESIGN_FACT not in row.facts.get("candidate", {})


def test_a_saturated_side_runs_the_whole_round_again_together() -> None:
    driver = ClockedDriver(saturated=frozenset({3}))  # one side of round 2
    g = gate(driver, SIMULTANEOUS)
    m = g.compare(HEAD, BASE)
    assert driver.calls == 10 and len(m.candidate.rounds) == 4
    assert driver.overlapping_pairs() == 5
    (outcome,) = g.finish()
    assert any("(round 2) measured again: the load driver was saturated" in n for n in outcome.notes)


def test_a_side_saturated_on_every_attempt_together_and_alone_is_invalid() -> None:
    driver = ClockedDriver(saturated=frozenset({3, 5, 7, 9, 10, 11}))  # round 2: 3 attempts together, 3 alone
    g = gate(driver, SIMULTANEOUS)
    m = g.compare(HEAD, BASE)
    assert m.design_note.startswith("measured in alternating rounds from round 2")
    (outcome,) = g.finish()
    assert outcome.status is Status.INVALID
    assert "(round 2): the load driver was saturated (its own CPU was the limit)" in outcome.notes[0]


def test_the_locust_driver_alternates_and_says_why() -> None:
    driver = ClockedDriver(name="locust")
    g = gate(driver, SIMULTANEOUS)
    m = g.compare(HEAD, BASE)
    assert m.design == ALTERNATE and driver.overlapping_pairs() == 0
    (outcome,) = g.finish()
    assert any("alternating rounds, not simultaneously: the locust driver" in n for n in outcome.notes)


class SharedProbe:
    nodes = ("echo",)


def side(label: str, url: str, costs: object, driver: str = "rust") -> Series:
    return Series(label, url, "host", driver, LoadShape(), costs=costs)  # type: ignore[arg-type]


def test_sides_on_the_same_containers_alternate_only_when_costs_are_judged() -> None:
    probe = SharedProbe()
    shared = [side("candidate", HEAD + "?burn=1us", probe), side("reference", HEAD, probe)]
    assert "same containers" in (design_problem(shared, reads_costs=True) or "")
    assert design_problem(shared, reads_costs=False) is None
    apart = [side("candidate", HEAD, SharedProbe()), side("reference", BASE, SharedProbe())]
    assert design_problem(apart, reads_costs=True) is None
    assert design_problem(shared[:1], reads_costs=True) is None


def test_run_side_by_side_starts_together_keeps_order_and_raises_after_all_finished() -> None:
    finished: list[str] = []

    def slow() -> str:
        time.sleep(0.1)
        finished.append("slow")
        return "slow"

    def fails() -> str:
        raise InvalidMeasurement("side b failed")

    started = time.monotonic()
    assert run_side_by_side([slow, slow]) == ["slow", "slow"]
    assert time.monotonic() - started < 0.19  # together, not one after the other
    with pytest.raises(InvalidMeasurement, match="side b failed"):
        run_side_by_side([slow, fails])
    assert finished.count("slow") == 3  # the slow side was waited for before the failure surfaced


def test_an_unknown_design_is_a_clear_error_in_settings_and_marker() -> None:
    assert set(DESIGNS) == {AUTO, ALTERNATE, SIMULTANEOUS, TURNS}
    with pytest.raises(ValueError, match="design"):
        Settings.from_mapping({"design": "sideways"})
    assert Settings.from_mapping({"design": "simultaneous"}).gate_view().design == SIMULTANEOUS
    from pytest_netperf.plugin.markers import MarkerOptions, _check

    with pytest.raises(MarkerError, match=r"design='sideways': expected one of"):
        _check(MarkerOptions(design="sideways"))


def labels(groups: list[list[Series]]) -> list[list[str]]:
    return [[side.label for side in group] for group in groups]


def test_auto_loads_together_only_a_target_and_its_base_twin_on_containers_of_their_own() -> None:
    head, base = side("candidate", HEAD, SharedProbe()), side("base", BASE, SharedProbe())
    assert labels(round_groups(AUTO, [head, base], True, auto_together=True)[0]) == [["candidate", "base"]]
    # two systems compared with each other (host path vs container path, two topologies)
    other = side("reference", BASE, SharedProbe())
    assert labels(round_groups(AUTO, [head, other], True, auto_together=False)[0]) == [["candidate"], ["reference"]]
    probe = SharedProbe()  # one target at two revisions, but on the same containers: never together
    same = [side("candidate", HEAD, probe), side("base", BASE, probe)]
    assert labels(round_groups(AUTO, same, False, auto_together=True)[0]) == [["candidate"], ["base"]]
    plain = [side("candidate", HEAD, None), side("base", BASE, None)]  # servers the gate cannot see
    assert labels(round_groups(AUTO, plain, False, auto_together=True)[0]) == [["candidate"], ["base"]]
    locust = [side("candidate", HEAD, SharedProbe(), "locust"), side("base", BASE, SharedProbe(), "locust")]
    assert labels(round_groups(AUTO, locust, False, auto_together=True)[0]) == [["candidate"], ["base"]]
    # never some together and some apart: compare() under --netperf-base alternates all three
    twin = [*same, side("base", HEAD.replace("0.0", "0.1"), SharedProbe())]
    groups, note = round_groups(AUTO, twin, True, auto_together=False)
    assert labels(groups) == [["candidate"], ["base"], ["base"]] and note == ""


def test_explicit_designs() -> None:
    head, base = side("candidate", HEAD, SharedProbe()), side("reference", BASE, SharedProbe())
    assert labels(round_groups(ALTERNATE, [head, base], reads_costs=True)[0]) == [["candidate"], ["reference"]]
    plain = [side("candidate", HEAD, None), side("reference", BASE, None)]
    assert labels(round_groups(SIMULTANEOUS, plain, reads_costs=False)[0]) == [["candidate", "reference"]]
    probe = SharedProbe()
    paths = [side("candidate", HEAD, probe), side("reference", BASE, probe)]
    groups, note = round_groups(SIMULTANEOUS, paths, reads_costs=True)
    assert labels(groups) == [["candidate"], ["reference"]] and "same containers" in note
    with pytest.raises(ValueError, match="unknown design 'sideways'"):
        round_groups("sideways", paths, reads_costs=False)


class StackProbe:
    """One stack's containers: a fixed CPU time per round (what the cgroups would say)."""

    nodes = ("edge",)

    def begin(self) -> StackProbe:
        return self

    def cancel(self) -> None:
        pass

    def end(self, served: int) -> SystemCosts:
        return SystemCosts({"edge": NodeCosts(cpu_ns=served * 20_000, mem_bytes=1, mem_peak_bytes=1)}, served, 0.1)


def test_measure_at_a_fixed_rate_loads_head_and_base_together_closed_loop_and_compare_alternate() -> None:
    driver = ClockedDriver()
    head_stack, base_stack = StackProbe(), StackProbe()
    app = Endpoint("http://10.0.0.3/", None, "host", costs=head_stack)
    edge = Endpoint(HEAD, None, "host", costs=head_stack, base=Endpoint(BASE, None, "host", costs=base_stack))
    g = gate(driver, AUTO, ("rps >= 0.9x base",))
    m = g.measure(edge, rate=1000)
    assert m.design == SIMULTANEOUS and driver.overlapping_pairs() == 4
    (outcome,) = g.finish()
    row = row_for_outcome(outcome, g)
    assert row.design == SIMULTANEOUS and row.facts["candidate"][DESIGN_FACT].startswith("simultaneous")
    assert row.facts["base"][DESIGN_FACT] == row.facts["candidate"][DESIGN_FACT]

    driver = TurnTakingDriver()  # closed loop: fine turns, each side has the cores in its own slots
    m = gate(driver, AUTO, ("rps >= 0.9x base",)).measure(edge)
    assert m.design == TURNS and {turn for _, turn, _ in driver.turns} == {"10ms"}

    driver = ClockedDriver()  # three sides: whole rounds in turns
    g = gate(driver, AUTO, ("rps >= 0.5x reference", "rps >= 0.9x base"))
    m = g.compare(edge, reference=app)
    assert m.design == ALTERNATE and driver.overlapping_pairs() == 0
    rows = {o.budget.text: row_for_outcome(o, g) for o in g.finish()}
    assert {row.design for row in rows.values()} == {ALTERNATE}
    assert rows["rps >= 0.9x base"].facts["candidate"][DESIGN_FACT].startswith("alternating")


class ContendedDriver(ClockedDriver):
    """Saturated whenever another run overlaps its own (two loads too many for the runner)."""

    def __init__(self) -> None:
        super().__init__()
        self.active = 0

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        with self._lock:
            self.active += 1
        try:
            time.sleep(RUN_S / 2)
            with self._lock:
                crowded = self.active > 1
            result = super().run(url, shape)
        finally:
            with self._lock:
                self.active -= 1
        if crowded:
            health = replace(result.client, saturated=True, saturation_reasons=["schedule lag p99 9000 us"])
            result = replace(result, client=health)
        return result


def test_sides_that_saturate_the_drivers_together_go_on_one_at_a_time() -> None:
    driver = ContendedDriver()
    g = gate(driver, SIMULTANEOUS)
    m = g.compare(HEAD, BASE)
    assert len(m.candidate.rounds) == len(m.reference.rounds) == 4
    assert not any(r.client.saturated for s in m.series() for r in s.rounds)
    assert m.design == ALTERNATE and [[s.label for s in group] for group in m.groups] == [["candidate"], ["reference"]]
    (outcome,) = g.finish()
    assert outcome.status is Status.PASS
    assert any(
        "measured in alternating rounds from round 1" in note and "saturated in 3 attempts" in note
        for note in outcome.notes
    ), outcome.notes


class RunnerHeldDriver(ClockedDriver):
    """Behind its timetable on the listed runs, waiting for CPUs something else held."""

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        result = super().run(url, shape)
        if result.client.saturated:
            health = replace(result.client, cpu_bound=False, saturation_kinds=["schedule"])
            result = replace(result, client=health)
        return result


class BusyStackProbe(StackProbe):
    """A stack that spends ``ns_per_request`` of CPU per request served."""

    def __init__(self, ns_per_request: int) -> None:
        self.ns_per_request = ns_per_request

    def end(self, served: int) -> SystemCosts:
        cpu = NodeCosts(cpu_ns=served * self.ns_per_request, mem_bytes=1, mem_peak_bytes=1)
        return SystemCosts({"edge": cpu}, served, RUN_S)


def measured_together_with_round_two_behind(ns_per_request: int) -> tuple[Gate, Series]:
    """A head and its base twin at a fixed rate (``auto``: together), whose drivers fall behind
    waiting for CPUs on every attempt at round 2 (calls 3-8), each stack spending ``ns_per_request``."""
    driver = RunnerHeldDriver(saturated=frozenset(range(3, 9)))
    base = Endpoint(BASE, None, "host", costs=BusyStackProbe(ns_per_request))
    head = Endpoint(HEAD, None, "host", costs=BusyStackProbe(ns_per_request), base=base)
    g = gate(driver, AUTO, ("p90 <= 1.1x base",))
    return g, g.measure(head, rate=1000)


def test_drivers_behind_on_a_busy_runner_keep_head_and_base_together() -> None:
    # the stacks spend next to nothing: the CPUs the drivers waited for were the runner's, and
    # taking turns would not give them back
    g, m = measured_together_with_round_two_behind(ns_per_request=1)
    assert m.design == SIMULTANEOUS and not m.design_note
    assert m.base is not None and set(m.candidate.disturbed) == set(m.base.disturbed) == {1}
    (outcome,) = g.finish()
    assert outcome.status is Status.PASS
    left_out = "1 of 4 round(s) left out of p90: the load driver was saturated (waiting for CPUs others held)"
    assert any(note.startswith(left_out) for note in outcome.notes), outcome.notes


def test_sides_whose_own_load_held_the_cores_go_on_one_at_a_time() -> None:
    # 5000 requests a round at 40 us each in a 50 ms round: the stacks held every core
    _, m = measured_together_with_round_two_behind(ns_per_request=40_000)
    assert m.design == ALTERNATE
    assert m.design_note.startswith("measured in alternating rounds from round 2")
    assert "waiting for CPUs others held" in m.design_note


class TurnTakingDriver(ClockedDriver):
    """A ClockedDriver that also records the turn flags each run was given."""

    def __init__(self, median_ns: float = 500_000.0) -> None:
        super().__init__(median_ns=median_ns)
        self.turns: list[tuple[str, object, object]] = []

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        with self._lock:
            self.turns.append((url, shape.extra.get("turn"), shape.extra.get("turn_side")))
        return super().run(url, shape)


def test_turns_share_each_round_of_two_closed_loops_in_fine_turns() -> None:
    driver = TurnTakingDriver()
    g = gate(driver, TURNS)
    m = g.compare(HEAD, BASE)
    assert m.design == TURNS and m.turn_s == pytest.approx(0.01)
    assert driver.overlapping_pairs() == 4  # both drivers run at once, each in its own slots
    assert {turn for _, turn, _ in driver.turns} == {"10ms"}
    sides = {url: [side for u, _, side in driver.turns if u == url] for url in (HEAD, BASE)}
    assert sides[HEAD] == ["0", "1", "0", "1"] and sides[BASE] == ["1", "0", "1", "0"]  # swapped each round
    (outcome,) = g.finish()
    assert outcome.status is Status.PASS
    assert row_for_outcome(outcome, g).design == TURNS


def test_a_queue_longer_than_30_percent_of_a_turn_goes_on_in_alternating_rounds() -> None:
    driver = TurnTakingDriver(median_ns=9_600_000.0)  # 32 connections at 300 us: a 9.6 ms queue
    g = gate(driver, TURNS)
    m = g.compare(HEAD, BASE)
    assert m.design == ALTERNATE and m.turn_s is None
    assert m.design_note.startswith("measured in alternating rounds from round 1: the closed loops' requests queue")
    assert "fine turns of 10 ms" in m.design_note and "above 3 ms" in m.design_note, m.design_note
    assert len(m.candidate.rounds) == len(m.reference.rounds) == 4  # the round in turns was measured again
    assert [turn for _, turn, _ in driver.turns][:2] == ["10ms", "10ms"]
    assert {turn for _, turn, _ in driver.turns[2:]} == {None}
    (outcome,) = g.finish()
    assert outcome.status is Status.PASS and row_for_outcome(outcome, g).design == ALTERNATE


def test_queue_outlasts_turn_names_the_sides_whose_median_latency_is_above_30_percent_of_a_slot() -> None:
    assert queue_outlasts_turn({"head": 0.0016, "base": 0.0029}, 0.01) is None
    why = queue_outlasts_turn({"head": 0.0016, "base": 0.0096}, 0.01)
    assert why is not None and "base 9.6 ms" in why and "head" not in why and "above 3 ms" in why
    assert queue_outlasts_turn({"head": 0.0096}, 0.05) is None


def test_a_fixed_rate_keeps_whole_rounds_and_leaves_the_flags_out() -> None:
    driver = TurnTakingDriver()
    g = gate(driver, TURNS)
    m = g.compare(HEAD, BASE, rate=500)
    assert m.design == ALTERNATE and driver.overlapping_pairs() == 0
    assert {turn for _, turn, _ in driver.turns} == {None}
    (outcome,) = g.finish()
    assert any("not in fine turns: a fixed-rate load keeps its timetable" in n for n in outcome.notes), outcome.notes
    driver = TurnTakingDriver()  # auto takes fine turns for two closed loops, silently whole rounds else
    assert gate(driver, AUTO).compare(HEAD, BASE).design == TURNS
    driver = TurnTakingDriver()
    g = gate(driver, AUTO)
    assert g.compare(HEAD, BASE, rate=500).design == ALTERNATE
    (outcome,) = g.finish()
    assert not any("fine turns" in n for n in outcome.notes), outcome.notes


def test_fine_turns_only_for_two_closed_loops_of_the_rust_driver() -> None:
    pair = [side("candidate", HEAD, SharedProbe()), side("reference", BASE, SharedProbe())]
    closed, fixed, h2 = LoadShape(), LoadShape(rate=1000.0), LoadShape(http="2")
    assert fine_turns(AUTO, pair, True, closed) == (True, "")  # auto takes them where possible
    assert fine_turns(AUTO, pair, True, fixed) == (False, "")  # ... and says nothing where not
    assert fine_turns(AUTO, [*pair, side("base", BASE, SharedProbe())], True, closed) == (False, "")
    assert fine_turns(TURNS, pair, True, closed) == (True, "")
    assert fine_turns(ALTERNATE, pair, True, closed) == (False, "")
    assert fine_turns(SIMULTANEOUS, pair, True, closed) == (False, "")
    turns, note = fine_turns(TURNS, pair, True, fixed)
    assert not turns and "fixed-rate load keeps its timetable" in note
    assert "HTTP/2" in fine_turns(TURNS, pair, True, h2)[1]
    locust = [side("candidate", HEAD, SharedProbe(), "locust"), side("reference", BASE, SharedProbe(), "locust")]
    assert "locust driver does not take fine turns" in fine_turns(TURNS, locust, True, closed)[1]
    three = [*pair, side("base", BASE, SharedProbe())]
    assert "not 3" in fine_turns(TURNS, three, True, closed)[1]
    probe = SharedProbe()  # two paths through one stack, with a cost budget: each would pay for both
    paths = [side("candidate", HEAD, probe), side("reference", BASE, probe)]
    assert "same containers" in fine_turns(TURNS, paths, True, closed)[1]
    assert fine_turns(AUTO, paths, True, closed) == (False, "")
    assert fine_turns(TURNS, paths, False, closed) == (True, "")


def test_choose_design_is_autos_whole_decision() -> None:
    """auto, in one call: fine turns for two closed loops; a base twin at a fixed rate together;
    alternating otherwise, silently; a design asked for by name that cannot be had says why."""
    head, twin = side("candidate", HEAD, SharedProbe()), side("base", BASE, SharedProbe())
    closed, fixed = LoadShape(), LoadShape(rate=1000.0)
    turns = choose_design(AUTO, [head, twin], True, closed, base_twin=True)
    assert labels(turns.groups) == [["candidate", "base"]] and turns.turn_s is not None and turns.note == ""
    together = choose_design(AUTO, [head, twin], True, fixed, base_twin=True)
    assert labels(together.groups) == [["candidate", "base"]] and together.turn_s is None and together.note == ""
    other = side("reference", BASE, SharedProbe())  # another system at a fixed rate: apart
    apart = choose_design(AUTO, [head, other], True, fixed, base_twin=False)
    assert labels(apart.groups) == [["candidate"], ["reference"]] and apart.turn_s is None and apart.note == ""
    asked = choose_design(TURNS, [head, other], True, fixed, base_twin=False)
    assert labels(asked.groups) == [["candidate"], ["reference"]] and asked.turn_s is None
    assert "not in fine turns: a fixed-rate load keeps its timetable" in asked.note
    probe = SharedProbe()
    paths = [side("candidate", HEAD, probe), side("reference", BASE, probe)]
    refused = choose_design(SIMULTANEOUS, paths, True, fixed, base_twin=False)
    assert labels(refused.groups) == [["candidate"], ["reference"]] and "same containers" in refused.note
