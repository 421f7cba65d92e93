"""The HTML report: one self-contained page, verdicts first, failures open, plots inline.

What a headless Chromium renders of it is tested in tests/integration/test_html_report_chromium.py."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from report_pages import FAILING, plots, rows

from pytest_netperf.report.html import html_report
from pytest_netperf.report.rows import ReportRow


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
