"""The host's cores and the default split of them between the load driver and the system under test.

:func:`default_split` keeps the load driver and the system under test on different cores
where the machine has enough of them; :func:`containers_split` is the split the system under
test's containers (topology nodes and Compose services alike) run with.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from pytest_netperf.cpusets import cpuset_text, parse_cpuset

#: Below this many usable cores the driver and the system under test share all of them.
#: Split 1:1 on 2 cores, the driver's one thread saturated (95-98% CPU) in closed-loop rounds
#: against a bare echo server or a direct path: 3 INVALID gates in the example job. A pinned
#: driver (``--netperf-driver-cpus 0``) is still the better layout for fixed-rate gates beside
#: a busy neighbour: two unchanged echo containers loaded at once, the driver on core 0 and
#: both on core 1, spread 1.9% (sd of the per-round CPU-per-request ratio) against 18% with
#: all three on any core (benchmarks/gate_power.py --fixed-placement pinned | float).
MIN_CORES_TO_SPLIT = 4


@dataclass(frozen=True)
class CoreSplit:
    """Which cores the load driver and the system under test get."""

    driver: str
    sut: str

    def describe(self) -> str:
        """``driver cores 0-1, system under test cores 2-3``."""
        return f"driver cores {self.driver}, system under test cores {self.sut}"


def usable_cores() -> list[int]:
    """The cores this process may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def default_split(cores: list[int] | None = None) -> CoreSplit | None:
    """Driver on the first quarter of the cores (at least one), the rest for the system under
    test; None (share everything) below :data:`MIN_CORES_TO_SPLIT` cores."""
    cores = usable_cores() if cores is None else sorted(cores)
    if len(cores) < MIN_CORES_TO_SPLIT:
        return None
    driver_count = max(1, len(cores) // 4)
    return CoreSplit(driver=cpuset_text(cores[:driver_count]), sut=cpuset_text(cores[driver_count:]))


def split_around_driver(driver: str | None, cores: list[int] | None = None) -> CoreSplit | None:
    """The split that keeps the system under test off a pinned driver's cores: ``driver`` (a
    cpuset) and the usable cores it leaves; None when the driver is not pinned or leaves none.
    Beside a busy neighbour on 2 cores this is what lets twins compare: with the driver on
    core 0 and both echo containers on core 1, the per-round ratio of CPU per request spread
    1.9% (sd); with all three on any core, 18%."""
    if driver is None:
        return None
    cores = usable_cores() if cores is None else sorted(cores)
    taken = set(parse_cpuset(driver))
    rest = [core for core in cores if core not in taken]
    return CoreSplit(driver=cpuset_text(sorted(taken)), sut=cpuset_text(rest)) if rest else None


def containers_split(driver: str | Literal["auto"] | None, cores: list[int] | None = None) -> CoreSplit | None:
    """The split the system under test's containers run with beside the load driver: around
    ``driver``, the session's resolved ``--netperf-driver-cpus`` (None: not pinned, they share
    every core), or :func:`default_split` for ``"auto"`` (no netperf session resolved it)."""
    if driver == "auto":
        return default_split(cores)
    return split_around_driver(driver, cores)
