"""The HTML report: one self-contained page a person opens (the CI job's artifact).

The verdict table comes first, worst verdicts on top; then one section per test, failing
tests open and passing ones folded (``<details>``), each with its rows, notes, the facts of
its measured series and its plots inlined as ``data:`` PNGs; a counted instructions budget that
moved shows where the cost went: a differential flame graph (inline SVG, see
report/flamegraph.py) and the functions that changed most. A header names the machine and
the versions. No script, no external file: the page reads the same from a downloaded
artifact as from the disk it was written to. Every text is escaped.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Callable, Optional

from pytest_netperf.atomic_file import write_text_atomic
from pytest_netperf.report.cost_picture import CostPicture, function_changes
from pytest_netperf.report.flamegraph import FlamegraphError, draw, inline_svg
from pytest_netperf.report.rows import ReportRow, as_rows, describe_facts, summary_line, verdict_rank
from pytest_netperf.verdict.status import Status

#: Verdicts that open a test's section (an ACCEPTED regression is shown, never folded away).
_BAD = {Status.FAIL.value, Status.INVALID.value, Status.INCONCLUSIVE.value, Status.ACCEPTED.value}
_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1f24;max-width:1400px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
table{border-collapse:collapse;margin:8px 0 16px;width:100%}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa} td.num{text-align:right;font-variant-numeric:tabular-nums}
.v{font-weight:600;white-space:nowrap} .PASS{background:#dafbe1} .FAIL{background:#ffd8d3}
.INVALID{background:#fff1c2} .INCONCLUSIVE{background:#fdeed9} .NEW{background:#ddf4ff}
.ACCEPTED{background:#eee0ff}
.meta{color:#57606a} code{font-size:13px} details{margin:6px 0}
summary{cursor:pointer;font-weight:600} ul{margin:4px 0 8px}
img{max-width:100%;border:1px solid #d0d7de;margin:6px 8px 6px 0}
.plots{display:flex;flex-wrap:wrap}
h3{font-size:15px;margin:16px 0 6px} .flamegraph svg{border:1px solid #d0d7de;height:auto}
table.diff{width:auto} td.grew{color:#b42318} td.shrank{color:#1f5fbf}
"""
#: Draws one picture: (picture, title) -> SVG text; FlamegraphError when it cannot.
Draw = Callable[[CostPicture, str], str]


def html_report(
    rows: Sequence[Any],
    plots: Mapping[str, Sequence[str]] | None = None,
    machine: Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
    title: str = "netperf results",
    draw_picture: Optional[Draw] = None,
) -> str:
    """The page for ``rows`` (objects or dicts), with each test's ``plots`` (PNG paths; a
    file that cannot be read is named instead), the ``machine`` facts and the run's notes;
    ``draw_picture`` draws the flame graphs (default: ``netperf-driver flamegraph``)."""
    ordered = sorted(as_rows(rows), key=lambda r: verdict_rank(r.verdict))
    plots = plots or {}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="meta"><strong>{_e(summary_line(ordered))}</strong></p>',
        _machine_block(machine or {}),
        "<h2>Verdicts</h2>",
        _verdict_table(ordered),
    ]
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    parts.append("<h2>Tests</h2>")
    for test_id in _tests_worst_first(ordered):
        test_rows = [r for r in ordered if _node(r.test_id) == test_id]
        parts.append(_test_section(test_id, test_rows, plots.get(test_id, ()), draw_picture or draw))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html(
    rows: Sequence[Any],
    path: Path,
    plots: Mapping[str, Sequence[str]] | None = None,
    machine: Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
) -> Path:
    """Write :func:`html_report` to ``path`` (atomically); returns the path."""
    path = Path(path)
    write_text_atomic(path, html_report(rows, plots, machine, notes))
    return path


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _machine_block(machine: Mapping[str, Any]) -> str:
    shown = {k: v for k, v in machine.items() if v not in (None, "", {}) and not isinstance(v, Mapping)}
    if not shown:
        return ""
    items = "".join(f"<li>{_e(k.replace('_', ' '))}: <code>{_e(v)}</code></li>" for k, v in shown.items())
    return f'<ul class="meta">{items}</ul>'


def _verdict_table(rows: Sequence[ReportRow]) -> str:
    columns = ("verdict", "test", "budget", "reference", "measured", "interval", "rounds")
    head = "".join(f"<th>{h}</th>" for h in columns)
    body = []
    for r in rows:
        anchor = _anchor(r.test_id)
        body.append(
            f'<tr class="{_e(r.verdict)}"><td class="v">{_e(r.verdict)}</td>'
            f'<td><a href="#{anchor}"><code>{_e(r.test_id)}</code></a></td><td><code>{_e(r.budget)}</code></td>'
            f"<td>{_e(r.reference)}</td><td class=num>{_e(r.measured)}</td><td class=num>{_e(r.interval)}</td>"
            f"<td class=num>{r.rounds}</td></tr>"
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _tests_worst_first(rows: Sequence[ReportRow]) -> list[str]:
    return list(dict.fromkeys(_node(r.test_id) for r in rows))  # rows are already worst first


def _node(test_id: str) -> str:
    """The pytest node id of a row's test label (``id [measurement]`` names one measurement)."""
    return test_id.split(" [", 1)[0]


def _anchor(test_id: str) -> str:
    return "t-" + "".join(c if c.isalnum() else "-" for c in _node(test_id))


def _test_section(test_id: str, rows: Sequence[ReportRow], plots: Sequence[str], draw_picture: Draw) -> str:
    worst = rows[0].verdict
    opened = " open" if worst in _BAD else ""
    lines = [
        f'<details id="{_anchor(test_id)}"{opened}><summary class="{_e(worst)}">{_e(worst)} '
        f"<code>{_e(test_id)}</code></summary>",
        "<ul>",
    ]
    for r in rows:
        lines.append(
            f"<li><span class=v>{_e(r.verdict)}</span>{_e(r.test_id[len(test_id) :])} <code>{_e(r.budget)}</code>: "
            f"{_e(r.measured)} "
            f"{_e(r.interval)} vs {_e(r.reference or 'absolute')}, {r.rounds} rounds"
            + (f"; driver {_e(r.driver)} on {_e(r.where)}" if r.driver else "")
        )
        notes = list(dict.fromkeys(r.notes))
        if notes:
            lines.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
        lines.append("</li>")
    lines.append("</ul>")
    facts = describe_facts(rows[0].facts)
    if facts:
        lines.append('<ul class="meta">' + "".join(f"<li>{_e(f)}</li>" for f in facts) + "</ul>")
    pictures = [(r, CostPicture.from_dict(p)) for r in rows for p in r.pictures]
    for number, (r, picture) in enumerate(pictures, 1):
        lines.append(_cost_picture(r, picture, draw_picture, f"{_anchor(test_id)}-cost-{number}"))
    if plots:
        lines.append('<div class="plots">' + "".join(_image(p) for p in plots) + "</div>")
    lines.append("</details>")
    return "\n".join(lines)


def _cost_picture(row: ReportRow, picture: CostPicture, draw_picture: Draw, anchor: str) -> str:
    """Where a counted budget's instructions went (a section with id ``anchor``): the flame
    graph and the functions that changed most (the table alone, saying why, when the picture
    cannot be drawn)."""
    title = f"{row.test_id}: {picture.node}, {row.budget}"
    try:
        graph = f'<div class="flamegraph">{inline_svg(draw_picture(picture, title))}</div>'
    except FlamegraphError as exc:
        graph = f'<p class="meta">flame graph not drawn: {_e(exc)}</p>'
    return "\n".join(
        [
            f'<div class="cost-picture" id="{anchor}">',
            f"<h3>Where the instructions went: <code>{_e(picture.node)}</code>, <code>{_e(row.budget)}</code>, "
            f"candidate against {_e(picture.reference)}</h3>",
            graph,
            _function_table(picture),
            "</div>",
        ]
    )


def _function_table(picture: CostPicture) -> str:
    changes = function_changes(picture)
    if not changes:
        return '<p class="meta">no function changed its instructions per request</p>'
    head = f"<tr><th>function</th><th>{_e(picture.reference)}</th><th>candidate</th><th>change per request</th></tr>"
    body = "".join(
        f"<tr><td><code>{_e(name)}</code></td><td class=num>{before:,.1f}</td><td class=num>{after:,.1f}</td>"
        f'<td class="num {"grew" if change > 0 else "shrank"}">{change:+,.1f}</td></tr>'
        for name, before, after, change in changes
    )
    return f'<table class="diff"><thead>{head}</thead><tbody>{body}</tbody></table>'


def _image(path: str) -> str:
    try:
        data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    except OSError as exc:
        return f'<p class="meta">plot {_e(path)} not readable: {_e(exc.strerror or exc)}</p>'
    return f'<img alt="{_e(Path(path).name)}" src="data:image/png;base64,{data}">'
