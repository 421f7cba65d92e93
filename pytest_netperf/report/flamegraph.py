"""The differential flame graph of a counted instructions budget, drawn by ``netperf-driver
flamegraph`` (the Rust driver, with the ``inferno`` crate) and made fit to inline in a page.

The widths are the candidate's (head's) call stacks per request; each frame is coloured by the
change of its own instructions against the reference (base): red grew, blue shrank. Counts
per request are fractional and a flame graph counts whole numbers, so the folded files hold
instructions per :data:`SCALE` requests.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.report.cost_picture import CostPicture
from pytest_netperf.results.stacks import folded
from pytest_netperf.runtime.commands import find_driver_binary

#: The folded counts are instructions per this many requests.
SCALE = 1000
#: What a count in the picture is.
COUNT_NAME = f"instructions per {SCALE:,} requests"
#: Seconds the driver may take to draw one picture.
DRAW_TIMEOUT_S = 60.0
#: Runs ``argv`` and returns (exit code, stdout, stderr); a test can stand in for the driver.
Runner = Callable[[Sequence[str]], tuple[int, str, str]]


class FlamegraphError(Exception):
    """The picture could not be drawn (no driver, the driver failed); the report says why."""


def subtitle(picture: CostPicture) -> str:
    """What the widths and colours mean, and the totals per request."""
    change = (picture.head_total - picture.base_total) / picture.base_total if picture.base_total else 0.0
    return (
        f"widths: head's {COUNT_NAME} (counts per request x{SCALE:,}); red grew, blue shrank against "
        f"{picture.reference}; {picture.base_total:,.0f} -> {picture.head_total:,.0f} per request ({change:+.2%})"
    )


def draw(picture: CostPicture, title: str, run: Runner | None = None) -> str:
    """The SVG of ``picture`` (a standalone document); FlamegraphError when it cannot be drawn."""
    runner = run or _run_driver
    with tempfile.TemporaryDirectory(prefix="netperf-flamegraph-") as folder:
        base = Path(folder) / "base.folded"
        head = Path(folder) / "head.folded"
        base.write_text(folded(picture.base_stacks, SCALE))
        head.write_text(folded(picture.head_stacks, SCALE))
        argv = [
            "flamegraph",
            "--base",
            str(base),
            "--head",
            str(head),
            "--title",
            title,
            "--subtitle",
            subtitle(picture),
            "--count-name",
            COUNT_NAME,
        ]
        code, out, err = runner(argv)
    if code != 0:
        raise FlamegraphError(err.strip() or f"netperf-driver flamegraph exited with {code}")
    return out


def _run_driver(argv: Sequence[str]) -> tuple[int, str, str]:
    try:
        binary = find_driver_binary()
    except DriverNotFoundError as exc:
        raise FlamegraphError(str(exc)) from None
    try:
        done = subprocess.run([binary, *argv], capture_output=True, text=True, timeout=DRAW_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FlamegraphError(f"netperf-driver flamegraph: {exc}") from None
    return done.returncode, done.stdout, done.stderr


_PROLOGUE = re.compile(r"<\?xml[^>]*\?>|<!DOCTYPE[^>]*>", re.IGNORECASE)
_SCRIPT = re.compile(r"<script\b.*?</script>", re.IGNORECASE | re.DOTALL)
_ONLOAD = re.compile(r'\s+onload="[^"]*"')
#: What the script drives (search, reset zoom, the details line): without it they do nothing.
_CONTROLS = re.compile(r'<text id="(?:search|unzoom|matched|details)"[^>]*>.*?</text>', re.DOTALL)
_SIZE = re.compile(r'(<svg\b[^>]*?)\s+width="\d+"\s+height="\d+"')


def inline_svg(svg: str) -> str:
    """``svg`` fit to sit in an HTML page: no XML prologue, no script nor the controls it would
    run (the page runs none; each frame's hover title stays), and as wide as the page (its
    viewBox keeps the proportions)."""
    svg = _PROLOGUE.sub("", svg)
    svg = _SCRIPT.sub("", svg)
    svg = _CONTROLS.sub("", svg)
    svg = _ONLOAD.sub("", svg, count=1)
    svg = _SIZE.sub(r'\1 width="100%"', svg, count=1)
    return svg.strip()
