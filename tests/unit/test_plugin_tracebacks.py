"""A NetperfError's traceback loses the plugin's frames (:mod:`pytest_netperf.plugin.tracebacks`):
it ends at the user's line, or is not shown at all when only framework frames are left."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

import pytest

import pytest_netperf
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.measure.gate import Gate
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.load_options import LoadOptionError
from pytest_netperf.plugin.tracebacks import cut_plugin_frames, plain_message

PLUGIN_DIR = Path(pytest_netperf.__file__).resolve().parent
HERE = Path(__file__).resolve().parent


def _files(tb: TracebackType | None) -> list[str]:
    out = []
    while tb is not None:
        out.append(Path(tb.tb_frame.f_code.co_filename).name)
        tb = tb.tb_next
    return out


def _error_from_the_gate() -> LoadOptionError:
    gate = Gate("t.py::test", [parse_budget("p50 < 1ms")], GateSettings(), driver_factory=lambda name, runner: None)
    with pytest.raises(LoadOptionError) as info:
        gate.measure("http://127.0.0.1:9/", bogus=1)
    return info.value


def test_the_plugin_frames_after_the_users_line_are_cut() -> None:
    error = _error_from_the_gate()
    assert "gate.py" in _files(error.__traceback__)
    assert cut_plugin_frames(error.__traceback__, PLUGIN_DIR, (Path(pytest.__file__).parent,))
    assert _files(error.__traceback__) == [Path(__file__).name]


def test_nothing_is_cut_when_only_framework_frames_are_left() -> None:
    error = _error_from_the_gate()
    before = _files(error.__traceback__)
    assert not cut_plugin_frames(error.__traceback__, PLUGIN_DIR, (HERE,))  # this file as the "framework"
    assert _files(error.__traceback__) == before


def test_plain_message_reads_like_pytests_e_line() -> None:
    assert plain_message(LoadOptionError("unknown load option 'bogus'")) == (
        "LoadOptionError: unknown load option 'bogus'"
    )
