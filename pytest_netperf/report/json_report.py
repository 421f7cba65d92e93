"""The machine-readable JSON report of a session.

The document is strict JSON (RFC 8259): a number that is not finite (an ``mde`` that
could not be computed, a threshold that overflowed, a NaN p-value) is written as
``null``, never as ``NaN`` or ``Infinity``, which strict parsers reject.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from pytest_netperf.atomic_file import write_text_atomic
from pytest_netperf.report.rows import as_rows, counts

REPORT_SCHEMA_VERSION = 1


def write_json(
    rows: Sequence[Any],
    results_by_test: Mapping[str, Any],
    path: Path,
    amend: Optional[Callable[[dict[str, Any]], None]] = None,
) -> Path:
    """Write the machine-readable report: schema_version, summary, rows, and the
    per-round results by test (RoundResult objects or JSON-ready dicts). ``amend`` may
    add to the document just before it is written (the plugin's user hook)."""
    from pytest_netperf.version import __version__

    doc = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "plugin_version": __version__,
        "summary": counts(rows),
        "rows": [r.to_dict() for r in as_rows(rows)],
        "results": results_by_test,
    }
    if amend is not None:
        amend(doc)
    path = Path(path)
    write_text_atomic(path, dumps_strict(doc))
    return path


def dumps_strict(doc: Any) -> str:
    """Indented strict JSON of ``doc`` (see :func:`strict_jsonable`), ending in a newline."""
    return json.dumps(strict_jsonable(doc), indent=1, allow_nan=False) + "\n"


def strict_jsonable(value: Any) -> Any:
    """``value`` with result objects (anything with ``to_dict``) converted, numpy scalars
    made builtin and every non-finite number replaced by ``None``, at any depth."""
    if hasattr(value, "to_dict"):
        return strict_jsonable(value.to_dict())
    if isinstance(value, Mapping):
        return {str(k): strict_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_jsonable(v) for v in value]
    if isinstance(value, (str, bool)) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
    if callable(tolist):
        return strict_jsonable(tolist())
    return value
