"""The Markdown report: a pull-request comment and the GitHub step summary."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Sequence

from pytest_netperf.atomic_file import write_text_atomic
from pytest_netperf.report.rows import (
    ReportRow,
    as_rows,
    describe_facts,
    overall_verdict,
    summary_line,
    verdict_rank,
)
from pytest_netperf.verdict.status import Status

_MARKDOWN_ICONS = {
    Status.PASS: "✅",
    Status.FAIL: "❌",
    Status.INCONCLUSIVE: "❔",
    Status.INVALID: "⚠️",
    Status.NEW: "🆕",
}


def markdown(rows: Sequence[Any], title: str = "netperf results") -> str:
    """A pull-request comment: summary line, a table of what did not pass (worst first), the
    passing budgets folded in ``<details>``, and a folded details section (per row: where the
    driver ran, the method, the series' facts such as images and cores, the notes)."""
    rows = sorted(as_rows(rows), key=lambda r: verdict_rank(r.verdict))
    overall = overall_verdict(rows)
    icon = _MARKDOWN_ICONS.get(overall) if overall else None
    heading = f"### {icon} {title}" if icon else f"### {title}"
    lines = [heading, "", f"**{summary_line(rows)}**", ""]
    if not rows:
        return "\n".join(lines + ["No budgets were evaluated.", ""])
    notable = [r for r in rows if r.verdict != Status.PASS.value]
    passes = [r for r in rows if r.verdict == Status.PASS.value]
    if notable:  # failures and changes lead; the passes are folded so the comment stays short
        lines += _table(notable)
    if passes:
        noun = "budget" if len(passes) == 1 else "budgets"
        summary = f"<details><summary>{len(passes)} passing {noun}</summary>"
        lines += ["", summary, "", *_table(passes), "", "</details>"]
    lines += ["", "<details><summary>Details</summary>", ""]
    for r in rows:
        lines.append(f"- **{r.verdict}** `{_md_code(r.test_id)}` — `{_md_code(r.budget)}`")
        facts = _detail_facts(r)
        if facts:
            lines.append(f"  - {facts}")
        lines.extend(f"  - {_md_text(line)}" for line in describe_facts(r.facts))
        lines.extend(f"  - {_md_text(note)}" for note in r.notes)
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def _table(rows: Sequence[ReportRow]) -> list[str]:
    lines = [
        "| verdict | test | budget | reference | measured | interval | rounds |",
        "|---|---|---|---|---|---|---:|",
    ]
    for r in rows:
        cells = [
            f"{_MARKDOWN_ICONS.get(Status.parse(r.verdict), '')} {r.verdict}".strip(),
            f"`{_md_code(r.test_id)}`",
            f"`{_md_code(r.budget)}`",
            _md_cell(r.reference),
            _md_cell(r.measured),
            _md_cell(r.interval),
            str(r.rounds),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_markdown(rows: Sequence[Any], path: Path) -> Path:
    """Write :func:`markdown` of ``rows`` to ``path``."""
    path = Path(path)
    write_text_atomic(path, markdown(rows))
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


def _md_code(text: str) -> str:
    # Inside a table even code spans must escape the pipe; backticks cannot be escaped.
    return " ".join(str(text).split()).replace("`", "'").replace("|", "\\|")
