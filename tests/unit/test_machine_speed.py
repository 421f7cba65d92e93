"""The machine-speed calibration: its workload, its arithmetic (with a fake clock) and its record."""

from __future__ import annotations

import math
import zlib
from typing import Any, Callable, Optional

import pytest

from pytest_netperf.runtime import machine_speed
from pytest_netperf.runtime.machine_speed import Calibration, calibrate, speed_ratio, work_block


class SimulatedMachine:
    """Stands in for ``zlib`` and the clocks: each block costs ``block_s`` of CPU time, plus
    ``waits(block index)`` seconds on a run queue and ``steal_s`` seconds of steal in wall time."""

    ZLIB_RUNTIME_VERSION = "sim"

    def __init__(self, block_s: float, waits: Callable[[int], float] = lambda _: 0.0, steal_s: float = 0.0) -> None:
        self.block_s, self.waits, self.steal_s = block_s, waits, steal_s
        self.blocks = 0
        self.wall = self.cpu = self.waited = 0.0

    def compress(self, data: bytes, level: int) -> bytes:
        wait = self.waits(self.blocks)
        self.cpu += self.block_s
        self.waited += wait
        self.wall += self.block_s + wait + self.steal_s
        self.blocks += 1
        return data

    def run(
        self, monkeypatch: pytest.MonkeyPatch, kernel_wait: bool = True, quota: Optional[float] = None, **options: Any
    ) -> Calibration:
        monkeypatch.setattr(machine_speed, "zlib", self)
        monkeypatch.setattr(machine_speed, "work_block", lambda: b"x")
        return machine_speed.measure(
            clock=lambda: self.wall,
            cpu_clock=lambda: self.cpu,
            waited=(lambda: self.waited) if kernel_wait else None,
            quota=quota,
            **options,
        )


def test_the_work_block_is_the_same_bytes_on_every_machine() -> None:
    block = work_block()
    assert len(block) == machine_speed.BLOCK_BYTES
    assert block == work_block()
    assert block.startswith(work_block(64))
    # text-like: compresses, but not to nothing (zlib has real work on every byte)
    assert 3 < len(block) / len(zlib.compress(block, 6)) < 10


def test_the_figure_is_the_best_chunk_without_the_wait_behind_others(monkeypatch: pytest.MonkeyPatch) -> None:
    # 10 ms a block: the 4 warm-up blocks size chunks of 15 blocks (150 ms of CPU); a neighbour
    # makes every block but those of the second chunk (blocks 19-33) wait 5 ms
    machine = SimulatedMachine(0.010, lambda block: 0.0 if 19 <= block < 34 else 0.005)
    measured = machine.run(monkeypatch, chunks=3, min_chunk_s=0.15)
    assert machine.blocks == 4 + 3 * 15
    assert measured.chunks_ms == pytest.approx((80.0, 80.0, 80.0))  # ms per unit of 8 blocks
    assert measured.ms == pytest.approx(80.0)
    assert measured.cpu_ms == pytest.approx(80.0)
    assert measured.wall_ms == pytest.approx(80.0)  # the second chunk
    assert (measured.method, measured.workload, measured.library) == (
        machine_speed.WITHOUT_WAIT,
        machine_speed.WORKLOAD,
        "sim",
    )


def test_without_the_kernels_wait_the_figure_is_the_best_wall_time(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = SimulatedMachine(0.010, lambda block: 0.0 if 19 <= block < 34 else 0.005)
    measured = machine.run(monkeypatch, kernel_wait=False, chunks=3, min_chunk_s=0.15)
    assert measured.chunks_ms == pytest.approx((120.0, 80.0, 120.0))
    assert measured.ms == pytest.approx(80.0)
    assert measured.method == machine_speed.WALL


def test_a_quota_below_the_machines_cores_slows_the_figure_and_steal_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    half = SimulatedMachine(0.010, lambda _: 0.010).run(monkeypatch, quota=0.5, chunks=3)  # throttled: waits
    assert half.ms == pytest.approx(160.0)
    assert half.cpu_ms == pytest.approx(80.0)
    assert half.quota_cpus == 0.5
    assert SimulatedMachine(0.010).run(monkeypatch, quota=1.5, chunks=3).ms == pytest.approx(80.0)
    # on 2 cores a quota of one CPU leaves half the machine, though one thread runs unthrottled
    assert SimulatedMachine(0.010).run(monkeypatch, quota=1.0, cores=2, chunks=3).ms == pytest.approx(160.0)
    assert SimulatedMachine(0.010).run(monkeypatch, quota=1.5, cores=2, chunks=3).ms == pytest.approx(106.7, rel=1e-3)
    assert SimulatedMachine(0.010).run(monkeypatch, quota=2.0, cores=2, chunks=3).ms == pytest.approx(80.0)
    assert machine_speed.quota_slowdown(None, 4) == machine_speed.quota_slowdown(8.0, 4) == 1.0
    stolen = SimulatedMachine(0.010, steal_s=0.010).run(monkeypatch, chunks=3)  # a hypervisor's cap
    assert stolen.ms == pytest.approx(160.0)
    assert stolen.cpu_ms == pytest.approx(80.0)


def test_chunks_are_sized_by_cpu_time_so_a_quota_cannot_shrink_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # a warm-up that waited 10x its CPU time must not size chunks that fit in one period's quota
    machine = SimulatedMachine(0.010, lambda block: 0.1 if block < 4 else 0.0)
    machine.run(monkeypatch, chunks=3, min_chunk_s=0.15)
    assert machine.blocks == 4 + 3 * 15


def test_chunks_are_never_shorter_than_one_work_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = SimulatedMachine(1.0)  # a block takes longer than a chunk should
    measured = machine.run(monkeypatch, chunks=3, max_total_s=100.0)
    assert machine.blocks == 4 + 3 * machine_speed.BLOCKS_PER_UNIT
    assert measured.ms == pytest.approx(8000.0)


def test_calibration_stops_at_its_time_limit_after_the_least_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = SimulatedMachine(0.010, lambda _: 0.07)  # chunks of 1.2 s: the limit is reached at once
    measured = machine.run(monkeypatch, chunks=10, max_total_s=2.0)
    assert len(measured.chunks_ms) == machine_speed.MIN_CHUNKS


def test_a_real_calibration_is_short_and_positive() -> None:
    measured = calibrate(chunks=3, min_chunk_s=0.02)
    assert len(measured.chunks_ms) == 3
    assert measured.ms == min(measured.chunks_ms) > 0
    assert measured.cpu_ms is not None and measured.wall_ms is not None
    assert measured.ms >= measured.cpu_ms * 0.99  # never faster than the processor itself


def test_the_stored_form_round_trips_and_rejects_what_is_not_a_figure() -> None:
    calibration = Calibration(
        ms=93.8, chunks_ms=(94.0, 93.8), wall_ms=92.1, cpu_ms=46.9, quota_cpus=0.5, method="wall", library="1.2.13"
    )
    doc = calibration.to_dict()
    assert doc == {
        "ms": 93.8,
        "chunks_ms": [94.0, 93.8],
        "wall_ms": 92.1,
        "cpu_ms": 46.9,
        "quota_cpus": 0.5,
        "method": "wall",
        "workload": machine_speed.WORKLOAD,
        "library": "1.2.13",
    }
    assert Calibration.from_dict(doc) == calibration
    for bad in (None, 0, -1.0, "fast", True, math.inf, math.nan):
        with pytest.raises(ValueError, match="ms: expected a positive number"):
            Calibration.from_dict({**doc, "ms": bad})


def test_calibrations_compare_only_for_the_same_work_and_library() -> None:
    here = Calibration(ms=40.0, library="1.2.13")
    assert here.comparable(Calibration(ms=80.0, library="1.2.13"))
    assert not here.comparable(Calibration(ms=40.0, library="1.3.0.zlib-ng"))
    assert not here.comparable(Calibration(ms=40.0, workload="another-v2", library="1.2.13"))
    assert speed_ratio(here, Calibration(ms=80.0)) == speed_ratio(Calibration(ms=80.0), here) == 2.0
