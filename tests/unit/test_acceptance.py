"""Accepting a regression (issue #40): the grammar of an acceptance, the FAIL -> ACCEPTED
transition, what the reports count and what a baseline written from such a run records.

Pure functions and files in tmp_path; the git trailer of a real commit is read in
``integration/test_accept_trailer.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest
from netperf_rounds import make_rounds

from pytest_netperf.baseline.policy import BaselinePolicy, accepted_regression, not_a_baseline
from pytest_netperf.baseline.store import BaselineStore
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.cli import baseline as cli
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.model import Measurement, Series
from pytest_netperf.measure.outcomes import BudgetOutcome, accepted
from pytest_netperf.report.failure import failure_text
from pytest_netperf.report.html import html_report
from pytest_netperf.report.rows import ReportRow, counts, overall_verdict, summary_line
from pytest_netperf.revision.trailers import trailer_values
from pytest_netperf.verdict.acceptance import (
    Acceptance,
    AcceptanceError,
    accepted_status,
    names_test,
    parse_acceptance,
    same_budget,
)
from pytest_netperf.verdict.status import Status

OPTION = "--netperf-accept"
TEST = "tests/test_edge.py::test_edge_latency"
CLASS = "example-cpu-2c"


# ------------------------------------------------------------------ grammar
@pytest.mark.parametrize(
    ("text", "reason", "test", "budget"),
    [
        ("slower TLS handshake, see #88", "slower TLS handshake, see #88", None, None),
        # the GitHub job's value: a colon inside a word is no scope
        ("label netperf:accept-regression", "label netperf:accept-regression", None, None),
        # what stands before ': ' is a scope only when it is a test or a quoted budget
        ("JIRA-12: slower TLS", "JIRA-12: slower TLS", None, None),
        ("Reason: slower TLS", "Reason: slower TLS", None, None),
        ("  spaces\n  folded   ", "spaces folded", None, None),
        ("test_edge_latency: TLS 1.3 only", "TLS 1.3 only", "test_edge_latency", None),
        ("test_edge_latency[nginx]: x", "x", "test_edge_latency[nginx]", None),
        (
            "tests/test_edge.py::TestEdge::test_p50: why: because",
            "why: because",
            "tests/test_edge.py::TestEdge::test_p50",
            None,
        ),
        ("'p50 < 1ms': cold cache", "cold cache", None, "p50 < 1ms"),
        ('"p50<1ms": cold cache', "cold cache", None, "p50<1ms"),
        (
            "test_edge_latency 'rps >= 0.9x baseline': fewer workers",
            "fewer workers",
            "test_edge_latency",
            "rps >= 0.9x baseline",
        ),
    ],
)
def test_the_grammar(text: str, reason: str, test: Optional[str], budget: Optional[str]) -> None:
    acceptance = parse_acceptance(text, OPTION)
    assert acceptance.reason == reason
    assert acceptance.source == OPTION
    assert acceptance.test == test
    assert (acceptance.budget.text if acceptance.budget else None) == budget


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty; give the reason"),
        ("   ", "empty; give the reason"),
        ("test_edge_latency:", "no reason after the scope"),
        ("test_edge_latency 'p50 < 1ms':   ", "no reason after the scope"),
        ("'p50 < 1ms: cold cache", "unclosed ' around the budget"),
        ("'p5 < 1ms': cold cache", "'p5 < 1ms' in \"'p5 < 1ms': cold cache\" is not a budget: unknown metric 'p5'"),
        ("'p50 < 1ms' cold cache", "expected ': REASON' after the scope"),
    ],
)
def test_a_malformed_value_names_its_source_and_text(text: str, problem: str) -> None:
    source = "trailer Netperf-Accept of commit 1a2b3c4"
    with pytest.raises(AcceptanceError) as info:
        parse_acceptance(text, source)
    message = str(info.value)
    assert message.startswith(f"{source}: "), message
    assert problem in message
    if text.strip():
        assert repr(text.strip()) in message or text.strip() in message


def test_a_scope_names_a_test_by_function_name_or_node_id() -> None:
    assert names_test("test_edge_latency", TEST)
    assert names_test("test_edge_latency", TEST + "[nginx-c100]")
    assert names_test("test_edge_latency[nginx-c100]", TEST + "[nginx-c100]")
    assert not names_test("test_edge_latency[envoy]", TEST + "[nginx-c100]")
    assert not names_test("test_edge", TEST)
    assert names_test(TEST, TEST + "[nginx]")
    assert not names_test("tests/other.py::test_edge_latency", TEST)


def test_a_budget_scope_matches_by_meaning() -> None:
    assert same_budget(parse_budget("p50<1ms"), parse_budget("p50 < 1000us"))
    assert not same_budget(parse_budget("p50 < 1ms"), parse_budget("p50 <= 1ms"))


# ------------------------------------------------------------------ the transition
UNSCOPED = Acceptance("intended", OPTION)


@pytest.mark.parametrize("status", [Status.PASS, Status.INVALID, Status.INCONCLUSIVE, Status.NEW, Status.ACCEPTED])
def test_only_a_fail_is_accepted(status: Status) -> None:
    assert accepted_status(status, TEST, parse_budget("p50 < 1ms"), [UNSCOPED]) == (status, None)


def test_a_fail_becomes_accepted_by_the_first_acceptance_that_covers_it() -> None:
    budget = parse_budget("p50 < 1ms")
    other_test = parse_acceptance("test_other: x", "NETPERF_ACCEPT")
    other_budget = parse_acceptance("'rps >= 1k': y", "NETPERF_ACCEPT")
    this = parse_acceptance("test_edge_latency 'p50 < 1ms': z", "trailer Netperf-Accept of commit abc")
    assert accepted_status(Status.FAIL, TEST, budget, []) == (Status.FAIL, None)
    assert accepted_status(Status.FAIL, TEST, budget, [other_test, other_budget]) == (Status.FAIL, None)
    assert accepted_status(Status.FAIL, TEST, budget, [other_test, this, UNSCOPED]) == (Status.ACCEPTED, this)


def _outcome(text: str, status: Status, test_id: str = TEST) -> BudgetOutcome:
    return BudgetOutcome(test_id, "default", parse_budget(text), status, None, ["judged"])


def test_accepted_outcomes_carry_the_reason_and_the_source() -> None:
    outcomes = [
        _outcome("p50 < 1ms", Status.FAIL),
        _outcome("rps >= 1k", Status.INVALID),
        _outcome("p99 < 5ms", Status.INCONCLUSIVE),
        _outcome("errors == 0", Status.PASS),
    ]
    result = accepted(outcomes, [Acceptance("label netperf:accept-regression", "NETPERF_ACCEPT")])
    assert [o.status for o in result] == [Status.ACCEPTED, Status.INVALID, Status.INCONCLUSIVE, Status.PASS]
    assert result[0].notes == [
        "FAIL accepted as an intended regression by NETPERF_ACCEPT: label netperf:accept-regression",
        "judged",
    ]
    assert result[0].accepted_by is not None and result[1].accepted_by is None
    assert failure_text(result, "fail") is not None  # the INVALID still fails the test
    assert failure_text(accepted([_outcome("p50 < 1ms", Status.FAIL)], [UNSCOPED]), "fail") is None


def test_without_acceptance_nothing_changes() -> None:
    outcomes = [_outcome("p50 < 1ms", Status.FAIL)]
    assert [o.status for o in accepted(outcomes, [])] == [Status.FAIL]
    assert outcomes[0].notes == ["judged"]
    text = failure_text(outcomes, "fail")
    assert text is not None and "--netperf-accept 'REASON'" in text and "Netperf-Accept: REASON" in text


# ------------------------------------------------------------------ reports
def _row(verdict: str) -> ReportRow:
    return ReportRow(TEST, "p50 < 1ms", "absolute", "3ms", "[2ms, 4ms]", verdict, 3, ["why"])


def test_the_summary_counts_accepted_only_when_there_is_one() -> None:
    assert summary_line([_row("PASS")]) == "1 passed, 0 failed, 0 inconclusive, 0 invalid, 0 new"
    rows = [_row("PASS"), _row("ACCEPTED"), _row("ACCEPTED")]
    assert summary_line(rows) == "1 passed, 0 failed, 2 accepted, 0 inconclusive, 0 invalid, 0 new"
    assert counts(rows)["ACCEPTED"] == 2
    assert overall_verdict(rows) is Status.ACCEPTED
    assert overall_verdict([*rows, _row("FAIL")]) is Status.FAIL


def test_the_html_report_shows_an_accepted_row_open() -> None:
    page = html_report([_row("PASS"), _row("ACCEPTED")])
    assert '<tr class="ACCEPTED"><td class="v">ACCEPTED</td>' in page
    assert "<details id=" in page and ' open><summary class="ACCEPTED">ACCEPTED' in page
    assert ".ACCEPTED{" in page and "1 accepted" in page


def test_trailer_values_are_read_without_case() -> None:
    parsed = "Signed-off-by: A <a@example.com>\nNetperf-Accept: test_x: why\nnetperf-accept: all of it\n"
    assert trailer_values(parsed, "Netperf-Accept") == ["test_x: why", "all of it"]
    assert trailer_values("", "Netperf-Accept") == []


# ------------------------------------------------------------------ baselines
def _measurement() -> Measurement:
    series = Series("candidate", "http://127.0.0.1:8080/", "host", "rust", LoadShape(), rounds=make_rounds(3))
    return Measurement(key="default", candidate=series)


def _accepted_run() -> list[BudgetOutcome]:
    return accepted(
        [_outcome("p50 < 1ms", Status.FAIL), _outcome("errors == 0", Status.PASS)],
        [parse_acceptance("TLS 1.3 only", OPTION)],
    )


def test_a_run_whose_only_failures_are_accepted_may_be_the_baseline_and_says_so(tmp_path: Path) -> None:
    outcomes = _accepted_run()
    assert not_a_baseline(outcomes) is None
    why = accepted_regression(outcomes)
    assert why == "budget 'p50 < 1ms': FAIL accepted as an intended regression by --netperf-accept: TLS 1.3 only"
    store = BaselineStore(tmp_path / ".netperf", machine_class=CLASS)
    policy = BaselinePolicy(store, "new", update=True, speed=lambda: None)  # no accept_failed
    recorded = policy.record(TEST, [_measurement()], {}, tmp_path, outcomes=outcomes)
    path = policy.write(recorded)
    assert path is not None
    stored = store.load(TEST)
    assert stored is not None and stored.accepted_regression == why
    assert '"accepted_regression": "budget' in path.read_text()
    assert BaselinePolicy(store, "new", update=False, speed=lambda: None).records_first("tests/x.py::t", outcomes)


def test_a_run_without_acceptance_records_none(tmp_path: Path) -> None:
    outcomes = [_outcome("p50 < 1ms", Status.PASS)]
    assert accepted_regression(outcomes) is None
    store = BaselineStore(tmp_path / ".netperf", machine_class=CLASS)
    BaselinePolicy(store, "new", update=True, speed=lambda: None).write(
        BaselinePolicy(store, "new", update=True, speed=lambda: None).record(
            TEST, [_measurement()], {}, tmp_path, outcomes
        )
    )
    assert "accepted_regression" not in store.path_for(TEST).read_text()


def test_netperf_baseline_update_promotes_an_accepted_run_without_accept_failed(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / ".netperf", machine_class=CLASS)
    BaselinePolicy(store, "new", update=False, speed=lambda: None).record(
        TEST, [_measurement()], {}, tmp_path, outcomes=_accepted_run()
    )
    lines: list[str] = []
    assert cli.update(BaselineStore(store.directory), [TEST], False, out=lines.append) == 0
    assert any(line.startswith("updated ") for line in lines)
    assert "  from an accepted regression: budget 'p50 < 1ms': FAIL accepted" in "\n".join(lines)
    stored = store.load(TEST)
    assert stored is not None and stored.accepted_regression is not None
    assert "TLS 1.3 only" in stored.accepted_regression
