"""Whether a stored baseline's wall-clock figures travel to this machine: its measured speed.

Every baseline records the calibration of the machine that measured it
(:mod:`pytest_netperf.runtime.machine_speed`, under ``fingerprint.calibration``). Before
a test is judged against a stored baseline, :func:`compare_speed` sets that figure beside
this machine's: beyond :data:`SPEED_THRESHOLD` (1.5x either way) the two are different
machines whatever their class, and wall-clock figures (rps, latency, CPU per request) of one
are no reference on the other. Counted costs (instructions, system calls per request) do
not depend on speed (measured on two VMs of one class: within 0.4%) and are judged as before.

A baseline recorded before calibrations existed has none: its machine's speed is
*unknown*, and it is judged as before with a note (turning every such file NEW at once
would silently stop every stored gate until re-recorded). The same holds when the two
calibrations are not comparable (another workload, another zlib) or this machine could
not be calibrated.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from pytest_netperf.runtime.machine_speed import SPEED_THRESHOLD, WALL, Calibration, quota_slowdown, speed_ratio

#: The fingerprint key the calibration is stored under.
CALIBRATION_KEY = "calibration"
#: What the user runs to re-record a baseline with this machine's calibration.
RERECORD = "`netperf baseline update` after this run (or --netperf-update-baseline)"


def stored_calibration(fingerprint: Mapping[str, Any]) -> Optional[Calibration]:
    """The calibration a baseline's fingerprint holds, or None (an older file)."""
    doc = fingerprint.get(CALIBRATION_KEY)
    if not isinstance(doc, Mapping):
        return None
    try:
        return Calibration.from_dict(doc)
    except ValueError:  # the schema rejects these; a hand-made fingerprint may hold one
        return None


@dataclass(frozen=True)
class SpeedCheck:
    """The stored baseline's calibration beside this machine's."""

    stored: Optional[Calibration]
    here: Optional[Calibration]
    threshold: float = SPEED_THRESHOLD

    def _pair(self) -> Optional[tuple[Calibration, Calibration]]:
        """(stored, here) when both were measured, of the same workload and library."""
        if self.stored is None or self.here is None or not self.stored.comparable(self.here):
            return None
        return self.stored, self.here

    @property
    def known(self) -> bool:
        """Both calibrations measured, of the same workload and library."""
        return self._pair() is not None

    @property
    def ratio(self) -> Optional[float]:
        """How many times slower the slower machine measured (>= 1), when known."""
        pair = self._pair()
        return speed_ratio(*pair) if pair is not None else None

    @property
    def differs(self) -> bool:
        """Whether the baseline was recorded on a machine of another speed."""
        ratio = self.ratio
        return ratio is not None and ratio > self.threshold

    def figures(self) -> str:
        """``calibration 41 ms vs 78 ms here``."""
        stored = f"{self.stored.ms:.0f} ms" if self.stored is not None else "none"
        here = f"{self.here.ms:.0f} ms" if self.here is not None else "not measured"
        return f"calibration {stored} vs {here} here"

    def cause(self) -> str:
        """What differs besides the figure: the CPU quota, else the processor's own time per
        unit (another processor) or not (a hypervisor's share); "" when unknown."""
        pair = self._pair()
        if pair is None:
            return ""
        stored, here = pair
        cores = os.cpu_count() or 1  # one machine class: one count of cores
        if quota_slowdown(stored.quota_cpus, cores) != quota_slowdown(here.quota_cpus, cores):
            return f"CPU quota {_cpus(stored.quota_cpus)} vs {_cpus(here.quota_cpus)} here"
        if stored.cpu_ms is None or here.cpu_ms is None:
            return ""
        cpu = f"CPU time per unit {stored.cpu_ms:.0f} vs {here.cpu_ms:.0f} ms"
        if max(stored.cpu_ms, here.cpu_ms) / min(stored.cpu_ms, here.cpu_ms) > self.threshold:
            return f"{cpu}: another processor or clock"
        if WALL in (stored.method, here.method):  # a plain wall time holds the neighbours' share too
            return f"{cpu}: a hypervisor's share (steal) or busy neighbours"
        return f"{cpu}: a hypervisor's share (steal)"

    def difference(self) -> str:
        """``baseline recorded on a machine that measured 1.9x faster (calibration 41 ms vs 78 ms here)``."""
        pair = self._pair()
        if pair is None:
            return f"baseline recorded on a machine of unknown speed ({self.figures()})"
        stored, here = pair
        way = "faster" if stored.ms < here.ms else "slower"
        cause = self.cause()
        detail = f"{self.figures()}; {cause}" if cause else self.figures()
        return f"baseline recorded on a machine that measured {speed_ratio(stored, here):.1f}x {way} ({detail})"

    def unknown(self) -> str:
        """Why the speed could not be compared (only meaningful when not :attr:`known`)."""
        if self.stored is None:
            return (
                "baseline recorded without a speed calibration (before pytest-netperf measured one): the speed "
                f"of its machine is unknown, so wall-clock budgets are judged as before; re-record it with {RERECORD} "
                "to have its machine's speed checked"
            )
        if self.here is None:
            return "this machine's speed could not be calibrated: wall-clock budgets are judged without a speed check"
        return (
            f"the baseline's speed calibration is not comparable with this machine's ({self.stored.workload}, "
            f"zlib {self.stored.library or '?'} vs {self.here.workload}, zlib {self.here.library or '?'}): "
            "wall-clock budgets are judged without a speed check"
        )


def _cpus(quota: Optional[float]) -> str:
    return "none" if quota is None else f"{quota:g} CPUs"


def compare_speed(
    fingerprint: Mapping[str, Any], here: Optional[Calibration], threshold: float = SPEED_THRESHOLD
) -> SpeedCheck:
    """The speed check of a baseline with ``fingerprint`` on a machine that measured ``here``."""
    return SpeedCheck(stored_calibration(fingerprint), here, threshold)


def new_note(check: SpeedCheck) -> str:
    """The note of a wall-clock budget made NEW by a speed difference."""
    return (
        f"{check.difference()}: wall-clock figures do not travel; recorded as NEW. Record this machine's "
        f"baseline with {RERECORD}, or give runners of different speed their own --netperf-machine-class; "
        "--netperf-fingerprint-mismatch=warn judges against it anyway"
    )


def counted_note(check: SpeedCheck) -> str:
    """The note of a test whose counted costs are judged although the speed differs."""
    return f"{check.difference()}: counted costs judged against it (they do not depend on speed)"


def warn_note(check: SpeedCheck) -> str:
    """The note of wall-clock budgets judged although the speed differs (``warn``)."""
    return f"{check.difference()}: wall-clock budgets judged anyway (--netperf-fingerprint-mismatch=warn)"


def fail_text(check: SpeedCheck) -> str:
    """The error under ``--netperf-fingerprint-mismatch=fail``."""
    return (
        f"{check.difference()}: wall-clock figures do not travel (--netperf-fingerprint-mismatch=fail); "
        "record this machine's baseline with --netperf-update-baseline"
    )
