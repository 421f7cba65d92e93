"""Session-wide state: settings, baseline store, collected report rows, report writing.

The plugin creates one :class:`NetperfSession` per pytest process.  Under pytest-xdist
each worker measures and writes its own baseline files; the rows travel to the
controller on the test reports (see plugin.py) and are reported there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from .budget import Budget
from .gate import BudgetOutcome, Gate, Measurement

def series_name(measurement_key: str, label: str) -> str:
    """Name of a measured series in baselines and plots (``candidate``, ``hops=3/reference``)."""
    return label if measurement_key == "default" else f"{measurement_key}/{label}"


def outcome_row(outcome: BudgetOutcome, gate: Gate) -> dict[str, Any]:
    """A JSON-ready row for reports (the report module's ReportRow fields)."""
    v = outcome.verdict
    m = next(m for m in gate.measurements if m.key == outcome.measurement)
    interval = ""
    measured = ""
    raw: dict[str, Any] = {}
    if v is not None:
        measured = outcome.budget.format_value(v.estimate)
        interval = f"[{outcome.budget.format_value(v.ci_low)}, {outcome.budget.format_value(v.ci_high)}]"
        raw = {
            "estimate": _plain(v.estimate),
            "ci_low": _plain(v.ci_low),
            "ci_high": _plain(v.ci_high),
            "threshold": _plain(v.threshold),
            "p_value": _plain(v.p_value),
            "method": str(v.method),
            "mde": _plain(v.mde),
            "exact": bool(v.exact),
        }
    ref = outcome.reference_label  # "reference", "baseline" or "absolute"; URLs are in the JSON
    test = gate.test_id if outcome.measurement == "default" else f"{gate.test_id} [{outcome.measurement}]"
    return {
        "test_id": test,
        "budget": outcome.budget.text,
        "reference": ref,
        "measured": measured,
        "interval": interval,
        "verdict": str(outcome.status),
        "rounds": int(v.n_rounds if v is not None else len(m.candidate.rounds)),
        "notes": list(outcome.notes),
        "driver": m.candidate.driver,
        "where": m.candidate.where,
        "raw": raw,
    }


def _plain(value: Any) -> Optional[float]:
    """A builtin float (rows cross process boundaries under xdist: no numpy scalars)."""
    return None if value is None else float(value)


def measurement_summary(m: Measurement) -> dict[str, Any]:
    """Per-series summary for the JSON report and the progress lines."""
    out: dict[str, Any] = {"key": m.key, "hops": m.hops, "series": {}}
    for s in m.series():
        rounds = s.rounds
        out["series"][s.label] = {
            "url": s.url,
            "where": s.where,
            "driver": s.driver,
            "shape": s.shape.describe(),
            "rounds": [r.to_dict() for r in rounds],
            "sockets_opened": [r.sockets_opened for r in rounds],
        }
    return out


@dataclass
class NetperfSession:
    """Everything one pytest process knows about netperf gates."""

    settings: Any
    rows: list[dict[str, Any]] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add(self, rows: Iterable[dict[str, Any]], results: Optional[dict[str, Any]] = None) -> None:
        """Record rows (and per-test results) coming from a test report."""
        self.rows.extend(rows)
        if results:
            self.results.update(results)

    def counts(self) -> dict[str, int]:
        """How many rows per verdict."""
        out: dict[str, int] = {}
        for r in self.rows:
            out[r["verdict"]] = out.get(r["verdict"], 0) + 1
        return out

    def session_holm(self) -> None:
        """Annotate rows with session-wide Holm-adjusted p-values (reported, not enforced)."""
        from .stats import holm_adjust

        idx = [
            i
            for i, r in enumerate(self.rows)
            if r.get("raw", {}).get("p_value") is not None and not r["raw"].get("exact")
        ]
        if len(idx) < 2:
            return
        adjusted = holm_adjust([self.rows[i]["raw"]["p_value"] for i in idx])
        for i, p in zip(idx, adjusted, strict=True):
            self.rows[i]["raw"]["p_holm_session"] = p

    def write_reports(self) -> list[Path]:
        """Write the JSON/markdown reports the settings ask for; returns the paths."""
        from . import report

        written: list[Path] = []
        rows = [report.ReportRow.from_dict(r) for r in self.rows]
        if self.settings.json_path:
            path = Path(self.settings.json_path)
            report.write_json(rows, self.results, path)
            written.append(path)
        md = None
        if self.settings.markdown_path:
            md = report.markdown(rows)
            path = Path(self.settings.markdown_path)
            report.write_markdown(rows, path)
            written.append(path)
        if self.rows:
            report.append_github_step_summary(md or report.markdown(rows))
        return written

    def terminal_table(self) -> str:
        """The summary table for the terminal."""
        from . import report

        return report.terminal_table([report.ReportRow.from_dict(r) for r in self.rows])


def budgets_from_marker(args: Sequence[Any]) -> list[Budget]:
    """Parse the marker's positional budgets (strings or Budget objects)."""
    from .budget import coerce_budget

    return [coerce_budget(a) for a in args]
