"""Reports of a netperf session: terminal table, JSON, Markdown, JUnit properties.

Input is a list of :class:`ReportRow`, one per budget (and measurement) of a test,
already formatted for humans by the plugin, plus the raw numbers in ``raw``.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from .atomic_file import write_text_atomic

REPORT_SCHEMA_VERSION = 1

#: Verdicts, from worst to best (the order used for sorting and the overall verdict).
VERDICTS = ("FAIL", "INVALID", "INCONCLUSIVE", "NEW", "PASS")
_SUMMARY_WORDS = (
    ("PASS", "passed"),
    ("FAIL", "failed"),
    ("INCONCLUSIVE", "inconclusive"),
    ("INVALID", "invalid"),
    ("NEW", "new"),
)
_MARKDOWN_ICONS = {"PASS": "✅", "FAIL": "❌", "INCONCLUSIVE": "❔", "INVALID": "⚠️", "NEW": "🆕"}

TABLE_WIDTH = 120
_HEADERS = ("test", "budget", "reference", "measured", "interval", "verdict", "rounds", "notes")
_MAX_TEST_WIDTH = 40
# How columns are narrowed to fit the width: (column index, narrowest), least useful
# first; then tabulate's layout: two spaces between columns, headers padded by two.
_SHRINK_ORDER = ((2, 14), (0, 28), (1, 20), (2, 11), (0, 24), (1, 16), (0, 20), (4, 12))
_COLUMN_GAP = 2
_HEADER_PADDING = 2


@dataclass
class ReportRow:
    """The outcome of one budget of one test, formatted for people, plus raw numbers."""

    test_id: str
    budget: str
    reference: str
    measured: str
    interval: str
    verdict: str
    rounds: int
    notes: list[str] = field(default_factory=list)
    driver: str = ""
    where: str = ""
    raw: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.verdict = str(getattr(self.verdict, "value", self.verdict)).upper()

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "ReportRow":
        """Build from a JSON-ready dict (unknown keys are ignored)."""
        known = cls.__dataclass_fields__
        data = {k: v for k, v in doc.items() if k in known}
        data["notes"] = list(data.get("notes") or [])
        data["raw"] = dict(data.get("raw") or {})
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _as_rows(rows: Iterable[Any]) -> list[ReportRow]:
    return [r if isinstance(r, ReportRow) else ReportRow.from_dict(r) for r in rows]


def counts(rows: Iterable[Any]) -> dict[str, int]:
    """Number of rows per verdict (every verdict present, zero included)."""
    out = {verdict: 0 for verdict in VERDICTS}
    for row in _as_rows(rows):
        out[row.verdict] = out.get(row.verdict, 0) + 1
    return out


def summary_line(rows: Iterable[Any]) -> str:
    """``3 passed, 1 failed, 0 inconclusive, 0 invalid, 1 new``."""
    n = counts(rows)
    return ", ".join(f"{n[key]} {word}" for key, word in _SUMMARY_WORDS)


def overall_verdict(rows: Iterable[Any]) -> Optional[str]:
    """The worst verdict among ``rows`` (``None`` for no rows)."""
    present = {row.verdict for row in _as_rows(rows)}
    return next((v for v in VERDICTS if v in present), None)


def format_value(metric: str, value: Optional[float]) -> str:
    """A stored metric value for people: latencies (ns) in µs/ms/s, rps, percentages."""
    if value is None or value != value:  # None or NaN
        return "n/a"
    if metric in ("rps",):
        return f"{value:,.0f} rps" if abs(value) >= 100 else f"{value:.3g} rps"
    if metric == "error_rate":
        return f"{value * 100:.2f}%"
    if metric in ("errors", "sockets", "requests"):
        return f"{value:,.0f}"
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} ns"


# ---------------------------------------------------------------------- terminal
def shorten_test_id(test_id: str, width: int) -> str:
    """Fit a test id into ``width`` characters, dropping the least telling parts first:
    directories, then the file name, then the middle."""
    if len(test_id) <= width:
        return test_id
    measurement = re.search(r" \[[^\]]*\]$", test_id)  # "<id> [hops=3]" from the plugin
    if measurement and len(measurement.group()) < width // 2:
        suffix = measurement.group()
        return shorten_test_id(test_id[: -len(suffix)], width - len(suffix)) + suffix
    path, sep, rest = test_id.partition("::")
    if sep:
        candidate = f"{path.rsplit('/', 1)[-1]}::{rest}"
        if len(candidate) <= width:
            return candidate
        if len(rest) <= width:
            return rest
        test_id = rest
    return _ellipsize_middle(test_id, width)


def _ellipsize_middle(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def terminal_table(rows: Sequence[Any], width: int = TABLE_WIDTH) -> str:
    """A plain-text table that fits ``width`` columns, then the numbered notes and the
    summary line.

    A test's later rows leave the test cell empty; long test ids are shortened, other
    long cells wrap; notes are footnotes (``[1]``) so they are never cut off.
    """
    from tabulate import tabulate

    rows = _as_rows(rows)
    if not rows:
        return "netperf: no budgets were evaluated"
    cells: list[list[str]] = []
    footnotes: list[str] = []
    previous = None
    for row in rows:
        marker = ""
        if row.notes:
            footnotes.append("; ".join(" ".join(n.split()) for n in row.notes))
            marker = f"[{len(footnotes)}]"
        test = "" if row.test_id == previous else shorten_test_id(row.test_id, _MAX_TEST_WIDTH)
        previous = row.test_id
        cells.append(
            [
                test,
                row.budget,
                row.reference,
                row.measured,
                row.interval,
                row.verdict,
                str(row.rounds),
                marker,
            ]
        )
    widths = _column_widths(cells, width)
    for c in cells:
        c[0] = shorten_test_id(c[0], widths[0])
    table = tabulate(
        cells,
        headers=list(_HEADERS),
        tablefmt="simple",
        disable_numparse=True,
        maxcolwidths=widths,
    )
    notes = [
        textwrap.fill(
            text, width, initial_indent=f"[{i}] ", subsequent_indent=" " * (len(str(i)) + 3)
        )
        for i, text in enumerate(footnotes, start=1)
    ]
    return "\n".join([table, *notes, summary_line(rows)])


def _column_widths(cells: list[list[str]], width: int) -> list[int]:
    """Natural column widths, narrowed in :data:`_SHRINK_ORDER` until they fit ``width``."""
    widths = [
        max(len(_HEADERS[i]) + _HEADER_PADDING, *(len(c[i]) for c in cells))
        for i in range(len(_HEADERS))
    ]
    separators = _COLUMN_GAP * (len(widths) - 1)
    for column, floor in _SHRINK_ORDER:
        excess = sum(widths) + separators - width
        if excess <= 0:
            break
        widths[column] = max(floor, widths[column] - excess)
    return widths


# ---------------------------------------------------------------------- JSON
def write_json(rows: Sequence[Any], results_by_test: Mapping[str, Any], path: Path) -> Path:
    """Write the machine-readable report: schema_version, summary, rows, and the
    per-round results by test (RoundResult objects or JSON-ready dicts)."""
    from . import __version__

    doc = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "plugin_version": __version__,
        "summary": counts(rows),
        "rows": [r.to_dict() for r in _as_rows(rows)],
        "results": _jsonable(results_by_test),
    }
    path = Path(path)
    write_text_atomic(path, json.dumps(doc, indent=1) + "\n")
    return path


def _jsonable(value: Any) -> Any:
    """Convert result objects (anything with ``to_dict``) inside mappings and lists."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


# ---------------------------------------------------------------------- Markdown
def markdown(rows: Sequence[Any], title: str = "netperf results") -> str:
    """A pull-request comment: summary line, table (worst first), details section."""
    rows = sorted(_as_rows(rows), key=lambda r: _verdict_rank(r.verdict))
    overall = overall_verdict(rows)
    icon = _MARKDOWN_ICONS.get(overall or "")
    heading = f"### {icon} {title}" if icon else f"### {title}"
    lines = [heading, "", f"**{summary_line(rows)}**", ""]
    if not rows:
        return "\n".join(lines + ["No budgets were evaluated.", ""])
    lines += [
        "| verdict | test | budget | reference | measured | interval | rounds |",
        "|---|---|---|---|---|---|---:|",
    ]
    for r in rows:
        cells = [
            f"{_MARKDOWN_ICONS.get(r.verdict, '')} {r.verdict}".strip(),
            f"`{_md_code(r.test_id)}`",
            f"`{_md_code(r.budget)}`",
            _md_cell(r.reference),
            _md_cell(r.measured),
            _md_cell(r.interval),
            str(r.rounds),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "<details><summary>Details</summary>", ""]
    for r in rows:
        lines.append(f"- **{r.verdict}** `{_md_code(r.test_id)}` — `{_md_code(r.budget)}`")
        facts = _detail_facts(r)
        if facts:
            lines.append(f"  - {facts}")
        lines.extend(f"  - {_md_text(note)}" for note in r.notes)
    lines += ["", "</details>", ""]
    return "\n".join(lines)


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


def _verdict_rank(verdict: str) -> int:
    return VERDICTS.index(verdict) if verdict in VERDICTS else len(VERDICTS)


def _detail_facts(row: ReportRow) -> str:
    facts = []
    if row.driver or row.where:
        facts.append(f"driver {row.driver or '?'} on {row.where or '?'}")
    method = row.raw.get("method")
    if method:
        facts.append(f"method {method}")
    p_value = row.raw.get("p_value")
    if isinstance(p_value, (int, float)):
        facts.append(f"p = {p_value:.3g}")
    return _md_text("; ".join(facts))


def _md_cell(text: str) -> str:
    return _md_text(text).replace("|", "\\|")


def _md_text(text: str) -> str:
    return " ".join(str(text).split()).replace("<", "&lt;").replace(">", "&gt;")


def _md_code(text: str) -> str:
    # Inside a table even code spans must escape the pipe; backticks cannot be escaped.
    return " ".join(str(text).split()).replace("`", "'").replace("|", "\\|")


# ---------------------------------------------------------------------- JUnit
def junit_properties(rows_for_test: Sequence[Any]) -> list[tuple[str, str]]:
    """``(name, value)`` pairs for ``record_property``: the overall verdict, then
    ``netperf.<i>.<field>`` for each budget of the test."""
    rows = _as_rows(rows_for_test)
    if not rows:
        return []
    props = [("netperf.verdict", overall_verdict(rows) or "")]
    for i, r in enumerate(rows):
        prefix = f"netperf.{i}."
        props += [
            (prefix + "budget", r.budget),
            (prefix + "verdict", r.verdict),
            (prefix + "reference", r.reference),
            (prefix + "measured", r.measured),
            (prefix + "interval", r.interval),
            (prefix + "rounds", str(r.rounds)),
        ]
        if r.driver:
            props.append((prefix + "driver", f"{r.driver} on {r.where}" if r.where else r.driver))
        for key in ("estimate", "ci_low", "ci_high", "threshold", "p_value"):
            if r.raw.get(key) is not None:
                props.append((prefix + key, repr(r.raw[key])))
        if r.notes:
            props.append((prefix + "notes", "; ".join(r.notes)))
    return props
