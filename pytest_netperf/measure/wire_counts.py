"""Reading a server interface's packet counters around an L4 round (``transport.wire``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from pytest_netperf.errors import NetperfError
from pytest_netperf.results.model import RoundResult


def run_with_wire(run: Callable[[], RoundResult], probe: Optional[Any], notes: list[str]) -> RoundResult:
    """``run()`` one round with ``probe``'s interface counters read around it.

    Counters that cannot be read leave ``transport.wire`` unset with a note (the ``pps`` of a
    TCP round is then unavailable, so its budgets are INVALID, never judged on nothing).
    """
    if probe is None:
        return run()
    try:
        first = probe.read()
    except (NetperfError, OSError) as exc:
        _note_once(notes, f"packets on the wire not counted: {exc}")
        return run()
    result = run()
    try:
        last = probe.read()
    except (NetperfError, OSError) as exc:
        _note_once(notes, f"packets on the wire not counted: {exc}")
        return result
    if result.transport is not None:
        result.transport.wire = probe.between(first, last)
    return result


def _note_once(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)
