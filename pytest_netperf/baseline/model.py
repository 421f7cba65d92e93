"""The baseline file format (``format_version`` 1): what is stored for one test id.

A document holds the test id, creation time (UTC), git commit, plugin and driver
versions, the machine fingerprint, and per measured series (``candidate``,
``reference``, ``depth=3/sidecar`` …) the driver, where it ran, the load shape, the
per-round metric values in readable form (``values``; latencies in ns) and the full
rounds (:meth:`RoundResult.to_dict`, histograms included) so that a baseline can be
re-analysed later. ``values`` is derived from the rounds and ignored when reading.
Pending results of a run whose budgets FAILed or were INVALID say why under
``not_a_baseline``; no baseline is written from them unless the user accepts it. Results
of a run with ACCEPTED budgets (an intended regression) say which and why under
``accepted_regression``, and so does the baseline written from them.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Optional

from pytest_netperf.baseline import schema
from pytest_netperf.baseline.schema import ACCEPTED_REGRESSION_KEY, FORMAT_VERSION, NOT_A_BASELINE_KEY
from pytest_netperf.budget import metrics
from pytest_netperf.errors import BaselineError
from pytest_netperf.results.counted import CountedCost
from pytest_netperf.results.model import RoundResult

__all__ = ["FORMAT_VERSION", "Baseline", "SeriesRecord", "dumps", "git_commit", "loads"]


@dataclass
class SeriesRecord:
    """The stored rounds of one measured target (e.g. ``candidate``, ``depth=3/sidecar``)."""

    rounds: list[RoundResult]
    load_shape: str = ""
    driver: str = ""
    where: str = ""
    #: tool -> node -> cost per request the counting pass counted (instructions, system calls)
    counted: dict[str, dict[str, CountedCost]] = field(default_factory=dict)

    @classmethod
    def from_measured(cls, series: Any) -> SeriesRecord:
        """Copy a measured series (anything with ``rounds``, ``shape``, ``driver``, ``where``)."""
        shape = getattr(series, "shape", None)
        return cls(
            rounds=list(series.rounds),
            load_shape=shape.describe() if shape is not None else "",
            driver=str(getattr(series, "driver", "") or ""),
            where=str(getattr(series, "where", "") or ""),
            counted={tool: dict(nodes) for tool, nodes in (getattr(series, "counted", None) or {}).items()},
        )

    def values(self, metric: str) -> list[float]:
        """Per-round values of ``metric`` (latencies in nanoseconds); per-repetition values of a
        counted cost (KeyError when none was recorded)."""
        if metrics.get(metric).counted:
            return metrics.counted_values(metric, self.counted.get(metrics.tool_of(metric), {}))
        return [metrics.metric_value(r, metric) for r in self.rounds]


@dataclass
class Baseline:
    """Everything stored for one test id."""

    test_id: str
    series: dict[str, SeriesRecord]
    created_at: str
    git_commit: Optional[str]
    plugin_version: str
    driver_version: Optional[str]
    fingerprint: dict[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    #: Why these results are nobody's baseline (a budget of their run FAILed or was
    #: INVALID), or None; set on pending results, refused by every baseline write unless
    #: the user accepts it explicitly.
    not_a_baseline: Optional[str] = None
    #: The budgets of the run that FAILed and were accepted as an intended regression (ACCEPTED),
    #: with the reason and where it was given; None for a run without any. Kept when the
    #: results become the baseline: the stored file says it came from an accepted regression.
    accepted_regression: Optional[str] = None
    #: The file this baseline was read from (None when it was measured now).
    source: Optional[Path] = field(default=None, compare=False)

    @classmethod
    def new(
        cls,
        test_id: str,
        series: Mapping[str, SeriesRecord],
        fingerprint: Optional[dict[str, Any]] = None,
        repo_dir: Optional[Path] = None,
    ) -> Baseline:
        """A baseline of results measured now: fills time, git commit and versions."""
        from pytest_netperf.baseline.fingerprint import machine_fingerprint
        from pytest_netperf.version import __version__

        if not series:
            raise ValueError(f"baseline for {test_id} has no series")
        fingerprint = dict(fingerprint) if fingerprint is not None else machine_fingerprint()
        round_versions = [r.driver_version for s in series.values() for r in s.rounds]
        driver_version = next((v for v in round_versions if v), fingerprint.get("driver_version"))
        return cls(
            test_id=test_id,
            series=dict(series),
            created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            git_commit=git_commit(repo_dir),
            plugin_version=__version__,
            driver_version=driver_version,
            fingerprint=fingerprint,
        )

    def values(self, series: str, metric: str) -> Optional[list[float]]:
        """Per-round values of ``metric`` in ``series``; ``None`` if the series is absent."""
        record = self.series.get(series)
        return record.values(metric) if record is not None else None

    def counted(self, series: str, tool: str) -> Optional[dict[str, CountedCost]]:
        """node -> ``tool``'s counted cost in ``series``; ``None`` if none was recorded."""
        record = self.series.get(series)
        costs = record.counted.get(tool) if record is not None else None
        return dict(costs) if costs else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (format_version 1)."""
        return {
            "format_version": self.format_version,
            "test_id": self.test_id,
            "created_at": self.created_at,
            "git_commit": self.git_commit,
            "plugin_version": self.plugin_version,
            "driver_version": self.driver_version,
            "fingerprint": self.fingerprint,
            "metric_units": {m: metrics.get(m).unit for m in metrics.stored_names()},
            "series": {name: _series_to_dict(s) for name, s in self.series.items()},
            **({NOT_A_BASELINE_KEY: self.not_a_baseline} if self.not_a_baseline else {}),
            **({ACCEPTED_REGRESSION_KEY: self.accepted_regression} if self.accepted_regression else {}),
        }

    @classmethod
    def from_dict(cls, doc: Any, source: Path) -> Baseline:
        """Validate (:func:`schema.validate`) and parse a document; a malformed one is a
        BaselineError naming ``source`` and the field path."""
        schema.validate(doc, source)
        series = {str(name): _series_from_dict(body, source, str(name)) for name, body in doc["series"].items()}
        return cls(
            test_id=doc["test_id"],
            series=series,
            created_at=doc["created_at"],
            git_commit=doc.get("git_commit"),
            plugin_version=doc.get("plugin_version") or "",
            driver_version=doc.get("driver_version"),
            fingerprint=dict(doc["fingerprint"] or {}),
            not_a_baseline=doc.get(NOT_A_BASELINE_KEY) or None,
            accepted_regression=doc.get(ACCEPTED_REGRESSION_KEY) or None,
            source=source,
        )


def _series_to_dict(series: SeriesRecord) -> dict[str, Any]:
    return {
        "driver": series.driver or (series.rounds[0].driver if series.rounds else ""),
        "where": series.where,
        "load_shape": series.load_shape,
        "values": {m: _metric_or_none(series, m) for m in metrics.stored_names()},
        "rounds": [r.to_dict() for r in series.rounds],
        **(
            {
                schema.COUNTED_KEY: {
                    tool: {node: cost.to_dict() for node, cost in nodes.items()}
                    for tool, nodes in series.counted.items()
                }
            }
            if series.counted
            else {}
        ),
    }


def _metric_or_none(series: SeriesRecord, metric: str) -> list[Optional[float]]:
    out: list[Optional[float]] = []
    for r in series.rounds:
        try:
            out.append(metrics.metric_value(r, metric))
        except KeyError:
            out.append(None)
    return out


def _series_from_dict(body: dict[str, Any], source: Path, name: str) -> SeriesRecord:
    """A validated series document as a record."""
    rounds = []
    for index, round_doc in enumerate(body["rounds"]):
        try:
            rounds.append(RoundResult.from_dict(round_doc))
        except (TypeError, KeyError, ValueError, AttributeError) as exc:  # the schema missed something
            raise BaselineError(f"{source}: series {name!r} round {index}: not a valid round ({exc})") from None
    return SeriesRecord(
        rounds=rounds,
        load_shape=body.get("load_shape") or "",
        driver=body.get("driver") or "",
        where=body.get("where") or "",
        counted={
            str(tool): {str(node): CountedCost.from_dict(cost) for node, cost in nodes.items()}
            for tool, nodes in (schema.counted_section(body)[1] or {}).items()
        },
    )


def git_commit(repo_dir: Optional[Path] = None) -> Optional[str]:
    """``git rev-parse HEAD`` in ``repo_dir`` (default: cwd); ``None`` outside git."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=repo_dir,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = proc.stdout.strip()
    return commit if proc.returncode == 0 and commit else None


# A JSON list of numbers as json.dumps(indent=...) writes it: one item per line. Real
# newlines never occur inside JSON strings, so this cannot match inside a test id.
_NUMBER_LIST = re.compile(r"\[\n(?:[ ]*(?:-?[0-9][0-9.eE+-]*|null|NaN|-?Infinity),?\n)+[ ]*\]")


def _compact_number_lists(text: str) -> str:
    """Put lists of numbers on one line, so per-round values read (and diff) as rows."""
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(m.group()[1:-1].replace(",", " ").split()) + "]", text)


def dumps(baseline: Baseline) -> str:
    """The file text of ``baseline``: indented JSON with per-round lists on one line."""
    return _compact_number_lists(json.dumps(baseline.to_dict(), indent=1)) + "\n"


def loads(text: str, source: Path) -> Baseline:
    """Parse file text; BaselineError names ``source`` and what is wrong."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{source}: corrupt JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer too long to convert
        raise BaselineError(f"{source}: corrupt JSON ({exc})") from None
    return Baseline.from_dict(doc, source)
