"""The warnings pytest-netperf shows: a budget left undecided, a file that could not be written,
a regression accepted."""

from __future__ import annotations

import warnings
from typing import Optional

import pytest


class NetperfInconclusiveWarning(UserWarning):
    """A budget stayed INCONCLUSIVE (undecided after the maximum rounds, or undecidable on
    this runner) without failing the test under the INCONCLUSIVE policy."""


class NetperfWriteWarning(UserWarning):
    """A report, plot, pending result or noise floor could not be written (verdicts stand)."""


class NetperfAcceptedWarning(UserWarning):
    """A budget FAILed and was ACCEPTED as an intended regression (``--netperf-accept``,
    ``NETPERF_ACCEPT``, a ``Netperf-Accept:`` trailer): the test passed, the regression stands."""


def record_warning(
    config: pytest.Config,
    message: str,
    item: Optional[pytest.Item] = None,
    category: type[Warning] = NetperfWriteWarning,
) -> None:
    """Show ``message`` as a pytest warning (the warnings summary) without raising it.

    Recorded through ``pytest_warning_recorded`` rather than ``warnings.warn``, so that
    ``-W error`` cannot turn a file that could not be written into a failed test or a
    crashed terminal summary: such a file never changes a verdict. ``category`` is the
    warning's class (default :class:`NetperfWriteWarning`); an accepted regression is shown
    the same way, so that ``-W error`` cannot undo an explicit acceptance.
    """
    filename, lineno = __file__, 0
    if item is not None:
        path, line, _ = item.location
        filename, lineno = str(config.rootpath / path), (line or 0) + 1
    warning = category(f"netperf: {message}")
    record = warnings.WarningMessage(warning, category, filename, lineno)
    config.hook.pytest_warning_recorded.call_historic(
        kwargs={
            "warning_message": record,
            "when": "runtest",
            "nodeid": item.nodeid if item is not None else "",
            "location": None,
        }
    )
