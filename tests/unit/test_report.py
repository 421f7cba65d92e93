"""Reports: terminal table, JSON, Markdown, GitHub step summary, plots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from netperf_rounds import make_rounds

from pytest_netperf.budget.metrics import format_metric as format_value
from pytest_netperf.report.json_report import write_json
from pytest_netperf.report.markdown import COMMENT_MARKER, append_github_step_summary, markdown, write_markdown
from pytest_netperf.report.plots import plot_latency_by_depth, plot_rounds, write_plots
from pytest_netperf.report.rows import ReportRow, overall_verdict, summary_line
from pytest_netperf.report.terminal import shorten_test_id, terminal_table
from pytest_netperf.results.model import RoundResult

GW = "tests/scenarios/gateway/test_gateway_overhead.py::test_overhead[kong-c100]"
NEW_NOTE = "no stored baseline: recorded as NEW (update with --netperf-update-baseline)"


def rows() -> list[ReportRow]:
    return [
        ReportRow(
            GW,
            "rps >= 0.9 * reference",
            "reference http://172.18.0.3:8000/",
            "-9.4%",
            "[-11.2%, -7.5%]",
            "fail",
            9,
            ["Holm correction over 2 budgets: PASS -> FAIL", "reference had 3 errors (reset: 3)"],
            "rust",
            "host",
            {"estimate": 0.906, "p_value": 0.004, "method": "bootstrap ratio"},
        ),
        ReportRow(GW, "p90 <= reference + 1ms", "reference", "0.41 ms", "[0.33 ms, 0.52 ms]", "PASS", 9),
        ReportRow(
            "tests/test_modes.py::test_latency[dns]",
            "p50 < 1ms",
            "absolute",
            "0.71 ms",
            "[0.69 ms, 0.74 ms]",
            "INCONCLUSIVE",
            15,
            ["inconclusive after 15 rounds; policy: fail"],
        ),
        ReportRow(
            "tests/test_modes.py::test_latency[dns] [hops=3]",
            "p90 <= baseline * 1.1",
            "baseline",
            "",
            "",
            "NEW",
            5,
            [NEW_NOTE],
        ),
        ReportRow(
            "tests/test_modes.py::test_throughput[l7-lb|x]",
            "error_rate <= 1%",
            "absolute",
            "5.80%",
            "[5.1%, 6.4%]",
            "INVALID",
            5,
            ["the load driver was saturated"],
        ),
    ]


# ------------------------------------------------------------------ rows and summary
def test_row_round_trips_through_dict_and_normalises_the_verdict() -> None:
    row = rows()[0]
    assert row.verdict == "FAIL"
    doc = json.loads(json.dumps(row.to_dict()))
    assert ReportRow.from_dict({**doc, "unknown_key": 1}) == row


def test_summary_line_counts_every_verdict() -> None:
    assert summary_line(rows()) == "1 passed, 1 failed, 1 inconclusive, 1 invalid, 1 new"
    assert summary_line([]) == "0 passed, 0 failed, 0 inconclusive, 0 invalid, 0 new"
    assert overall_verdict(rows()) == "FAIL"
    assert overall_verdict(rows()[1:2]) == "PASS"
    assert overall_verdict([]) is None


@pytest.mark.parametrize(
    ("metric", "value", "text"),
    [
        ("p90", 512_000.0, "512us"),
        ("p50", 1_250_000.0, "1.25ms"),
        ("p99", 800.0, "800ns"),
        ("rps", 11_612.4, "11,612 rps"),
        ("rps", 950.2, "950 rps"),
        ("rps", 12.34, "12.3 rps"),
        ("error_rate", 0.058, "5.8%"),
        ("sockets", 100.0, "100"),
        ("p50", None, "n/a"),
        ("p50", float("nan"), "n/a"),
    ],
)
def test_format_value(metric: str, value: float, text: str) -> None:
    assert format_value(metric, value) == text


# ------------------------------------------------------------------ terminal
@pytest.mark.parametrize(
    ("width", "expected"),
    [
        (80, GW),
        (50, "test_gateway_overhead.py::test_overhead[kong-c100]"),
        (30, "test_overhead[kong-c100]"),
        (15, "test_ov…g-c100]"),
    ],
)
def test_shorten_test_id_drops_directories_then_file_then_middle(width: int, expected: str) -> None:
    assert shorten_test_id(GW, width) == expected
    assert len(shorten_test_id(GW, width)) <= width


def test_shorten_test_id_keeps_the_measurement_suffix() -> None:
    assert shorten_test_id(GW + " [hops=3]", 33) == "test_overhead[kong-c100] [hops=3]"


def test_terminal_table_fits_120_columns_and_keeps_every_fact() -> None:
    table = terminal_table(rows())
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert lines[0].split() == [
        "test",
        "budget",
        "reference",
        "measured",
        "interval",
        "verdict",
        "rounds",
        "notes",
    ]
    assert lines[-1] == "1 passed, 1 failed, 1 inconclusive, 1 invalid, 1 new"
    for verdict in ("FAIL", "PASS", "INCONCLUSIVE", "NEW", "INVALID"):
        assert verdict in table
    # The gateway test is named once although it has two rows.
    assert table.count("test_overhead[kong-c100]") == 1
    # Notes are footnotes and never cut off.
    assert "[1] Holm correction over 2 budgets: PASS -> FAIL; reference had 3 errors (reset: 3)" in lines
    assert any(line.startswith("[3] no stored baseline") for line in lines)
    assert "--netperf-update-baseline)" in table


def test_terminal_table_without_rows() -> None:
    assert terminal_table([]) == "netperf: no budgets were evaluated"


def test_terminal_table_accepts_dict_rows() -> None:
    table = terminal_table([r.to_dict() for r in rows()[:2]])
    assert "1 passed, 1 failed" in table


# ------------------------------------------------------------------ JSON
def test_write_json_has_schema_rows_and_reloadable_results(tmp_path: Path) -> None:
    rounds = make_rounds(2)
    results = {GW: {"default": {"series": {"candidate": {"rounds": rounds}}}}}
    path = write_json(rows(), results, tmp_path / "out" / "netperf.json")
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 1
    assert doc["summary"] == {"FAIL": 1, "INVALID": 1, "INCONCLUSIVE": 1, "ACCEPTED": 0, "NEW": 1, "PASS": 1}
    assert [r["verdict"] for r in doc["rows"]] == ["FAIL", "PASS", "INCONCLUSIVE", "NEW", "INVALID"]
    assert doc["rows"][0]["raw"]["p_value"] == 0.004
    stored = doc["results"][GW]["default"]["series"]["candidate"]["rounds"]
    assert [RoundResult.from_dict(r) for r in stored] == rounds


# ------------------------------------------------------------------ Markdown
def test_markdown_summary_table_and_details() -> None:
    md = markdown(rows(), run_url="")
    lines = md.splitlines()
    # the verdict and the counts first, worst first (the comment's layout: test_markdown_comment.py)
    assert lines[0] == (
        "### ❌ netperf: 1 FAIL, 1 INVALID, 1 INCONCLUSIVE, 1 NEW, 1 PASS against the reference"
        " — **NO BASELINE** for 1 of them"
    )
    table = [line for line in lines if line.startswith("| ") and not line.startswith("| verdict")]
    assert len(table) == len(rows())
    # Worst first, every budget, folded under its own summary.
    assert [line.split(" | ")[0] for line in table] == [
        "| ❌ FAIL",
        "| ⚠️ INVALID",
        "| ❔ INCONCLUSIVE",
        "| 🆕 NEW",
        "| ✅ PASS",
    ]
    folded = lines.index("<details><summary>Every budget (5)</summary>")
    assert folded < lines.index(table[0]) < lines.index(table[4]) < lines.index("</details>", folded)
    # A pipe inside a cell is escaped, so every row has the same number of cells.
    assert "`tests/test_modes.py::test_throughput[l7-lb\\|x]`" in md
    assert {line.replace("\\|", "").count("|") for line in table} == {8}
    assert "<details><summary>Details</summary>" in md and md.rstrip().endswith("</details>\n\n" + COMMENT_MARKER)
    assert "  - driver rust on host; method bootstrap ratio; p = 0.004" in lines
    assert f"  - {NEW_NOTE}" in lines
    assert "PASS -&gt; FAIL" in md


def test_markdown_without_rows() -> None:
    md = markdown([], run_url="")
    assert md.splitlines()[0] == "### netperf: no budgets were evaluated"
    assert md.endswith(COMMENT_MARKER + "\n")


def test_write_markdown(tmp_path: Path) -> None:
    path = write_markdown(rows(), tmp_path / "netperf.md")
    assert path.read_text() == markdown(rows())


def test_github_step_summary_is_appended_only_when_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert append_github_step_summary("# x") is False
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert append_github_step_summary("# first") is True
    assert append_github_step_summary("# second\n") is True
    assert summary.read_text() == "earlier step\n# first\n# second\n"


# ------------------------------------------------------------------ plots
def _png_pixels(path: Path):
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return imread(path)


def test_rounds_plot_is_a_png_with_content(tmp_path: Path) -> None:
    series = {
        "candidate": make_rounds(5, rps=9000.0),
        "reference": make_rounds(5, rps=10_000.0, seed=9),
    }
    path = plot_rounds(series, tmp_path / "r.png", ("rps", "p90"), "t")
    pixels = _png_pixels(path)
    assert pixels.shape[0] > 300 and pixels.shape[1] > 600
    assert pixels[..., :3].std() > 0.05  # not a blank canvas


def test_percentile_curve_reads_each_point_as_a_query_of_its_own_would() -> None:
    """The curve is read in one pass over the counts; every point is the value a query of
    that percentile alone returns (the lowest one's too)."""
    import random

    from pytest_netperf.report.plots import _percentile_curve
    from pytest_netperf.results.histogram import new_histogram

    histogram = new_histogram()
    rng = random.Random(5)
    for _ in range(20_000):
        histogram.record_value(int(rng.lognormvariate(12.5, 0.6)))
    xs, ys = _percentile_curve(histogram, points=60)
    assert len(xs) == len(ys) == 61 and xs[0] == 1.0
    for odds, value in zip(xs, ys, strict=True):
        assert value == histogram.get_value_at_percentile(100.0 * (1.0 - 1.0 / odds)) / 1e6
    assert ys == sorted(ys) and ys[0] < ys[-1]


def test_depth_plot_needs_depth_series(tmp_path: Path) -> None:
    assert plot_latency_by_depth({"candidate": make_rounds(3)}, tmp_path / "d.png") is None
    series = {
        f"depth={d}/{label}": make_rounds(
            3, median_ns=400_000 + d * (900_000 if label == "sidecar" else 100_000), seed=d
        )
        for d in (0, 3, 5)
        for label in ("sidecar", "plain")
    }
    path = plot_latency_by_depth(series, tmp_path / "d.png")
    assert path is not None and _png_pixels(path)[..., :3].std() > 0.05


def test_write_plots_writes_every_applicable_plot(tmp_path: Path) -> None:
    pytest.importorskip(
        "pytest_netperf.results.histogram",
        reason="pytest_netperf.results.histogram (decode_histogram) is not there yet",
    )
    series = {f"hops={d}/candidate": make_rounds(3, median_ns=500_000 * (d + 1), seed=d) for d in (0, 3)}
    paths = write_plots(tmp_path / "report", GW, series)
    assert [p.name.rsplit("-", 1)[-1] for p in paths] == ["rounds.png", "latency.png", "depth.png"]
    for path in paths:
        assert _png_pixels(path)[..., :3].std() > 0.05
