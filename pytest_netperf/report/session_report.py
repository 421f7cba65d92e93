"""What one pytest process reports: the rows of every gated test and the files to write.

Under pytest-xdist each worker measures; its rows travel to the controller on the test
reports (see the plugin) and are reported there.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from pytest_netperf.report import html, json_report, markdown, terminal
from pytest_netperf.report.rows import ReportRow, as_rows
from pytest_netperf.verdict.error_control import holm_adjust

#: The HTML report's file name inside ``--netperf-report-dir`` when ``--netperf-html`` is not given.
HTML_NAME = "report.html"


@dataclass
class SessionReport:
    """Rows, per-test results and notes collected over a session."""

    json_path: Optional[Path] = None
    markdown_path: Optional[Path] = None
    html_path: Optional[Path] = None
    rows: list[ReportRow] = field(default_factory=list)
    #: Test id -> the PNG plots written for it (inlined by the HTML report).
    plots: dict[str, list[str]] = field(default_factory=dict)
    #: The machine class of the run (named in the HTML report's header).
    machine_class: str = ""
    #: The base revision the gates compared against (``origin/main (a1b2c3d)``), for the
    #: Markdown report's first line; empty without ``--netperf-base``.
    base: str = ""
    results: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: Called with the JSON document before it is written (may add keys to it).
    amend_json: Optional[Callable[[dict[str, Any]], None]] = None

    def add(
        self,
        rows: Iterable[Any],
        results: Optional[dict[str, Any]] = None,
        plots: Optional[Mapping[str, Sequence[str]]] = None,
    ) -> None:
        """Record rows (objects or dicts from a test report), per-test results and plot files."""
        self.rows.extend(as_rows(rows))
        if results:
            self.results.update(results)
        for test_id, files in (plots or {}).items():
            if files:
                self.plots[test_id] = [str(f) for f in files]

    def session_holm(self) -> None:
        """Annotate rows with session-wide Holm-adjusted p-values (reported, not enforced); a
        budget judged on no round (NaN p-value: the runner left none) is not among them."""
        judged = [
            r
            for r in self.rows
            if r.raw.get("p_value") is not None and not r.raw.get("exact") and not math.isnan(r.raw["p_value"])
        ]
        if len(judged) < 2:
            return
        adjusted = holm_adjust([r.raw["p_value"] for r in judged])
        for row, p in zip(judged, adjusted, strict=True):
            row.raw["p_holm_session"] = p

    def write_reports(self, warn: Optional[Callable[[str], None]] = None) -> list[Path]:
        """Write the JSON/Markdown reports asked for (and the GitHub step summary);
        returns the paths written.

        A report that cannot be written never changes a verdict or stops the session:
        the problem goes to ``warn`` (default: :func:`warnings.warn`) and on to the next.
        """
        say = warn or _warn
        written: list[Path] = []
        md = markdown.markdown(self.rows, base=self.base)
        targets: tuple[tuple[Optional[Path], Callable[[Path], Path]], ...] = (
            (self.json_path, lambda p: json_report.write_json(self.rows, self.results, p, self.amend_json)),
            (self.markdown_path, lambda p: markdown.write_markdown(self.rows, p, base=self.base)),
            (self.html_path, self._write_html),
        )
        for path, write in targets:
            if path is None:
                continue
            try:
                written.append(write(Path(path)))
            except Exception as exc:  # a report is never worth a crash (disk full, a directory, …)
                say(f"could not write {path}: {_reason(exc)}")
        if self.rows:
            try:
                markdown.append_github_step_summary(md)
            except OSError as exc:
                say(f"could not append to $GITHUB_STEP_SUMMARY: {_reason(exc)}")
        return written

    def _write_html(self, path: Path) -> Path:
        return html.write_html(self.rows, path, self.plots, _machine(self.machine_class), self.notes)

    def terminal_table(self, verbose: bool = False) -> str:
        """The summary table for the terminal (``verbose``: with each measurement's facts)."""
        return terminal.terminal_table(self.rows, verbose=verbose)


def _machine(machine_class: str) -> dict[str, Any]:
    """This machine and the versions, for the HTML report's header."""
    from pytest_netperf.baseline.fingerprint import machine_fingerprint

    return {"machine class": machine_class, **machine_fingerprint()}


def _warn(message: str) -> None:
    warnings.warn(f"netperf: {message}", stacklevel=3)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return f"{type(exc).__name__}: {exc}"
