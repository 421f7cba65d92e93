"""What a headless Chromium renders of the HTML report: the verdict table and the plots are on
the screenshot (the page itself is tested in tests/unit/test_html_report.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_pages import chromium, plots, rows, screenshot

from pytest_netperf.report.html import write_html


def test_headless_chromium_shows_the_table_and_the_plots(tmp_path: Path) -> None:
    browser = chromium()
    if browser is None:
        pytest.skip("no chromium on PATH: scripts/setup installs Debian's chromium package")
    from PIL import Image

    page = write_html(rows(), tmp_path / "report.html", plots(tmp_path / "plots"), {"machine class": "amd-epyc-2c"})
    shot = tmp_path / "shot.png"
    screenshot(browser, page, shot, 1280, 1800)
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
