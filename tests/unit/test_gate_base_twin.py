"""The gate with a base revision's twin (``--netperf-base``): budgets against ``base`` are judged
on the interleaved pairs of head and base rounds, a target without a twin at the base revision
is NEW with the reason, and a plain target falls back to the stored baseline.

Synthetic rounds from a driver that answers per URL (known throughput per side, 1% jitter).
"""

from __future__ import annotations

import itertools
from typing import Any, Optional

import pytest
from netperf_rounds import make_round

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.design import ALTERNATE, AUTO, TURNS
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.report.failure import FailureContext, failure_text, reference_names
from pytest_netperf.report.rows import row_for_outcome
from pytest_netperf.report.terminal import terminal_table
from pytest_netperf.results.model import RoundResult
from pytest_netperf.runtime.endpoints import Endpoint
from pytest_netperf.verdict.status import Status

HEAD, BASE, APP = "http://10.0.0.2/", "http://10.0.1.2/", "http://10.0.0.3/"


def Target(  # reads like the endpoint it builds
    url: str, base: Optional[Endpoint] = None, base_note: str = "", base_error: str = ""
) -> Endpoint:
    """An endpoint as the Compose stack hands it out: the driver on the host, nothing to probe."""
    return Endpoint(url, None, "host", base=base, base_note=base_note, base_error=base_error)


class SyntheticDriver:
    """Answers each URL with its own throughput; records the order of the rounds. Each URL
    has its own jitter, so two sides run at once (fine turns) draw the same values whichever
    of them starts first."""

    name = "rust"

    def __init__(self, rps: dict[str, float], order: list[str]) -> None:
        self.rps, self.order = rps, order
        steps = (0.99, 1.0, 1.01, 1.0)
        self.jitter = {url: itertools.cycle(steps[i % 4 :] + steps[: i % 4]) for i, url in enumerate(rps)}

    cpus = None  # not pinned

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        self.order.append(url)
        return make_round(rps=self.rps[url] * next(self.jitter[url]), url=url)


def gate(budgets: list[str], rps: dict[str, float], order: list[str], lookup: Any = None, design: str = AUTO) -> Gate:
    driver = SyntheticDriver(rps, order)
    return Gate(
        "t.py::test",
        [parse_budget(text) for text in budgets],
        GateSettings(rounds_min=4, rounds_max=8, round_duration_s=0.1, warmup_s=0.0, design=design),
        driver_factory=lambda name, runner: driver,
        baseline_lookup=lookup,
    )


@pytest.mark.parametrize("design", [AUTO, ALTERNATE])
def test_a_head_as_fast_as_its_base_passes_on_interleaved_pairs(design: str) -> None:
    order: list[str] = []
    g = gate(["rps >= 0.9x base"], {HEAD: 10_000.0, BASE: 10_000.0}, order, design=design)
    m = g.measure(Target(HEAD, base=Target(BASE)), connections=8)
    (outcome,) = g.finish()
    assert (outcome.status, outcome.reference_label) == (Status.PASS, "base")
    assert "paired" in outcome.verdict.method
    assert order.count(HEAD) == order.count(BASE) >= 4
    if design == AUTO:  # a closed loop of the Rust driver: both sides of a round at once, in fine turns
        assert m.design == TURNS
    else:  # whole rounds, ABBA
        assert m.design == ALTERNATE
        assert {tuple(order[i : i + 2]) for i in range(0, len(order), 2)} == {(HEAD, BASE), (BASE, HEAD)}


def test_a_head_at_half_its_base_fails_with_the_ratio() -> None:
    g = gate(["rps >= 0.9x base", "errors == 0"], {HEAD: 5_000.0, BASE: 10_000.0}, [])
    g.measure(Target(HEAD, base=Target(BASE)), connections=8)
    outcomes = {o.budget.text: o for o in g.finish()}
    failed = outcomes["rps >= 0.9x base"]
    assert failed.status is Status.FAIL and failed.verdict.estimate == pytest.approx(0.5, rel=0.05)
    assert outcomes["errors == 0"].status is Status.PASS  # absolute budgets judge the head alone
    assert "0.5" in failure_text(list(outcomes.values()), "fail")


def test_compare_measures_candidate_reference_and_base_twin() -> None:
    order: list[str] = []
    g = gate(["rps_loss <= 60%", "rps >= 0.9x base"], {HEAD: 4_000.0, BASE: 4_000.0, APP: 10_000.0}, order)
    g.compare(Target(HEAD, base=Target(BASE)), reference=Target(APP), connections=8)
    outcomes = {o.budget.text: o for o in g.finish()}
    assert outcomes["rps_loss <= 60%"].reference_label == "reference"
    assert outcomes["rps >= 0.9x base"].status is Status.PASS
    assert set(order) == {HEAD, BASE, APP}


def test_a_stack_missing_at_the_base_is_new_with_its_reason_even_with_a_stored_baseline() -> None:
    g = gate(["rps >= 0.9x base"], {HEAD: 10_000.0}, [], lookup=lambda key, label, metric: [1.0, 1.0, 1.0])
    g.measure(Target(HEAD, base_note="infra/compose.yml does not exist at the base revision main"), connections=8)
    (outcome,) = g.finish()
    assert outcome.status is Status.NEW
    assert outcome.notes == ["infra/compose.yml does not exist at the base revision main"]


def test_a_base_stack_that_failed_to_start_makes_its_budgets_invalid_never_pass() -> None:
    """Even with a stored baseline the head would pass against, the base budgets are INVALID
    with the base side's log; absolute budgets still judge the head."""
    error = "the base revision's stack (main, abc1234) did not come up: service 'edge' exited (1)\nnginx: [emerg]"
    g = gate(["rps >= 0.9x base", "errors == 0"], {HEAD: 10_000.0}, [], lookup=lambda key, label, metric: [5_000.0] * 4)
    g.measure(Target(HEAD, base_error=error), connections=8)
    outcomes = {o.budget.text: o for o in g.finish()}
    invalid = outcomes["rps >= 0.9x base"]
    assert invalid.status is Status.INVALID
    assert "base side INVALID" in invalid.notes[0] and "nginx: [emerg]" in invalid.notes[0]
    assert outcomes["errors == 0"].status is Status.PASS
    assert "nginx: [emerg]" in (failure_text(list(outcomes.values()), "pass") or "")


def test_a_failed_base_side_names_the_base_revision_and_says_its_log_once() -> None:
    """#27 item 6: the budgets were to be judged against the base revision, not the stored
    baseline; with two of them the base side's log is said once, in the failure text and in
    the terminal table's footnotes."""
    error = "the base revision's stack (main, abc1234) did not come up: service 'edge' exited (1)\nnginx: [emerg]"
    g = gate(["rps >= 0.9x base", "p90 <= 1.2x base", "errors == 0"], {HEAD: 10_000.0}, [])
    g.measure(Target(HEAD, base_error=error), connections=8)
    outcomes = g.finish()
    base_rows = [o for o in outcomes if o.budget.comparison == "baseline"]
    assert [(o.status, o.reference_label) for o in base_rows] == [(Status.INVALID, "base")] * 2
    text = failure_text(outcomes, "fail", FailureContext(references=reference_names(g.measurements, "c", "main")))
    assert text is not None and text.count("nginx: [emerg]") == 1, text
    assert "vs the base revision main, whose stack did not start" in text and "stored baseline" not in text
    rows = [row_for_outcome(o, g) for o in outcomes]
    assert terminal_table(rows).count("did not come up") == 1


def test_a_target_without_a_twin_is_judged_against_the_stored_baseline() -> None:
    g = gate(["rps >= 0.9x base"], {HEAD: 5_000.0}, [], lookup=lambda key, label, metric: [10_000.0] * 4)
    g.measure(HEAD, connections=8)
    (outcome,) = g.finish()
    assert (outcome.status, outcome.reference_label) == (Status.FAIL, "baseline")
    assert "paired" not in outcome.verdict.method
