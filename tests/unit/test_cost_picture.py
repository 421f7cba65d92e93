"""Where a counted instructions budget's cost went, in the HTML report: which budgets get a
picture, the per-function diff table, and the section (the flame graph drawn by a stand-in:
the real ``netperf-driver flamegraph`` is drawn in tests/integration/test_flamegraph_report.py)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.report.cost_picture import CostPicture, function_changes, moved, pictures_for
from pytest_netperf.report.flamegraph import FlamegraphError, draw, inline_svg, subtitle
from pytest_netperf.report.html import html_report
from pytest_netperf.report.rows import ReportRow
from pytest_netperf.results.counted import CountedCost
from pytest_netperf.verdict.status import Status

BUDGET = "instructions_per_request[proxy] <= 1.01x base"
BASE_STACKS = {"nginx;main;handle": 9_000.0, "nginx;main;handle;parse": 1_000.0}
HEAD_STACKS = {**BASE_STACKS, "nginx;main;handle;ngx_regex_exec;pcre2_match_8": 440.0}
SVG = (
    '<?xml version="1.0" standalone="no"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x.dtd">'
    '<svg version="1.1" width="1200" height="300" onload="init(evt)" viewBox="0 0 1200 300" '
    'xmlns="http://www.w3.org/2000/svg"><script type="text/ecmascript"><![CDATA[var x = 1;]]></script>'
    '<text id="search" fill="rgb(0,0,0)" x="1190" y="24.00">Search</text>'
    '<g><title>pcre2_match_8 (440 instructions, 4.2%; +4.2%)</title><rect fill="rgb(255,0,0)"/></g></svg>'
)


def cost(stacks: dict[str, float], functions: dict[str, float], node: str = "proxy") -> CountedCost:
    total = sum(stacks.values())
    return CountedCost(node, "instructions", (total, total), functions, (200, 1000), 10.0, {}, stacks)


HEAD = cost(HEAD_STACKS, {"handle": 9_000.0, "parse": 1_000.0, "pcre2_match_8": 440.0})
BASE = cost(BASE_STACKS, {"handle": 9_000.0, "parse": 1_000.0})


def measurement(head: CountedCost, base: CountedCost) -> Any:
    """What pictures_for reads of a measurement: the candidate's and the base twin's counts."""
    candidate = SimpleNamespace(label="candidate", counted={"instructions": {head.node: head}})
    twin = SimpleNamespace(label="base", counted={"instructions": {base.node: base}})
    return SimpleNamespace(candidate=candidate, judged_series=lambda budget: twin)


def outcome(status: Status, budget: str = BUDGET) -> Any:
    return SimpleNamespace(budget=parse_budget(budget), status=status, reference_label="base")


def picture() -> CostPicture:
    return CostPicture("proxy", "base", HEAD.median, BASE.median, HEAD.stacks, BASE.stacks, HEAD.by_name, BASE.by_name)


def test_a_budget_that_moved_gets_both_sides_stacks_and_functions() -> None:
    (found,) = pictures_for(outcome(Status.FAIL), measurement(HEAD, BASE))
    assert found == picture()
    assert CostPicture.from_dict(found.to_dict()) == found


@pytest.mark.parametrize(
    ("status", "head_total", "drawn"),
    [
        (Status.FAIL, 10_000.0, True),
        (Status.INCONCLUSIVE, 10_000.0, True),
        (Status.ACCEPTED, 10_000.0, True),
        (Status.PASS, 10_050.0, False),  # 0.5%: within a count's resolution
        (Status.PASS, 10_200.0, True),  # 2%: a pass with room, but the cost moved
    ],
)
def test_only_a_budget_that_moved_is_drawn(status: Status, head_total: float, drawn: bool) -> None:
    assert moved(status.value, head_total, 10_000.0) is drawn


def test_no_picture_without_stacks_on_both_sides_or_for_system_calls() -> None:
    bare = CountedCost("proxy", "instructions", (10_000.0,), {"handle": 10_000.0})
    assert pictures_for(outcome(Status.FAIL), measurement(HEAD, bare)) == []
    assert pictures_for(outcome(Status.FAIL), measurement(bare, BASE)) == []
    assert pictures_for(outcome(Status.FAIL, "syscalls_per_request[proxy] <= 1.0x base"), measurement(HEAD, BASE)) == []
    unchanged = pictures_for(outcome(Status.PASS), measurement(BASE, BASE))
    assert unchanged == []
    no_twin = SimpleNamespace(candidate=measurement(HEAD, BASE).candidate, judged_series=lambda budget: None)
    assert pictures_for(outcome(Status.FAIL), no_twin) == []


def test_the_functions_that_changed_most_come_first_like_cg_annotate_diff() -> None:
    changed = CostPicture(
        "proxy",
        "base",
        0.0,
        0.0,
        {},
        {},
        {"a": 10.0, "b": 50.0, "c": 5.0, "gone": 0.0, **{f"f{i:02}": 100.0 + i for i in range(20)}},
        {"a": 10.0, "b": 80.0, "c": 1.0, "gone": 7.0, **{f"f{i:02}": 100.0 for i in range(20)}},
    )
    rows = function_changes(changed)
    assert len(rows) == 15
    assert rows[0] == ("b", 80.0, 50.0, -30.0)
    assert rows[1] == ("f19", 100.0, 119.0, 19.0)
    assert ("a", 10.0, 10.0, 0.0) not in function_changes(changed, limit=100)  # unchanged: not listed
    assert function_changes(changed, limit=100)[-1] == ("f01", 100.0, 101.0, 1.0)


def test_the_svg_is_inlined_without_prologue_or_script_and_as_wide_as_the_page() -> None:
    inline = inline_svg(SVG)
    assert inline.startswith("<svg ") and "<script" not in inline and "onload" not in inline
    assert "Search" not in inline  # the script's control, which does nothing without it
    assert 'width="100%"' in inline and 'viewBox="0 0 1200 300"' in inline and 'height="300"' not in inline
    assert "<title>pcre2_match_8 (440 instructions" in inline


def test_the_driver_gets_both_sides_folded_per_thousand_requests() -> None:
    seen: dict[str, Any] = {}

    def fake_driver(argv: Any) -> tuple[int, str, str]:
        args = list(argv)
        seen["argv"] = args
        seen["base"] = Path(args[args.index("--base") + 1]).read_text()
        seen["head"] = Path(args[args.index("--head") + 1]).read_text()
        return 0, SVG, ""

    assert draw(picture(), "t: proxy", fake_driver) == SVG
    assert seen["argv"][0] == "flamegraph" and "instructions per 1,000 requests" in seen["argv"]
    assert "nginx;main;handle;ngx_regex_exec;pcre2_match_8 440000\n" in seen["head"]
    assert "pcre2_match_8" not in seen["base"]
    assert "x1,000" in subtitle(picture()) and "(+4.40%)" in subtitle(picture())
    with pytest.raises(FlamegraphError, match="no stack with a positive count"):
        draw(picture(), "t", lambda argv: (1, "", "netperf-driver: flamegraph: no stack with a positive count\n"))


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def row(pictures: list[dict[str, Any]]) -> ReportRow:
    return ReportRow(
        "tests/test_gw.py::test_proxy", BUDGET, "base", "1.044x", "[1.043x, 1.045x]", "FAIL", 3, pictures=pictures
    )


def test_a_moved_budget_shows_its_flame_graph_and_function_table() -> None:
    titles: list[str] = []

    def fake_draw(found: CostPicture, title: str) -> str:
        titles.append(title)
        return SVG

    doc = html_report([row([picture().to_dict()])], draw_picture=fake_draw)
    page = Page()
    page.feed(doc)
    text = " ".join(page.text)
    assert titles == [f"tests/test_gw.py::test_proxy: proxy, {BUDGET}"]
    assert "Where the instructions went" in text and "<svg " in doc and "<script" not in doc
    assert page.tags.index("svg") < page.tags.index("table", page.tags.index("svg"))
    table = text[text.index("change per request") :]
    assert "pcre2_match_8" in table and "+440.0" in table and "handle" not in table  # unchanged: left out
    assert ReportRow.from_dict(row([picture().to_dict()]).to_dict()).pictures == [picture().to_dict()]


def test_a_picture_that_cannot_be_drawn_leaves_the_table_and_says_why() -> None:
    def broken(found: CostPicture, title: str) -> str:
        raise FlamegraphError("netperf-driver is not on PATH")

    doc = html_report([row([picture().to_dict()])], draw_picture=broken)
    assert "flame graph not drawn: netperf-driver is not on PATH" in doc
    assert "<svg" not in doc and "pcre2_match_8" in doc


def test_a_row_without_pictures_reads_as_before() -> None:
    def never(found: CostPicture, title: str) -> str:
        raise AssertionError("nothing to draw")

    doc = html_report([row([])], draw_picture=never)
    assert "Where the instructions went" not in doc and "cost-picture" not in doc.split("</style>", 1)[1]
