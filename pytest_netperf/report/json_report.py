"""The machine-readable JSON report of a session."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from pytest_netperf.atomic_file import write_text_atomic
from pytest_netperf.report.rows import as_rows, counts

REPORT_SCHEMA_VERSION = 1


def write_json(rows: Sequence[Any], results_by_test: Mapping[str, Any], path: Path) -> Path:
    """Write the machine-readable report: schema_version, summary, rows, and the
    per-round results by test (RoundResult objects or JSON-ready dicts)."""
    from pytest_netperf import __version__

    doc = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "plugin_version": __version__,
        "summary": counts(rows),
        "rows": [r.to_dict() for r in as_rows(rows)],
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
