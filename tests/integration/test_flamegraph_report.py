"""Where the cost went, as a picture: a real harmful change's differential flame graph in the
HTML report, and what a headless Chromium shows of it.

``tests/corpus/nginx_wrapper_script`` with two regex ``location`` blocks added (the change of
test_public_stacks_counted.py): every request then runs PCRE. The gate runs under
``--netperf-base main --netperf-html``, so the counting pass of each side also profiles the
instructions' call stacks under callgrind; the report's flame graph must show the largest
growth in a PCRE frame or under one. ``NETPERF_KEEP_SCREENSHOTS=1`` keeps the screenshot as
docs/images/flamegraph-nginx-regex.png (the picture docs/reports.md shows).

Real containers through Compose and chromium; a few minutes per run.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from docker_helpers import skip_without_compose_stack_parts, skip_without_counting_image, stack_repo
from pytester_helpers import json_report, netperf_args
from report_pages import chromium
from report_pages import screenshot as chromium_screenshot

#: concurrent: counted verdicts (and same-run ones) on Compose stacks of its own session, no fixed host
#: port: scripts/test runs it on two workers beside the other such tests
pytestmark = [pytest.mark.docker, pytest.mark.concurrent]

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
KEPT = ROOT / "docs" / "images" / "flamegraph-nginx-regex.png"
INI = """
[pytest]
netperf_images =
    nginx:1.27=pytest-netperf/nginx:local
"""
INSTRUCTIONS = "instructions_per_request[proxy] <= 1.01x base"
GATE = f"""
import pytest


@pytest.mark.netperf("{INSTRUCTIONS}", "errors == 0")
def test_proxy_against_base(netperf, netperf_compose):
    stack = netperf_compose("nginx_wrapper_script/docker-compose.yml")
    netperf.measure(stack.endpoint("proxy", port=80, path="/api/items?size=2048"), connections=8)
"""
REGEX_LOCATIONS = """    location ~* \\.(png|jpg|gif|css|js)$ {
        return 404;
    }

    location ~ ^/internal/(admin|debug) {
        return 403;
    }

    location / {"""
RUN = netperf_args(
    3,
    4,
    "1",
    "0.5",
    "-m",
    "netperf",
    "--netperf-base=main",
    "--netperf-json=results.json",
    "--netperf-html=report.html",
    # counting passes of 500 and 100 requests, twice (the example job's): PCRE per request is
    # a change of tens of percent
    "--netperf-counting-requests=500",
    "--netperf-counting-repetitions=2",
)


@dataclass(frozen=True)
class Frame:
    """One frame of an inferno flame graph: its name, own change (% of all) and its place."""

    name: str
    change: float
    y: int
    start: int
    width: int

    def holds(self, other: Frame) -> bool:
        """Whether ``other`` is drawn on top of this frame (a callee, directly or deeper)."""
        return self.y > other.y and self.start <= other.start and other.start + other.width <= self.start + self.width


_FRAME = re.compile(
    r'<g><title>(?P<title>[^<]*)</title><rect [^>]*?y="(?P<y>\d+)"[^>]*?fg:x="(?P<x>\d+)" fg:w="(?P<w>\d+)"'
)
_TITLE = re.compile(r"^(?P<name>.*) \([\d,]+ [^;]*; (?P<change>[-+]?\d+\.\d+)%\)$")


def frames(svg: str) -> list[Frame]:
    """The frames of a differential flame graph with their own change (the root ``all`` has none)."""
    found = []
    for match in _FRAME.finditer(svg):
        title = _TITLE.match(match["title"].replace("&apos;", "'").replace("&amp;", "&"))
        if title is not None:
            found.append(
                Frame(title["name"], float(title["change"]), int(match["y"]), int(match["x"]), int(match["w"]))
            )
    return found


@pytest.fixture(scope="module", autouse=True)
def needs_compose_and_a_traceable_proxy() -> None:
    skip_without_compose_stack_parts()
    skip_without_counting_image("pytest-netperf/nginx:local")


def test_regex_locations_show_as_red_pcre_in_the_flame_graph(pytester: pytest.Pytester) -> None:
    stack = stack_repo(pytester.path, CORPUS / "nginx_wrapper_script", GATE, INI)
    template = stack / "nginx" / "default.conf.template"
    text = template.read_text()
    assert text.count("    location / {") == 1
    template.write_text(text.replace("    location / {", REGEX_LOCATIONS))
    result = pytester.runpytest_subprocess(*RUN)
    assert result.ret == 1, result.stdout.str()[-6000:]
    row = next(r for r in json_report(pytester)["rows"] if r["budget"] == INSTRUCTIONS)
    assert row["verdict"] == "FAIL", row
    (picture,) = row["pictures"]
    assert picture["node"] == "proxy" and picture["head_stacks"] and picture["base_stacks"]

    page = (pytester.path / "report.html").read_text()
    svgs = re.findall(r"<svg\b.*?</svg>", page, re.DOTALL)
    assert len(svgs) == 1 and "<script" not in page
    drawn = frames(svgs[0])
    # the profile is one callgrind pair a side: on a loaded 2-core CI VM (two counted tests at
    # once) another function's frame once grew +2.24% of all beside pcre's, so pcre is asked
    # among the three largest growths, red, not as the single largest
    grown = sorted(drawn, key=lambda f: -f.change)[:3]
    found = []
    for grew in grown:
        under = [f.name for f in sorted(drawn, key=lambda f: -f.y) if f.holds(grew)]  # from the root up
        print(f"growth: {grew.name} {grew.change:+.2f}% under {';'.join(under)}")
        if grew.change > 0 and any("pcre" in name.lower() for name in (grew.name, *under)):
            found.append(grew)
    assert found, grown
    table = page[page.index("change per request") :]
    assert re.search(r"pcre2?_\w+", table, re.IGNORECASE), table[:3000]

    shot = screenshot(pytester.path / "report.html", pytester.path / "report.png")
    if os.environ.get("NETPERF_KEEP_SCREENSHOTS") == "1":
        KEPT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, KEPT)


def screenshot(page: Path, shot: Path) -> Path:
    """A headless Chromium screenshot of the whole report (its blank bottom cut off), checked
    not blank: text, and the red of a frame that grew, are on it."""
    browser = chromium()
    if browser is None:
        pytest.skip("no chromium on PATH: scripts/setup installs Debian's chromium package")
    from PIL import Image, ImageChops

    chromium_screenshot(browser, page, shot, 1400, 3000)
    image = Image.open(shot).convert("RGB")
    filled = ImageChops.difference(image, Image.new("RGB", image.size, (255, 255, 255))).getbbox()
    assert filled is not None, "the screenshot is blank"
    image = image.crop((0, 0, image.size[0], min(image.size[1], filled[3] + 24)))
    image.save(shot)
    colours = image.getcolors(maxcolors=1 << 22) or []
    assert len(colours) > 50, "the screenshot is one or two colours"
    red = sum(n for n, (r, g, b) in colours if r > 200 and g < 190 and b < 190)
    assert red > 200, "no frame that grew (red) on the screenshot"
    return shot
