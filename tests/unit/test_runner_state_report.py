"""The runner's state beside every verdict, from a gate's rounds to each report: the note of
every row (terminal, Markdown, HTML), the JSON object per row and per measurement, and the
line of a failing gate's text. The gate's rounds use a synthetic driver and a fake machine
whose counters advance by the same amount around each round."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from netperf_rounds import make_round

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure import runner_watch
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.report.failure import FailureContext, failure_text
from pytest_netperf.report.html import html_report
from pytest_netperf.report.json_report import write_json
from pytest_netperf.report.markdown import markdown
from pytest_netperf.report.rows import ReportRow, invalid_rows, measurement_summary, row_for_outcome
from pytest_netperf.report.terminal import terminal_table
from pytest_netperf.results.model import ClientHealth, RoundResult
from pytest_netperf.runtime.machine_load import CpuTicks, MachineSample

TEST = "tests/test_gw.py::test_gateway"
HEAD, REF = "http://10.0.0.2/", "http://10.0.0.3/"
#: Each round: 1 s on 2 CPUs, 120 of 200 ticks in processes, 2 stolen; the driver used 0.4 s.
#: The targets are plain URLs (no costs to read): the note says their servers count as other processes.
LINE = (
    "runner: 2 cores, steal 1.0%, load 3.1, other processes 0.80 cores (max 0.80) during the rounds; "
    "with a plain URL target ({0} of {0} rounds) a server on this machine counts among them"
)


class Driver:
    name = "rust"
    cpus = None

    def __init__(self) -> None:
        self.jitter = itertools.cycle((0.97, 1.03, 1.0, 0.99, 1.02))

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        result = make_round(rps=(8_000.0 if url == HEAD else 10_000.0) * next(self.jitter), url=url)
        result.client = ClientHealth(cpu_user_s=0.3, cpu_sys_s=0.1)
        return result


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine whose counters advance by 1 s (200 ticks of 2 CPUs) between any two readings."""
    calls = itertools.count()

    def sample() -> MachineSample:
        n = next(calls)
        cpu = CpuTicks(120 * n, 0, 0, 78 * n, 0, 0, 0, 2 * n, 2)
        return MachineSample(at=float(n), wall=1_000.0 + n, cpu=cpu, load_1m=3.1)

    monkeypatch.setattr(runner_watch, "read_sample", sample)


def gate(budgets: list[str]) -> Gate:
    driver = Driver()
    return Gate(
        TEST,
        [parse_budget(text) for text in budgets],
        GateSettings(rounds_min=4, rounds_max=4, round_batch=2, round_duration_s=0.1, warmup_s=0.0),
        driver_factory=lambda name, runner: driver,
        progress=lambda line: None,
    )


def test_every_row_carries_the_runner_note_and_object(machine: None, tmp_path: Path) -> None:
    g = gate(["rps >= 0.95x reference", "rps >= 5000"])
    g.compare(HEAD, REF, connections=8)
    rows = [row_for_outcome(o, g) for o in g.finish()]
    assert [r.verdict for r in rows] == ["FAIL", "PASS"]
    line = LINE.format(8)  # candidate and reference, 4 rounds each
    for row in rows:
        assert row.notes[-1] == line
        assert row.runner["rounds"] == 8 and row.runner["stack_rounds"] == 0
        assert row.runner["other_cores"] == pytest.approx(0.8) and row.runner["test_cores"] == pytest.approx(0.4)
        assert ReportRow.from_dict(json.loads(json.dumps(row.to_dict()))) == row

    summary = measurement_summary(g.measurements[0])
    assert summary["runner"] == rows[0].runner
    assert summary["series"]["candidate"]["rounds"][0]["runner"]["process_cores"] == pytest.approx(1.2)
    doc = json.loads(write_json(rows, {TEST: [summary]}, tmp_path / "r.json").read_text())
    assert doc["rows"][0]["runner"]["steal_share"] == pytest.approx(0.01)
    assert doc["results"][TEST][0]["runner"]["load_avg_1m"] == 3.1

    table = terminal_table(rows)
    assert f"[1] {line}" in " ".join(table.split())  # the rows' only note, said once (wrapped)
    assert "[2]" not in table
    assert line in markdown(rows) and line in html_report(rows)


def test_a_failing_gate_says_how_busy_the_runner_was(machine: None) -> None:
    g = gate(["rps >= 0.95x reference"])
    g.compare(HEAD, REF, connections=8)
    text = failure_text(g.finish(), "fail", FailureContext(measurements=g.measurements))
    assert text is not None and f"\n  {LINE.format(8)}\n" in text


def test_an_invalid_measurement_keeps_the_runner_of_the_rounds_measured(machine: None) -> None:
    g = gate(["rps >= 5000"])
    g.measure(HEAD, connections=8)
    rows = invalid_rows(g, "the target vanished")
    assert rows[0].notes == ["the target vanished", LINE.format(4)]
    assert rows[0].runner["rounds"] == 4


def test_rows_without_the_runner_have_no_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_watch, "read_sample", lambda: None)  # not Linux
    g = gate(["rps >= 5000"])
    g.measure(HEAD, connections=8)
    (row,) = [row_for_outcome(o, g) for o in g.finish()]
    assert row.notes == [] and row.runner == {}
    assert measurement_summary(g.measurements[0])["runner"] is None


def test_the_terminal_prints_the_runner_once_beside_each_rows_own_notes() -> None:
    line = LINE.format(8)
    rows = [
        ReportRow(TEST, "p50 < 1ms", "absolute", "1ms", "[1ms, 1ms]", "PASS", 4, [line]),
        ReportRow(TEST, "p90 < 1ms", "absolute", "2ms", "[2ms, 2ms]", "FAIL", 4, ["too slow", line]),
        ReportRow(TEST, "p99 < 1ms", "absolute", "", "", "NEW", 4, ["no baseline"]),
    ]
    table = terminal_table(rows, width=400).splitlines()
    assert [r.split()[-1] for r in table[2:5]] == ["[1]", "[1,2]", "[3]"]
    assert table[5:8] == [f"[1] {line}", "[2] too slow", "[3] no baseline"]
