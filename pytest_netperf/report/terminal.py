"""The terminal summary table: fits the width, shortens test ids, notes as footnotes."""

from __future__ import annotations

import re
import textwrap
from typing import Any, Sequence

from pytest_netperf.report.rows import ReportRow, as_rows, describe_facts, summary_line
from pytest_netperf.report.runner_state import is_runner_note

TABLE_WIDTH = 120
_HEADERS = ("test", "budget", "reference", "measured", "interval", "verdict", "rounds", "notes")
_MAX_TEST_WIDTH = 40
# How columns are narrowed to fit the width: (column index, narrowest), least useful
# first; then tabulate's layout: two spaces between columns, headers padded by two.
_SHRINK_ORDER = ((2, 14), (0, 28), (1, 20), (2, 11), (0, 24), (1, 16), (0, 20), (4, 12))
_COLUMN_GAP = 2
_HEADER_PADDING = 2


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


def terminal_table(rows: Sequence[Any], width: int = TABLE_WIDTH, verbose: bool = False) -> str:
    """A plain-text table that fits ``width`` columns, then the numbered notes, with
    ``verbose`` the facts of each measurement (images, resources, driver cores), and the
    summary line.

    A test's later rows leave the test cell empty; long test ids are shortened, other
    long cells wrap; notes are footnotes (``[1]``, ``[1,2]`` with the runner's state) so they
    are never cut off.
    """
    from tabulate import tabulate

    rows = as_rows(rows)
    if not rows:
        return "netperf: no budgets were evaluated"
    cells: list[list[str]] = []
    footnotes: list[str] = []
    previous = None
    for row in rows:
        # a row's own notes make one footnote; the runner's state (the same for every row of a
        # measurement) another, so that it is printed once per measurement: ``[1,2]``
        own = [" ".join(n.split()) for n in row.notes if not is_runner_note(n)]
        texts = (["; ".join(own)] if own else []) + [n for n in row.notes if is_runner_note(n)]
        for text in texts:
            if text not in footnotes:  # the same note on several rows (a base side's log) is printed once
                footnotes.append(text)
        numbers = sorted({footnotes.index(text) + 1 for text in texts})
        marker = f"[{','.join(str(n) for n in numbers)}]" if numbers else ""
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
    # Wrapped here, not by tabulate's maxcolwidths: its wrapping parses "1,629" as a number
    # whatever disable_numparse says, and crashed the summary on any count of 1,000 or more.
    wrapped = [[_wrap(text, column_width) for text, column_width in zip(c, widths, strict=True)] for c in cells]
    table = tabulate(wrapped, headers=list(_HEADERS), tablefmt="simple", disable_numparse=True)
    notes = [
        textwrap.fill(text, width, initial_indent=f"[{i}] ", subsequent_indent=" " * (len(str(i)) + 3))
        for i, text in enumerate(footnotes, start=1)
    ]
    facts = facts_section(rows, width) if verbose else []
    return "\n".join([table, *notes, *facts, summary_line(rows)])


def facts_section(rows: Sequence[ReportRow], width: int = TABLE_WIDTH) -> list[str]:
    """``facts:`` and one wrapped line per test (or measurement) and series, each said once."""
    seen: set[tuple[str, str]] = set()
    lines: list[str] = []
    for row in rows:
        for text in describe_facts(row.facts):
            if (row.test_id, text) in seen:
                continue
            seen.add((row.test_id, text))
            lines.append(textwrap.fill(f"{row.test_id}: {text}", width, initial_indent="  ", subsequent_indent="    "))
    return ["facts:", *lines] if lines else []


def _wrap(text: str, width: int) -> str:
    """``text`` wrapped to ``width`` columns, its own line breaks kept."""
    return "\n".join(line for part in text.splitlines() or [""] for line in textwrap.wrap(part, width) or [""])


def _column_widths(cells: list[list[str]], width: int) -> list[int]:
    """Natural column widths, narrowed in :data:`_SHRINK_ORDER` until they fit ``width``."""
    widths = [max(len(_HEADERS[i]) + _HEADER_PADDING, *(len(c[i]) for c in cells)) for i in range(len(_HEADERS))]
    separators = _COLUMN_GAP * (len(widths) - 1)
    for column, floor in _SHRINK_ORDER:
        excess = sum(widths) + separators - width
        if excess <= 0:
            break
        widths[column] = max(floor, widths[column] - excess)
    return widths
