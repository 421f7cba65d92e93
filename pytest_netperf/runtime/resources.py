"""The host's cores and the default split of them between the load driver and the system under test.

:func:`default_split` keeps the load driver and the system under test on different cores
where the machine has enough of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pytest_netperf.topology.resources import cpuset_text

#: Below this many usable cores the driver and the system under test share all of them:
#: splitting two cores leaves each side one, which starves whichever side needs two.
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
