"""The Markdown report: a pull-request comment and the GitHub step summary.

Its layout, for a reader who opens the pull request:

1. one line with the verdict and the counts, worst first, and what the change was compared
   with (``### ❌ netperf: 2 FAIL, 14 PASS against origin/main (a1b2c3d)``); budgets that are
   NEW because no baseline was stored say so in capitals (``NO BASELINE``);
2. only the budgets that did not pass and were not NEW (failed, undecided, invalid, accepted),
   each with its notes shortened; for a counted budget among them, folded per node, the
   functions or system calls whose count per request changed most (:mod:`.cost_diff`);
3. the runner's state during those measurements (the runner note of their rows);
4. a link to the run whose artifact holds the HTML and JSON reports (GitHub: from
   ``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY`` and ``GITHUB_RUN_ID``; GitLab: ``CI_JOB_URL``);
5. folded in ``<details>``: the table of every budget, then each row's details.

A hidden marker (:data:`COMMENT_MARKER`) ends the text: the CI job that posts the comment finds
its previous comment by it and edits that one instead of adding another.

Verdicts are handled by name, so a verdict this module has no icon for (a newer ``Status``
member, e.g. ACCEPTED) is counted, listed and tabled like the others.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional, Sequence

from pytest_netperf.atomic_file import write_text_atomic
from pytest_netperf.measure.outcomes import MISSING_BASELINE_NOTE
from pytest_netperf.report.cost_diff import CostDiff
from pytest_netperf.report.rows import ReportRow, as_rows, describe_facts
from pytest_netperf.report.runner_state import RUNNER_KEY, is_runner_note
from pytest_netperf.results.counted import counting_tool

#: The hidden line that marks netperf's pull-request comment (the CI job edits the comment holding it).
COMMENT_MARKER = "<!-- pytest-netperf: report comment -->"

#: Verdict names worst first; a name not listed here sorts after FAIL and before the rest.
_WORST_FIRST = ("FAIL", "INVALID", "INCONCLUSIVE", "ACCEPTED", "NEW", "PASS")
_ICONS = {
    "PASS": "✅",
    "FAIL": "❌",
    "INCONCLUSIVE": "❔",
    "INVALID": "⚠️",
    "NEW": "🆕",
    "ACCEPTED": "☑️",
}
#: Verdicts left out of the list of budgets to look at (they are in the folded table).
_QUIET = ("PASS", "NEW")
#: A note in the list of budgets to look at is cut to this many characters.
NOTE_CHARS = 160
#: At most this many notes per budget in that list (the details have them all).
NOTES_SHOWN = 3
#: At most this many distinct runner states are listed.
RUNNERS_SHOWN = 5


def markdown(
    rows: Sequence[Any],
    title: str = "netperf",
    *,
    base: str = "",
    run_url: Optional[str] = None,
) -> str:
    """The pull-request comment for ``rows`` (see the module's docstring for the layout).

    ``base``: what the base side was, e.g. ``origin/main (a1b2c3d)``; without it the header
    names the kinds of reference the rows were judged against. ``run_url``: the CI run whose
    artifact holds the HTML report; None reads it from the environment (:func:`ci_run_url`),
    "" leaves the link out."""
    rows = sorted(as_rows(rows), key=lambda r: _rank(r.verdict))
    url = ci_run_url() if run_url is None else run_url
    lines = [header_line(rows, title, base), ""]
    if rows:
        lines += _no_baseline(rows)
        notable = [r for r in rows if r.verdict not in _QUIET]
        lines += _look_at(notable)
        lines += _where_the_cost_went(notable)
        lines += _runner_state(notable or rows)
    if url:
        lines += [f"HTML and JSON reports: in the artifacts of [this run]({url}).", ""]
    if rows:
        lines += [f"<details><summary>Every budget ({len(rows)})</summary>", "", *_table(rows), "", "</details>"]
        lines += ["", "<details><summary>Details</summary>", ""]
        for r in rows:
            lines.append(f"- **{r.verdict}** `{_md_code(r.test_id)}` — `{_md_code(r.budget)}`")
            facts = _detail_facts(r)
            if facts:
                lines.append(f"  - {facts}")
            lines.extend(f"  - {_md_text(line)}" for line in describe_facts(r.facts))
            lines.extend(f"  - {_md_text(note)}" for note in r.notes)
        lines += ["", "</details>", ""]
    lines.append(COMMENT_MARKER)
    return "\n".join(lines) + "\n"


def header_line(rows: Sequence[Any], title: str = "netperf", base: str = "") -> str:
    """``### ❌ netperf: 2 FAIL, 14 PASS against origin/main (a1b2c3d)``: the worst verdict's
    icon, the count of each verdict present (worst first), what was compared with; budgets NEW
    for want of a stored baseline are said in capitals."""
    rows = as_rows(rows)
    if not rows:
        return f"### {title}: no budgets were evaluated"
    counted = verdict_counts(rows)
    worst = next(iter(counted))
    parts = [f"{n} {name}" for name, n in counted.items()]
    icon = _ICONS.get(worst, "")
    text = f"### {icon + ' ' if icon else ''}{title}: {', '.join(parts)}"
    compared = [r for r in rows if r.verdict != "NEW"]
    if compared:
        against = base or _references(compared)
        if against:
            text += f" against {_md_text(against)}"
    new = counted.get("NEW", 0)
    if new == len(rows):
        text += " — **NO BASELINE**: nothing was compared"
    elif new:
        text += f" — **NO BASELINE** for {new} of them"
    return text


def verdict_counts(rows: Sequence[Any]) -> dict[str, int]:
    """Rows per verdict name, only the verdicts present, worst first."""
    counted = Counter(r.verdict for r in as_rows(rows))
    return {name: counted[name] for name in sorted(counted, key=_rank)}


def ci_run_url(env: Optional[Mapping[str, str]] = None) -> str:
    """The CI run (GitHub Actions) or job (GitLab) whose artifacts hold the reports; "" elsewhere."""
    env = os.environ if env is None else env
    server, repository, run = (env.get(k, "") for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    if server and repository and run:
        return f"{server.rstrip('/')}/{repository}/actions/runs/{run}"
    job = env.get("CI_JOB_URL", "")
    return f"{job.rstrip('/')}/artifacts/browse" if job else ""


def shorten(text: str, limit: int = NOTE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _rank(verdict: str) -> tuple[int, str]:
    name = str(verdict)
    return (_WORST_FIRST.index(name), name) if name in _WORST_FIRST else (1, name)


def _references(rows: Sequence[ReportRow]) -> str:
    """What the rows were judged against, by the kind of reference (``the base revision``, …)."""
    kinds = []
    for row in rows:
        label = row.reference.split(" ", 1)[0]
        kind = {"base": "the base revision", "baseline": "the stored baseline", "reference": "the reference"}.get(
            label, ""
        )
        if kind and kind not in kinds:
            kinds.append(kind)
    return " and ".join(kinds)


def _no_baseline(rows: Sequence[ReportRow]) -> list[str]:
    """The loud line for budgets that are NEW: no stored baseline, so they judged nothing."""
    new = [r for r in rows if r.verdict == "NEW"]
    if not new:
        return []
    tests = len({r.test_id for r in new})
    were = f"{len(new)} budget was" if len(new) == 1 else f"{len(new)} budgets were"
    where = f"{tests} test" + ("" if tests == 1 else "s")
    notes = [n for r in new for n in r.notes if not is_runner_note(n) and n != MISSING_BASELINE_NOTE]
    said = _md_text(shorten(notes[0])) if notes else "record one with `--netperf-update-baseline`"
    return [f"> [!WARNING]\n> **No baseline**: {were} not judged ({where}): no baseline was stored; {said}.", ""]


def _look_at(rows: Sequence[ReportRow]) -> list[str]:
    """The budgets that did not pass: verdict, test, budget, the figures, the notes shortened."""
    if not rows:
        return []
    lines = []
    for r in rows:
        icon = _ICONS.get(r.verdict, "")
        figures = ", ".join(
            part
            for part in (
                _md_text(r.measured) if r.measured else "",
                f"interval {_md_text(r.interval)}" if r.interval else "",
                f"vs {_md_text(r.reference)}" if r.reference and r.reference != "absolute" else "",
                f"{r.rounds} rounds" if r.rounds else "",
            )
            if part
        )
        lead = f"- {icon + ' ' if icon else ''}**{r.verdict}** `{_span(r.test_id)}` `{_span(r.budget)}`"
        lines.append(f"{lead}: {figures}" if figures else lead)
        notes = [n for n in r.notes if not is_runner_note(n)]
        lines.extend(f"  - {_md_text(shorten(note))}" for note in notes[:NOTES_SHOWN])
        if len(notes) > NOTES_SHOWN:
            lines.append(f"  - … {len(notes) - NOTES_SHOWN} more in the details")
    return lines + [""]


def _where_the_cost_went(rows: Sequence[ReportRow]) -> list[str]:
    """Per counted budget that moved and node: a folded table of the parts whose count per
    request changed most against the other side (``cg_annotate --diff``, a system-call diff)."""
    lines = []
    for r in rows:
        for diff in (CostDiff.from_dict(d) for d in r.cost_diffs):
            tool = counting_tool(diff.tool)
            change = f" ({diff.head_total / diff.base_total - 1:+.2%})" if diff.base_total else ""
            summary = (
                f"Where the {tool.family} went: <code>{_md_text(diff.node)}</code> "
                f"{diff.base_total:,.{max(tool.decimals, 0)}f} → {diff.head_total:,.{max(tool.decimals, 0)}f} "
                f"per request{change} vs {_md_text(diff.reference)}, <code>{_md_text(r.budget)}</code>"
            )
            lines += [f"<details><summary>{summary}</summary>", ""]
            if diff.changes:
                lines += [f"| {tool.parts} | {diff.reference} | head | change per request |", "|---|---:|---:|---:|"]
                lines += [
                    f"| `{_md_code(name)}` | {before:,.{tool.decimals}f} | {after:,.{tool.decimals}f} | "
                    f"{tool.format_change(delta)} |"
                    for name, before, after, delta in diff.changes
                ]
            else:
                lines.append(f"No {tool.parts} changed per request.")
            lines += ["", "</details>", ""]
    return lines


def _runner_state(rows: Sequence[ReportRow]) -> list[str]:
    """The runner's state during the measurements of ``rows`` (their runner notes, once each)."""
    by_note: dict[str, list[str]] = {}
    for r in rows:
        for note in r.notes:
            if is_runner_note(note):
                tests = by_note.setdefault(note[len(RUNNER_KEY) + 2 :], [])
                if r.test_id not in tests:
                    tests.append(r.test_id)
    if not by_note:
        return []
    if len(by_note) == 1:
        return [f"**Runner**: {_md_text(next(iter(by_note)))}.", ""]
    lines = ["**Runner** during these measurements:"]
    for state, tests in list(by_note.items())[:RUNNERS_SHOWN]:
        named = ", ".join(f"`{_span(t)}`" for t in tests[:2]) + (" …" if len(tests) > 2 else "")
        lines.append(f"- {named}: {_md_text(state)}")
    if len(by_note) > RUNNERS_SHOWN:
        lines.append(f"- … {len(by_note) - RUNNERS_SHOWN} more in the details")
    return lines + [""]


def _table(rows: Sequence[ReportRow]) -> list[str]:
    lines = [
        "| verdict | test | budget | reference | measured | interval | rounds |",
        "|---|---|---|---|---|---|---:|",
    ]
    for r in rows:
        cells = [
            f"{_ICONS.get(r.verdict, '')} {r.verdict}".strip(),
            f"`{_md_code(r.test_id)}`",
            f"`{_md_code(r.budget)}`",
            _md_cell(r.reference),
            _md_cell(r.measured),
            _md_cell(r.interval),
            str(r.rounds),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_markdown(rows: Sequence[Any], path: Path, *, base: str = "") -> Path:
    """Write :func:`markdown` of ``rows`` to ``path``."""
    path = Path(path)
    write_text_atomic(path, markdown(rows, base=base))
    return path


def append_github_step_summary(md: str) -> bool:
    """Append ``md`` to the file named by $GITHUB_STEP_SUMMARY; False when unset."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return False
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(md if md.endswith("\n") else md + "\n")
    return True


def _detail_facts(row: ReportRow) -> str:
    facts = []
    if row.driver or row.where:
        facts.append(f"driver {row.driver or '?'} on {row.where or '?'}")
    method = row.raw.get("method")
    if method:
        facts.append(f"method {method}")
    p_value = row.raw.get("p_value")
    if isinstance(p_value, (int, float)) and math.isfinite(p_value):
        facts.append(f"p = {p_value:.3g}")
    return _md_text("; ".join(facts))


def _md_cell(text: str) -> str:
    return _md_text(text).replace("|", "\\|")


def _md_text(text: str) -> str:
    return " ".join(str(text).split()).replace("<", "&lt;").replace(">", "&gt;")


def _span(text: str) -> str:
    """A code span's text outside a table (where a pipe needs no escape)."""
    return " ".join(str(text).split()).replace("`", "'")


def _md_code(text: str) -> str:
    # Inside a table even code spans must escape the pipe; backticks cannot be escaped.
    return " ".join(str(text).split()).replace("`", "'").replace("|", "\\|")
