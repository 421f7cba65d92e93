"""The HTML report: one self-contained page, verdicts first, failures open, plots inline; and
what a headless Chromium renders of it (the table and the plots are on the screenshot)."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from netperf_rounds import make_rounds

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.report.html import html_report, write_html
from pytest_netperf.report.plots import STORED_SERIES, write_plots
from pytest_netperf.report.rows import ReportRow

FAILING = "examples/test_gw.py::test_throughput[<nginx>]"
PASSING = "examples/test_gw.py::test_latency"


class Page(HTMLParser):
    """What the tests look for: tags in order, images, open details, text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.images: list[str] = []
        self.details: list[tuple[str, bool]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append(tag)
        if tag == "img":
            self.images.append(found.get("src") or "")
        if tag == "details":
            self.details.append((found.get("id") or "", "open" in found))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


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


def test_the_page_leads_with_the_verdicts_worst_first_and_opens_failures_only(tmp_path: Path) -> None:
    page = Page()
    page.feed(html_report(rows(), plots(tmp_path), {"machine class": "amd-epyc-2c", "cpu_model": "AMD EPYC"}))
    text = " ".join(page.text)
    verdicts = text[text.index("Verdicts") :]
    assert page.tags.index("table") < page.tags.index("details")
    assert verdicts.index("FAIL") < verdicts.index("PASS")
    assert "amd-epyc-2c" in text and "1 failed" in text
    opened = dict(page.details)
    assert list(opened.values()) == [True, False]  # the failing test open, the passing one folded
    assert page.images and all(src.startswith("data:image/png;base64,") for src in page.images)


def test_the_measurements_of_a_test_share_its_section_and_its_plots(tmp_path: Path) -> None:
    node = "examples/test_sidecar.py::test_p90_per_depth"
    depth_rows = [
        ReportRow(f"{node} [depth={d}]", "p90_added <= 1ms per hop", "reference", "400us", "[300us, 500us]", "PASS", 4)
        for d in (3, 5)
    ]
    page = Page()
    page.feed(html_report(depth_rows, plots(tmp_path) | {node: plots(tmp_path)[FAILING]}))
    assert [anchor for anchor, _ in page.details] == ["t-examples-test-sidecar-py--test-p90-per-depth"]
    assert len(page.images) == len(plots(tmp_path)[FAILING])
    assert "[depth=3]" in " ".join(page.text) and "[depth=5]" in " ".join(page.text)


def test_every_text_is_escaped(tmp_path: Path) -> None:
    doc = html_report(rows(), {}, {}, notes=["a <script>note</script>"])
    assert "<nginx>" not in doc and "&lt;nginx&gt;" in doc
    assert "<script>" not in doc and "keep-alive &lt;dropped&gt;" in doc


def test_a_plot_that_cannot_be_read_is_named_not_fatal(tmp_path: Path) -> None:
    doc = html_report(rows(), {FAILING: [str(tmp_path / "gone.png")]})
    assert "gone.png not readable" in doc


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_headless_chromium_shows_the_table_and_the_plots(tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium on PATH: scripts/setup installs Debian's chromium package")
    from PIL import Image

    page = write_html(rows(), tmp_path / "report.html", plots(tmp_path / "plots"), {"machine class": "amd-epyc-2c"})
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            "--window-size=1280,1800",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 1800)
    pixels = image.load()
    height = image.size[1]

    def rows_with(colour: tuple[int, int, int]) -> list[int]:
        return [y for y in range(0, height, 2) if any(pixels[x, y] == colour for x in range(0, 1280, 4))]

    fail_rows = rows_with((0xFF, 0xD8, 0xD3))  # the FAIL row's background (.FAIL)
    pass_rows = rows_with((0xDA, 0xFB, 0xE1))  # the PASS rows' background (.PASS)
    assert fail_rows and pass_rows, "the verdict table is not on the screenshot"
    # The plots: matplotlib's default series colours, below the table.
    blue = [y for y in range(0, height, 2) if any(_near(pixels[x, y], (0x1F, 0x77, 0xB4)) for x in range(0, 1280, 3))]
    assert blue and min(blue) > min(fail_rows), "no plot under the table"


def _near(pixel: tuple[int, int, int], colour: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 12 for a, b in zip(pixel, colour, strict=True))
