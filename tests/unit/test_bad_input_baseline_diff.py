"""``netperf baseline diff`` on a malformed stored baseline says so, never NEW (issue #41)."""

from __future__ import annotations

from pathlib import Path

import pytest
from netperf_rounds import FINGERPRINT, make_rounds

from pytest_netperf.baseline.model import Baseline, SeriesRecord
from pytest_netperf.baseline.store import BaselineStore
from pytest_netperf.cli import baseline as cli

TEST = "tests/test_gw.py::test_latency"
CLASS = "example-cpu-2c"


@pytest.mark.parametrize(
    ("text", "reason"),
    [("{not json", "corrupt JSON"), ('{"format_version": 1}', "missing key(s)")],
)
def test_diff_says_a_stored_file_is_malformed_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, reason: str
) -> None:
    store = BaselineStore(tmp_path / ".netperf")
    fingerprint = {**FINGERPRINT, "machine_class": CLASS}
    store.save_pending(Baseline.new(TEST, {"candidate": SeriesRecord(make_rounds(3))}, fingerprint))
    stored = store.path_for(TEST, CLASS)
    stored.parent.mkdir(parents=True)
    stored.write_text(text)
    lines: list[str] = []
    assert cli.diff(store, None, out=lines.append) == 1
    shown = "\n".join(lines)
    assert "NEW" not in shown, shown
    assert f"stored baseline {stored} is malformed" in shown and reason in shown, shown
