"""Simultaneous rounds on real containers (``--netperf-design simultaneous``): a head and a base
echo server, each its own container, are loaded at the same moment in every round (their
rounds start within a fraction of the round's length, read from the results file), an
unchanged pair passes and CPU burnt per request on head fails; the report says which design
the verdicts came from. A comparison of one container with itself alternates, with the reason.
Fine turns (``--netperf-design turns``, two closed loops): the same two containers share every
round in 10 ms slots, their drivers running at once, each side's rate per second of its own
slots; unchanged they pass, with head burning CPU they fail; closed loops whose requests queue
longer than 30% of a slot go on in alternating rounds with a note.
Real echo containers and the real Rust driver.
"""

from __future__ import annotations

import pytest
from docker_helpers import skip_without_images
from pytester_helpers import json_report, netperf_args

pytestmark = pytest.mark.docker

GATE = """
import dataclasses
import os

import pytest
from pytest_netperf.measure.targets import with_query
from pytest_netperf.topology import builders

BURN = os.environ.get("ECHO_BURN", "")


def echo(netperf_topology, name):
    return netperf_topology(dataclasses.replace(builders.echo_topology(), name=name)).endpoint("direct")


@pytest.mark.netperf("cpu_per_request[echo] <= 1.3x reference", "p90 <= 3x reference")
def test_head_vs_base(netperf, netperf_topology):
    head, base = echo(netperf_topology, "echo-head"), echo(netperf_topology, "echo-base")
    netperf.compare(with_query(head, burn=BURN) if BURN else head, reference=base, connections=4, rate=1000)


@pytest.mark.netperf("rps >= 0.8x reference")
def test_closed_loops(netperf, netperf_topology):
    head, base = echo(netperf_topology, "echo-head"), echo(netperf_topology, "echo-base")
    netperf.compare(with_query(head, burn=BURN) if BURN else head, reference=base, connections=8)


@pytest.mark.netperf("rps >= 0.8x reference")
def test_deep_queues(netperf, netperf_topology):
    # 8 connections to servers spending 1 ms a request: a queue of several ms on each side
    head, base = echo(netperf_topology, "echo-head"), echo(netperf_topology, "echo-base")
    netperf.compare(with_query(head, burn="1000us"), reference=with_query(base, burn="1000us"), connections=8)


@pytest.mark.netperf("cpu_per_request[echo] <= 1.3x reference")
def test_one_container_against_itself(netperf, netperf_topology):
    head = echo(netperf_topology, "echo-head")
    netperf.compare(head, reference=head, connections=4, rate=1000)
"""

RUN = netperf_args(6, 16, "0.5", "0.5", "--netperf-design=simultaneous", "--netperf-json=results.json", "-rA")
TURNS = netperf_args(6, 16, "0.5", "0.5", "--netperf-design=turns", "--netperf-json=results.json", "-rA")


@pytest.fixture(scope="module", autouse=True)
def _needs_docker_and_images() -> None:
    skip_without_images("echo")


def results(pytester: pytest.Pytester) -> dict:
    return json_report(pytester)


def rounds_started_together(doc: dict, test: str) -> list[tuple[dict, dict]]:
    """The candidate's and reference's rounds of ``test``, pair by pair, each pair's drivers
    started together: at one barrier, well within the 0.25 s warmup of a later round."""
    (measurement,) = doc["results"][f"test_design.py::{test}"]
    candidate = measurement["series"]["candidate"]["rounds"]
    reference = measurement["series"]["reference"]["rounds"]
    assert len(candidate) == len(reference) >= 6
    for cand, ref in zip(candidate, reference, strict=True):
        assert abs(cand["started_at"] - ref["started_at"]) < 0.2, (cand["started_at"], ref["started_at"])
    return list(zip(candidate, reference, strict=True))


def test_head_and_base_are_loaded_together_and_judged(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_design=GATE)
    same = pytester.runpytest_subprocess(*RUN, "-k", "head_vs_base")
    assert same.ret == 0, same.stdout.str()[-3000:]
    doc = results(pytester)
    assert {row["design"] for row in doc["rows"]} == {"simultaneous"}, doc["rows"]
    assert all("simultaneous" in row["facts"]["candidate"]["rounds"] for row in doc["rows"]), doc["rows"]
    pairs = rounds_started_together(doc, "test_head_vs_base")
    starts = [cand["started_at"] for cand, _ in pairs]
    assert all(b - a >= 0.5 for a, b in zip(starts, starts[1:], strict=False)), starts  # one round after another

    monkeypatch.setenv("ECHO_BURN", "40us")  # about three times the echo server's own CPU per request
    burnt = pytester.runpytest_subprocess(*RUN, "-k", "head_vs_base")
    assert burnt.ret == 1, burnt.stdout.str()[-3000:]
    rows = {row["budget"]: row for row in results(pytester)["rows"]}
    failed = rows["cpu_per_request[echo] <= 1.3x reference"]
    assert failed["verdict"] == "FAIL" and failed["design"] == "simultaneous", failed


def test_one_container_against_itself_alternates_and_says_why(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_design=GATE)
    result = pytester.runpytest_subprocess(*RUN, "-k", "against_itself")
    assert result.ret == 0, result.stdout.str()[-3000:]
    (row,) = results(pytester)["rows"]
    assert row["design"] == "alternate", row
    assert any("alternating rounds, not simultaneously" in note and "same containers" in note for note in row["notes"])


def test_two_closed_loops_share_each_round_in_fine_turns(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_design=GATE)
    same = pytester.runpytest_subprocess(*TURNS, "-k", "closed_loops")
    assert same.ret == 0, same.stdout.str()[-3000:]
    doc = results(pytester)
    (row,) = doc["rows"]
    assert row["design"] == "turns" and row["verdict"] == "PASS", row
    assert "fine turns" in row["facts"]["candidate"]["rounds"], row["facts"]
    for cand, ref in rounds_started_together(doc, "test_closed_loops"):
        # each side sent in half of the 0.5 s window: its rate is per second of its own slots
        assert 0.2 <= cand["duration_s"] <= 0.3 and 0.2 <= ref["duration_s"] <= 0.3, (cand, ref)

    monkeypatch.setenv("ECHO_BURN", "200us")  # many times the echo server's own CPU per request
    burnt = pytester.runpytest_subprocess(*TURNS, "-k", "closed_loops")
    assert burnt.ret == 1, burnt.stdout.str()[-3000:]
    (row,) = results(pytester)["rows"]
    assert row["verdict"] == "FAIL" and row["design"] == "turns", row
    assert row["raw"]["estimate"] < 0.5, row


def test_closed_loops_that_queue_longer_than_a_turn_go_on_in_alternating_rounds(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_design=GATE)
    result = pytester.runpytest_subprocess(*TURNS, "-k", "deep_queues")
    assert result.ret == 0, result.stdout.str()[-3000:]
    (row,) = results(pytester)["rows"]
    assert row["design"] == "alternate" and row["verdict"] == "PASS", row
    (note,) = [n for n in row["notes"] if n.startswith("measured in alternating rounds from round 1:")]
    assert "queue longer than fine turns of 10 ms allow" in note and "above 3 ms" in note, note
