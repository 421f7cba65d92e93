"""The pull-request comment's layout (report/markdown.py): the verdict and counts on the first
line, then only the budgets to look at with their notes shortened, the runner's state, the
link to the run's reports, every budget folded, and the hidden marker the CI job finds the
comment by."""

from __future__ import annotations

import pytest

from pytest_netperf.report.cost_diff import CostDiff, part_changes
from pytest_netperf.report.markdown import COMMENT_MARKER, NOTE_CHARS, ci_run_url, header_line, markdown
from pytest_netperf.report.rows import ReportRow

GW = "tests/netperf/test_netperf_gates.py::test_edge_throughput"
LAT = "tests/netperf/test_netperf_gates.py::test_edge_latency"
RUNNER = "runner: 2 cores, steal 0.0%, load 1.2, other processes 0.10 cores (max 0.20) during the rounds"
BUSY = "runner: 2 cores, steal 3.0%, load 4.5, other processes 0.90 cores (max 1.40) during the rounds"
NO_BASELINE = "no stored baseline: recorded as NEW (update with --netperf-update-baseline)"


def row(
    verdict: str, test: str = GW, budget: str = "rps >= 0.9x base", *notes: str, reference: str = "base"
) -> ReportRow:
    return ReportRow(test, budget, reference, "812 rps", "[790 rps, 830 rps]", verdict, 12, list(notes))


def passing(n: int) -> list[ReportRow]:
    return [row("PASS", f"{GW}[{i}]", "rps >= 0.9x base", RUNNER) for i in range(n)]


@pytest.fixture(autouse=True)
def no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID", "CI_JOB_URL"):
        monkeypatch.delenv(name, raising=False)


# ------------------------------------------------------------------ the first line
def test_header_when_every_budget_passes() -> None:
    assert header_line(passing(14)) == "### ✅ netperf: 14 PASS against the base revision"
    assert (
        header_line(passing(3), base="origin/main (a1b2c3d)") == "### ✅ netperf: 3 PASS against origin/main (a1b2c3d)"
    )


def test_header_when_some_fail_counts_worst_first() -> None:
    rows = [*passing(14), row("FAIL", LAT, "p90 <= 1.1x base"), row("FAIL")]
    assert header_line(rows, base="main (a1b2c3d)") == "### ❌ netperf: 2 FAIL, 14 PASS against main (a1b2c3d)"
    md = markdown(rows, base="main (a1b2c3d)")
    assert md.splitlines()[0] == "### ❌ netperf: 2 FAIL, 14 PASS against main (a1b2c3d)"


def test_header_counts_every_verdict_present_and_only_those() -> None:
    rows = [row("INVALID"), row("PASS"), row("INCONCLUSIVE"), row("ACCEPTED"), row("INCONCLUSIVE")]
    assert header_line(rows) == "### ⚠️ netperf: 1 INVALID, 2 INCONCLUSIVE, 1 ACCEPTED, 1 PASS against the base revision"
    assert header_line([row("ACCEPTED"), row("PASS")]).startswith("### ☑️ netperf: 1 ACCEPTED, 1 PASS")


def test_header_says_no_baseline_loudly_when_nothing_was_stored() -> None:
    rows = [row("NEW", GW, "rps >= 0.9x baseline", NO_BASELINE, reference="baseline") for _ in range(3)]
    assert header_line(rows) == "### 🆕 netperf: 3 NEW — **NO BASELINE**: nothing was compared"
    md = markdown(rows)
    assert "> **No baseline**: 3 budgets were not judged (1 test): no baseline was stored; record one with " in md
    mixed = [*passing(2), rows[0]]
    assert (
        header_line(mixed) == "### 🆕 netperf: 1 NEW, 2 PASS against the base revision — **NO BASELINE** for 1 of them"
    )


def test_header_names_the_kinds_of_reference_without_a_base() -> None:
    rows = [row("PASS", reference="baseline"), row("PASS", reference="absolute"), row("PASS", reference="reference")]
    assert header_line(rows) == "### ✅ netperf: 3 PASS against the stored baseline and the reference"
    assert header_line([row("PASS", reference="absolute")]) == "### ✅ netperf: 1 PASS"
    assert header_line([]) == "### netperf: no budgets were evaluated"


def test_a_verdict_without_an_icon_is_counted_and_listed_by_name() -> None:
    unknown = row("PASS")
    unknown.verdict = "WAIVED"  # a status this module does not know (rows parse theirs: set after)
    md = markdown([unknown, row("PASS")])
    assert md.splitlines()[0] == "### netperf: 1 WAIVED, 1 PASS against the base revision"
    assert f"- **WAIVED** `{GW}` `rps >= 0.9x base`: 812 rps" in md


# ------------------------------------------------------------------ the body
def test_only_the_budgets_to_look_at_are_listed_with_their_notes_shortened() -> None:
    long = "the reference had 3 errors " + "x" * 300
    notes = ("Holm correction over 2 budgets: PASS -> FAIL", long, "third", "fourth", RUNNER)
    rows = [
        *passing(5),
        row("FAIL", LAT, "p90 <= 1.1x base", *notes),
        row("ACCEPTED", GW, "rps >= 0.9x base", "accepted: label netperf:accept-regression", RUNNER),
        row("NEW", GW, "rps >= 0.9x baseline", NO_BASELINE, reference="baseline"),
    ]
    md = markdown(rows)
    body = md.split("<details>", 1)[0].splitlines()
    listed = [line for line in body if line.startswith("- ")]
    assert listed == [
        f"- ❌ **FAIL** `{LAT}` `p90 <= 1.1x base`: 812 rps, interval [790 rps, 830 rps], vs base, 12 rounds",
        f"- ☑️ **ACCEPTED** `{GW}` `rps >= 0.9x base`: 812 rps, interval [790 rps, 830 rps], vs base, 12 rounds",
    ]
    fail = body.index(listed[0])
    assert body[fail + 1 : fail + 5] == [
        "  - Holm correction over 2 budgets: PASS -&gt; FAIL",
        f"  - {long[: NOTE_CHARS - 1]}…",
        "  - third",
        "  - … 1 more in the details",
    ]
    assert body[fail + 6] == "  - accepted: label netperf:accept-regression"
    assert not any("runner: " in line for line in body)  # the runner has its own line
    # every note, the runner's too, stays with the row's details
    details = md.split("<details><summary>Details</summary>", 1)[1]
    assert f"  - {long}" in details and md.count(f"  - {RUNNER}") == 7


def test_the_runner_state_of_the_budgets_listed() -> None:
    one = markdown([row("FAIL", GW, "rps >= 0.9x base", RUNNER), row("PASS", LAT, "p90 <= 1.1x base", BUSY)])
    assert f"**Runner**: {RUNNER.removeprefix('runner: ')}." in one.splitlines()  # the failing budget's
    assert f"- `{LAT}`: " not in one
    several = markdown([row("FAIL", GW, "rps >= 0.9x base", RUNNER), row("INVALID", LAT, "p90 <= 1.1x base", BUSY)])
    lines = several.splitlines()
    start = lines.index("**Runner** during these measurements:")
    assert lines[start + 1 : start + 3] == [
        f"- `{GW}`: {RUNNER.removeprefix('runner: ')}",
        f"- `{LAT}`: {BUSY.removeprefix('runner: ')}",
    ]
    # all passing: the runner's state of the whole run
    assert f"**Runner**: {RUNNER.removeprefix('runner: ')}." in markdown(passing(3)).splitlines()


def test_a_link_to_the_runs_reports_when_ci_names_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "artifact" not in markdown(passing(1))
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "team/gateway")
    monkeypatch.setenv("GITHUB_RUN_ID", "123456")
    url = "https://github.com/team/gateway/actions/runs/123456"
    assert ci_run_url() == url
    md = markdown(passing(1))
    assert f"HTML and JSON reports: in the artifacts of [this run]({url})." in md.splitlines()
    assert md.index(url) < md.index("<details>")  # before the folded table
    assert ci_run_url({"CI_JOB_URL": "https://gitlab.example.com/t/g/-/jobs/9"}) == (
        "https://gitlab.example.com/t/g/-/jobs/9/artifacts/browse"
    )
    assert ci_run_url({"GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "1"}) == ""
    assert "artifact" not in markdown(passing(1), run_url="")


def test_every_budget_is_folded_and_the_marker_ends_the_comment() -> None:
    rows = [*passing(3), row("FAIL", LAT, "p90 <= 1.1x base")]
    lines = markdown(rows).splitlines()
    folded = lines.index("<details><summary>Every budget (4)</summary>")
    table = [line for line in lines[folded:] if line.startswith("| ") and "verdict" not in line]
    assert len(table) == 4 and table[0].startswith("| ❌ FAIL")
    assert lines[-1] == COMMENT_MARKER
    assert COMMENT_MARKER.startswith("<!--") and COMMENT_MARKER.endswith("-->")
    assert sum(COMMENT_MARKER in line for line in lines) == 1


def test_a_counted_budget_that_moved_folds_where_its_cost_went_per_node() -> None:
    instructions = CostDiff(
        "proxy",
        "instructions",
        "base",
        24_640.0,
        25_549.0,
        tuple(part_changes({"pcre2_match_8": 655.0, "ngx_palloc": 608.0}, {"ngx_palloc": 604.0}, 10)),
    )
    syscalls = CostDiff("edge", "syscalls", "base", 8.0, 10.0, (("connect", 0.0, 1.0, 1.0), ("close", 0.0, 1.0, 1.0)))
    failed = row("FAIL", GW, "instructions_per_request[proxy] <= 1.01x base")
    failed.cost_diffs = [instructions.to_dict()]
    accepted = row("ACCEPTED", LAT, "syscalls_per_request[edge] <= 1.0x base")
    accepted.cost_diffs = [syscalls.to_dict()]
    quiet = row("PASS", f"{GW}[x]", "syscalls_per_request[edge] <= 1.0x base")
    quiet.cost_diffs = [syscalls.to_dict()]  # a budget that passed is not listed, nor its table
    text = markdown([failed, accepted, quiet, *passing(2)], run_url="")
    assert text.count("<details><summary>Where the") == 2
    assert (
        "Where the instructions went: <code>proxy</code> 24,640 → 25,549 per request (+3.69%) vs base, "
        "<code>instructions_per_request[proxy] &lt;= 1.01x base</code>"
    ) in text
    assert "| functions | base | head | change per request |" in text
    assert "| `pcre2_match_8` | 0 | 655 | +655 |\n| `ngx_palloc` | 604 | 608 | +4 |" in text
    assert "Where the system calls went: <code>edge</code> 8.00 → 10.00 per request (+25.00%) vs base" in text
    assert "| `connect` | 0.00 | 1.00 | +1.00 |\n| `close` | 0.00 | 1.00 | +1.00 |" in text
    assert text.index("Where the instructions went") < text.index("<details><summary>Every budget")


def test_cost_diffs_travel_as_dicts() -> None:
    diff = CostDiff("edge", "syscalls", "baseline", 8.0, 10.0, (("connect", 0.0, 1.0, 1.0),))
    assert CostDiff.from_dict(diff.to_dict()) == diff
    assert ReportRow.from_dict({**row("FAIL").__dict__, "cost_diffs": [diff.to_dict()]}).cost_diffs == [diff.to_dict()]
