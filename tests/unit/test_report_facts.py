"""Each row's facts (images, resources, driver cores) in the rows, Markdown, JSON and terminal."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_netperf.report.json_report import write_json
from pytest_netperf.report.markdown import markdown
from pytest_netperf.report.rows import ReportRow, as_rows, describe_facts
from pytest_netperf.report.session_report import SessionReport
from pytest_netperf.report.terminal import terminal_table

GW = "tests/test_gateway.py::test_overhead[nginx]"
CANDIDATE = {
    "images": "edge=pytest-netperf/nginx:local (for nginx:1.27), app=pytest-netperf/echo:local",
    "resources": "edge cpus 1, cpuset 2-3",
    "driver cores": "0-1",
}
REFERENCE = {
    "images": "edge=pytest-netperf/nginx:local (for nginx:1.25), app=pytest-netperf/echo:local",
    "resources": "edge cpus 1, cpuset 2-3",
    "driver cores": "0-1",
}


def row(facts: dict[str, dict[str, str]], test_id: str = GW, budget: str = "rps >= 0.95x reference") -> ReportRow:
    return ReportRow(test_id, budget, "reference", "-1.2%", "[-2.0%, -0.4%]", "PASS", 5, [], "rust", "host", {}, facts)


def test_describe_facts_one_series_is_unlabelled() -> None:
    assert describe_facts({"candidate": {"images": "a=b", "driver cores": "0"}}) == ["images: a=b; driver cores: 0"]


def test_describe_facts_labels_candidate_and_reference_when_they_differ() -> None:
    assert describe_facts({"candidate": CANDIDATE, "reference": REFERENCE}) == [
        "candidate: images: edge=pytest-netperf/nginx:local (for nginx:1.27), app=pytest-netperf/echo:local; "
        "resources: edge cpus 1, cpuset 2-3; driver cores: 0-1",
        "reference: images: edge=pytest-netperf/nginx:local (for nginx:1.25), app=pytest-netperf/echo:local; "
        "resources: edge cpus 1, cpuset 2-3; driver cores: 0-1",
    ]


def test_describe_facts_says_equal_facts_once_for_both_and_names_a_series_without_any() -> None:
    same = {"driver cores": "0"}
    assert describe_facts({"candidate": same, "reference": same}) == ["candidate and reference: driver cores: 0"]
    assert describe_facts({"candidate": same, "reference": {}}) == ["candidate: driver cores: 0", "reference: none"]
    assert describe_facts({}) == [] and describe_facts({"candidate": {}}) == []


def test_facts_round_trip_through_the_dict_rows_travel_as() -> None:
    original = row({"candidate": CANDIDATE, "reference": REFERENCE})
    doc = json.loads(json.dumps(original.to_dict()))
    assert doc["facts"] == {"candidate": CANDIDATE, "reference": REFERENCE}
    assert ReportRow.from_dict(doc) == original
    # Rows from an older worker (no facts key) still load.
    del doc["facts"]
    assert ReportRow.from_dict(doc).facts == {}


def test_json_report_has_the_facts_of_each_row(tmp_path: Path) -> None:
    rows = [row({"candidate": CANDIDATE, "reference": REFERENCE}), row({}, budget="p90 < 5ms")]
    doc = json.loads(write_json(rows, {}, tmp_path / "netperf.json").read_text())
    assert doc["rows"][0]["facts"] == {"candidate": CANDIDATE, "reference": REFERENCE}
    assert doc["rows"][1]["facts"] == {}


def test_markdown_prints_the_facts_with_the_row_details() -> None:
    md = markdown([row({"candidate": CANDIDATE, "reference": REFERENCE})])
    lines = md.splitlines()
    details = lines[lines.index("<details><summary>Details</summary>") :]
    assert details[2:6] == [
        f"- **PASS** `{GW}` — `rps >= 0.95x reference`",
        "  - driver rust on host",
        "  - candidate: images: edge=pytest-netperf/nginx:local (for nginx:1.27), app=pytest-netperf/echo:local; "
        "resources: edge cpus 1, cpuset 2-3; driver cores: 0-1",
        "  - reference: images: edge=pytest-netperf/nginx:local (for nginx:1.25), app=pytest-netperf/echo:local; "
        "resources: edge cpus 1, cpuset 2-3; driver cores: 0-1",
    ]


def test_markdown_escapes_facts() -> None:
    md = markdown([row({"candidate": {"images": "app=<none>"}})])
    assert "  - images: app=&lt;none&gt;" in md.splitlines()


def test_terminal_shows_facts_only_when_verbose() -> None:
    with_facts = [
        row({"candidate": CANDIDATE, "reference": REFERENCE}),
        row({"candidate": CANDIDATE, "reference": REFERENCE}, budget="p90 < 5ms"),
    ]
    without = [row({}), row({}, budget="p90 < 5ms")]
    assert terminal_table(with_facts) == terminal_table(without)  # the default output is unchanged
    verbose = terminal_table(with_facts, verbose=True)
    lines = verbose.splitlines()
    start = lines.index("facts:")
    facts_block = " ".join(line.strip() for line in lines[start + 1 : -1])
    assert lines[-1] == "2 passed, 0 failed, 0 inconclusive, 0 invalid, 0 new"
    assert facts_block.count(f"{GW}: candidate: images:") == 1  # said once per test, not per budget
    assert f"{GW}: reference: images: edge=pytest-netperf/nginx:local (for nginx:1.25)" in facts_block
    assert "driver cores: 0-1" in facts_block
    assert all(len(line) <= 120 for line in lines)
    assert terminal_table(without, verbose=True) == terminal_table(without)


def test_session_report_passes_verbose_to_the_table() -> None:
    report = SessionReport()
    report.add([row({"candidate": {"driver cores": "0"}}).to_dict()])
    assert "facts:" not in report.terminal_table()
    assert f"  {GW}: driver cores: 0" in report.terminal_table(verbose=True).splitlines()
    assert as_rows(report.rows)[0].facts == {"candidate": {"driver cores": "0"}}
