"""Skips the plugin raises on purpose (as opposed to a missing part, which strict mode fails)."""

from __future__ import annotations

import pytest


class UnchangedSkip(pytest.skip.Exception):  # type: ignore[name-defined]
    """A skip asked for (``--netperf-base-skip-unchanged``), not a missing part: strict mode keeps it a skip."""
