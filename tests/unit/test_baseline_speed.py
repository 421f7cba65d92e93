"""A stored baseline beside this machine's measured speed: the comparison, the policy's choice
(wall-clock budgets NEW, counted costs judged), the options, old files, the stored record."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

import pytest
from netperf_rounds import FINGERPRINT, make_rounds

from pytest_netperf.baseline import policy as policy_module
from pytest_netperf.baseline.model import Baseline, SeriesRecord
from pytest_netperf.baseline.policy import BaselinePolicy
from pytest_netperf.baseline.speed import SpeedCheck, compare_speed, stored_calibration
from pytest_netperf.baseline.store import BaselineStore
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.errors import BaselineError, NetperfError
from pytest_netperf.results.counted import CountedCost
from pytest_netperf.runtime.machine_speed import SPEED_THRESHOLD, WORKLOAD, Calibration

TEST_ID = "tests/test_gw.py::test_proxy"
CLASS = "intel-xeon-2c"
LIBRARY = "1.2.13"
WALL = Budget.parse("rps >= 0.6x baseline")
LATENCY = Budget.parse("p90 <= 1.2x baseline")
COUNTED = Budget.parse("instructions_per_request[proxy] <= 1.01x baseline")


def calibration(ms: float, library: str = LIBRARY) -> Calibration:
    return Calibration(ms=ms, chunks_ms=(ms, ms * 1.02), library=library)


# ----------------------------------------------------------------- the comparison
@pytest.mark.parametrize(
    ("stored_ms", "here_ms", "ratio", "differs"),
    [
        (41.0, 78.0, 78 / 41, True),  # the user's two VMs: 1.9x
        (78.0, 41.0, 78 / 41, True),  # either way
        (46.4, 47.9, 47.9 / 46.4, False),  # the spread of 20 calibrations of one machine
        (46.4, 46.4 * SPEED_THRESHOLD, SPEED_THRESHOLD, False),  # at the threshold: the same machine
        (46.4, 46.4 * SPEED_THRESHOLD * 1.001, SPEED_THRESHOLD * 1.001, True),
        (46.9, 93.8, 2.0, True),  # a 50% CPU quota, measured
    ],
)
def test_speed_ratio_and_threshold(stored_ms: float, here_ms: float, ratio: float, differs: bool) -> None:
    check = SpeedCheck(calibration(stored_ms), calibration(here_ms))
    assert check.known
    assert check.ratio == pytest.approx(ratio)
    assert check.differs is differs


def test_the_difference_names_both_figures_and_which_way() -> None:
    slower_here = SpeedCheck(calibration(41.0), calibration(78.0))
    assert slower_here.difference() == (
        "baseline recorded on a machine that measured 1.9x faster (calibration 41 ms vs 78 ms here)"
    )
    faster_here = SpeedCheck(calibration(78.0), calibration(41.0))
    assert "measured 1.9x slower (calibration 78 ms vs 41 ms here)" in faster_here.difference()


def test_the_difference_says_what_else_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # a 2-core machine class
    idle = Calibration(ms=46.9, cpu_ms=46.9, library=LIBRARY)
    quota = Calibration(ms=93.8, cpu_ms=46.9, quota_cpus=0.5, library=LIBRARY)
    assert SpeedCheck(idle, quota).difference() == (
        "baseline recorded on a machine that measured 2.0x faster "
        "(calibration 47 ms vs 94 ms here; CPU quota none vs 0.5 CPUs here)"
    )
    two_cpus = Calibration(ms=90.0, cpu_ms=47.5, quota_cpus=2.0, library=LIBRARY)  # all of the 2 cores
    assert "CPU quota" not in SpeedCheck(idle, two_cpus).cause()
    one_cpu = Calibration(ms=93.8, cpu_ms=46.9, quota_cpus=1.0, library=LIBRARY)  # half of them
    assert SpeedCheck(idle, one_cpu).cause() == "CPU quota none vs 1 CPUs here"
    stolen = Calibration(ms=90.0, cpu_ms=47.5, library=LIBRARY)
    assert SpeedCheck(idle, stolen).cause() == "CPU time per unit 47 vs 48 ms: a hypervisor's share (steal)"
    plain_wall = Calibration(ms=90.0, cpu_ms=47.5, method="wall", library=LIBRARY)
    assert SpeedCheck(idle, plain_wall).cause().endswith("a hypervisor's share (steal) or busy neighbours")
    slower_cpu = Calibration(ms=90.0, cpu_ms=90.0, library=LIBRARY)
    assert SpeedCheck(idle, slower_cpu).cause() == "CPU time per unit 47 vs 90 ms: another processor or clock"
    assert SpeedCheck(calibration(41.0), calibration(78.0)).cause() == ""


def test_speed_is_unknown_without_a_stored_or_comparable_calibration() -> None:
    old_file = compare_speed(FINGERPRINT, calibration(40.0))
    assert stored_calibration(FINGERPRINT) is None
    assert (old_file.known, old_file.ratio, old_file.differs) == (False, None, False)
    assert "without a speed calibration" in old_file.unknown()
    assert "judged as before" in old_file.unknown()

    other_zlib = SpeedCheck(calibration(40.0, "1.3.0.zlib-ng"), calibration(80.0))
    assert not other_zlib.known and not other_zlib.differs
    assert "zlib 1.3.0.zlib-ng vs" in other_zlib.unknown()
    assert "could not be calibrated" in SpeedCheck(calibration(40.0), None).unknown()


def test_a_stored_calibration_is_read_from_the_fingerprint() -> None:
    fingerprint = {**FINGERPRINT, "calibration": calibration(41.0).to_dict()}
    assert stored_calibration(fingerprint) == calibration(41.0)
    assert stored_calibration({**FINGERPRINT, "calibration": {"ms": "fast"}}) is None


# ----------------------------------------------------------------- the policy
def counted_series() -> SeriesRecord:
    cost = CountedCost("proxy", "instructions", (18_357.0, 18_360.0, 18_355.0), requests=(200, 1000))
    return SeriesRecord(rounds=make_rounds(3), counted={"instructions": {"proxy": cost}})


def stored(tmp_path: Path, stored_ms: Optional[float]) -> BaselineStore:
    """A store holding one baseline of TEST_ID recorded on a machine that measured ``stored_ms``
    (None: a file written before calibrations)."""
    store = BaselineStore(tmp_path / ".netperf", CLASS)
    fingerprint = {**FINGERPRINT, "machine_class": CLASS}
    if stored_ms is not None:
        fingerprint["calibration"] = calibration(stored_ms).to_dict()
    store.save(Baseline.new(TEST_ID, {"candidate": counted_series()}, fingerprint))
    return store


class Speed:
    """This machine's calibration, counting how often it was asked for."""

    def __init__(self, ms: Optional[float]) -> None:
        self.ms = ms
        self.calls = 0

    def __call__(self) -> Optional[Calibration]:
        self.calls += 1
        return calibration(self.ms) if self.ms is not None else None


@pytest.fixture(autouse=True)
def same_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine's fingerprint is the stored one: only the speed differs."""
    monkeypatch.setattr(
        policy_module, "machine_fingerprint", lambda digests=None: {**FINGERPRINT, "image_digests": digests or {}}
    )


def policy(store: BaselineStore, here_ms: Optional[float], mismatch: str = "new") -> tuple[BaselinePolicy, Speed]:
    speed = Speed(here_ms)
    return BaselinePolicy(store, mismatch, update=False, speed=speed), speed


def test_a_baseline_of_a_2x_faster_machine_makes_wall_clock_budgets_new_and_judges_counted_costs(
    tmp_path: Path,
) -> None:
    chooser, speed = policy(stored(tmp_path, 41.0), 78.0)
    choice = chooser.choose(TEST_ID, [WALL, LATENCY, COUNTED])
    assert speed.calls == 1
    assert choice.baseline is not None and not choice.wall_clock
    assert choice.missing_note.startswith(
        "baseline recorded on a machine that measured 1.9x faster (calibration 41 ms vs 78 ms here): "
        "wall-clock figures do not travel; recorded as NEW"
    )
    assert any("counted costs judged against it" in note for note in choice.notes)
    lookup = choice.lookup
    assert lookup is not None
    assert lookup("default", "candidate", "rps") is None
    assert lookup("default", "candidate", "p90") is None
    assert lookup("default", "candidate", "cpu_per_request[proxy]") is None
    assert lookup("default", "candidate", "instructions_per_request[proxy]") == [18_357.0, 18_360.0, 18_355.0]


def test_a_baseline_of_a_machine_of_the_same_speed_is_judged_without_a_note(tmp_path: Path) -> None:
    chooser, _ = policy(stored(tmp_path, 46.4), 47.9)  # the spread of one machine's calibrations
    choice = chooser.choose(TEST_ID, [WALL, COUNTED])
    assert choice.wall_clock and choice.notes == []
    assert choice.lookup is not None
    rps = choice.lookup("default", "candidate", "rps")
    assert rps is not None and len(rps) == 3


@pytest.mark.parametrize(
    ("stored_ms", "here_ms", "slower"), [(50.0, 70.0, 1.4), (70.0, 50.0, None), (50.0, 52.0, None)]
)
def test_a_slower_machine_within_the_threshold_hands_the_gate_its_slowdown(
    tmp_path: Path, stored_ms: float, here_ms: float, slower: Optional[float]
) -> None:
    """1.4x slower: judged, with the slowdown for the gate to give back (measure/speed_excuse.py);
    faster, or within the calibration's repeatability: nothing to give back."""
    chooser, _ = policy(stored(tmp_path, stored_ms), here_ms)
    choice = chooser.choose(TEST_ID, [WALL])
    assert choice.wall_clock
    if slower is None:
        assert choice.slower is None
    else:
        assert choice.slower is not None and choice.slower.factor == pytest.approx(slower)
        assert choice.slower.figures == f"calibration {stored_ms:.0f} ms vs {here_ms:.0f} ms here"


def test_another_machine_hands_no_slowdown(tmp_path: Path) -> None:
    choice = policy(stored(tmp_path, 41.0), 78.0)[0].choose(TEST_ID, [WALL])
    assert not choice.wall_clock and choice.slower is None  # NEW: nothing judged, nothing given back


def test_warn_judges_with_a_note_and_fail_is_an_error(tmp_path: Path) -> None:
    store = stored(tmp_path, 41.0)
    choice = policy(store, 78.0, "warn")[0].choose(TEST_ID, [WALL])
    assert choice.wall_clock
    assert choice.lookup is not None and choice.lookup("default", "candidate", "rps") is not None
    assert choice.notes == [
        "baseline recorded on a machine that measured 1.9x faster (calibration 41 ms vs 78 ms here): "
        "wall-clock budgets judged anyway (--netperf-fingerprint-mismatch=warn)"
    ]
    with pytest.raises(NetperfError, match=r"1\.9x faster \(calibration 41 ms vs 78 ms here\).*=fail"):
        policy(store, 78.0, "fail")[0].choose(TEST_ID, [WALL])


def test_only_counted_budgets_need_no_calibration(tmp_path: Path) -> None:
    chooser, speed = policy(stored(tmp_path, 41.0), 78.0, "fail")
    choice = chooser.choose(TEST_ID, [COUNTED, Budget.parse("p90 < 10ms")])
    assert speed.calls == 0
    assert choice.wall_clock and choice.notes == []


def test_an_old_baseline_without_a_calibration_is_judged_with_a_note(tmp_path: Path) -> None:
    chooser, speed = policy(stored(tmp_path, None), 78.0, "fail")
    choice = chooser.choose(TEST_ID, [WALL])
    assert speed.calls == 0  # nothing to compare with: not measured
    assert choice.wall_clock
    assert choice.lookup is not None and choice.lookup("default", "candidate", "rps") is not None
    assert len(choice.notes) == 1 and "the speed of its machine is unknown" in choice.notes[0]


def test_no_stored_baseline_needs_no_calibration(tmp_path: Path) -> None:
    chooser, speed = policy(BaselineStore(tmp_path / ".netperf", CLASS), 78.0)
    assert chooser.choose(TEST_ID, [WALL]).baseline is None
    assert speed.calls == 0


def test_every_recorded_result_carries_the_calibration(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / ".netperf", CLASS)
    chooser, speed = policy(store, 47.0)
    candidate = SimpleNamespace(label="candidate", rounds=make_rounds(2), shape=None, driver="rust", where="host")
    measurement = SimpleNamespace(key="default", series=lambda: [candidate])
    recorded = chooser.record(TEST_ID, [measurement], {}, tmp_path)  # type: ignore[list-item]
    assert speed.calls == 1
    assert recorded.record.fingerprint["calibration"] == calibration(47.0).to_dict()
    pending = json.loads(store.pending_path_for(TEST_ID).read_text())
    assert pending["fingerprint"]["calibration"]["ms"] == 47.0
    assert pending["fingerprint"]["calibration"]["workload"] == WORKLOAD


# ----------------------------------------------------------------- the file
def test_files_with_and_without_a_calibration_load_and_a_bad_one_names_the_field(tmp_path: Path) -> None:
    store = stored(tmp_path, None)
    path = store.path_for(TEST_ID)
    assert "calibration" not in store.read(path).fingerprint  # an old file loads as before
    doc = json.loads(path.read_text())
    doc["fingerprint"]["calibration"] = calibration(41.0).to_dict()
    path.write_text(json.dumps(doc))
    assert stored_calibration(store.read(path).fingerprint) == calibration(41.0)
    for bad, where in (
        ({"ms": "fast"}, "fingerprint.calibration.ms: expected a positive number"),
        ({"ms": 0}, "fingerprint.calibration.ms: expected a positive number"),
        ({"ms": 41.0, "chunks_ms": [41.0, "x"]}, r"fingerprint.calibration.chunks_ms\[1\]: expected a number"),
        ({"ms": 41.0, "workload": 3}, "fingerprint.calibration.workload: expected a string"),
        ({"ms": 41.0, "quota_cpus": -1}, "fingerprint.calibration.quota_cpus: expected a positive number or null"),
        ([41.0], "fingerprint.calibration: expected an object or null"),
    ):
        doc["fingerprint"]["calibration"] = bad
        path.write_text(json.dumps(doc))
        with pytest.raises(BaselineError, match=where):
            store.read(path)


# ----------------------------------------------------------------- the command
def test_netperf_baseline_show_and_diff_name_the_calibrations(tmp_path: Path) -> None:
    from pytest_netperf.cli.baseline import diff, show

    store = stored(tmp_path, 46.9)
    lines: list[str] = []
    assert show(store, None, out=lines.append) == 0
    header, _, row = "\n".join(lines).splitlines()[:3]
    assert "calibration" in header and "47 ms" in row

    fingerprint = {**FINGERPRINT, "machine_class": CLASS, "calibration": calibration(93.8).to_dict()}
    store.save_pending(Baseline.new(TEST_ID, {"candidate": counted_series()}, fingerprint))
    lines.clear()
    assert diff(store, None, out=lines.append) == 0
    assert (
        "  machine speed: calibration 47 ms stored vs 94 ms last run "
        "(2.0x: another machine; wall-clock figures do not compare)"
    ) in lines


def test_another_class_baseline_judges_counted_costs_only(tmp_path: Path) -> None:
    """Under ``new``, a test with no baseline of this class is judged against another class's
    for its counted costs (they travel); its wall-clock budgets are NEW, and no calibration is
    needed."""
    stored(tmp_path, 41.0)
    here = BaselineStore(tmp_path / ".netperf", "other-class-2c")
    chooser, speed = policy(here, 78.0)
    choice = chooser.choose(TEST_ID, [WALL, COUNTED])
    assert choice.baseline is not None and not choice.wall_clock and speed.calls == 0
    assert any(n.startswith(f"counted costs judged against the baseline of {CLASS}") for n in choice.notes)
    lookup = choice.lookup
    assert lookup is not None
    assert lookup("default", "candidate", "rps") is None
    assert lookup("default", "candidate", "instructions_per_request[proxy]") == [18_357.0, 18_360.0, 18_355.0]
    assert "no baseline for this machine class (other-class-2c) yet" in choice.missing_note
    only_wall = chooser.choose(TEST_ID, [WALL])
    assert only_wall.baseline is None, "nothing that travels: NEW as before"
    for mismatch in ("warn",):
        warned, _ = policy(here, 78.0, mismatch)
        assert warned.choose(TEST_ID, [WALL, COUNTED]).wall_clock, "warn judges everything, as before"
