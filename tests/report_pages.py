"""The rows and plots of a small HTML report: one failing and one passing test, for the report
tests (tests/unit/test_html_report.py and tests/integration/test_html_report_chromium.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from netperf_rounds import make_rounds

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.report.plots import STORED_SERIES, write_plots
from pytest_netperf.report.rows import ReportRow

FAILING = "examples/test_gw.py::test_throughput[<nginx>]"
PASSING = "examples/test_gw.py::test_latency"


def rows() -> list[ReportRow]:
    return [
        ReportRow(PASSING, "p50_added <= 1ms", "reference", "83us", "[58us, 109us]", "PASS", 4),
        ReportRow(
            FAILING, "rps >= 0.8x baseline", "baseline", "0.62x", "[0.58x, 0.66x]", "FAIL", 4, ["keep-alive <dropped>"]
        ),
        ReportRow(FAILING, "errors == 0", "absolute", "0", "[0, 0]", "PASS", 4),
    ]


def plots(folder: Path) -> dict[str, list[str]]:
    series = {
        "candidate": make_rounds(4, rps=6_200.0),
        f"candidate ({STORED_SERIES})": make_rounds(5, rps=10_000.0),
    }
    budgets = [parse_budget("rps >= 0.8x baseline"), parse_budget("p99 < 2ms")]
    return {FAILING: [str(p) for p in write_plots(folder, FAILING, series, budgets=budgets)]}


def chromium() -> str | None:
    """A headless-capable Chromium on PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def screenshot(browser: str, page: Path, shot: Path, width: int, height: int) -> None:
    """Headless Chromium's screenshot of ``page`` at ``width`` x ``height`` into ``shot``."""
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            f"--window-size={width},{height}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
