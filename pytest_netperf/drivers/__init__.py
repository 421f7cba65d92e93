"""Load drivers: the Rust binary (precise, efficient) and Locust (user flows, many machines).

:func:`make_driver` is the one registry of driver names; the modules are imported only
when a driver is made, so importing this package starts nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from pytest_netperf.drivers.base import CommandRunner, Driver
from pytest_netperf.errors import NetperfError

#: Driver names a test or option may give.
DRIVER_NAMES = ("rust", "locust")


def make_driver(
    name: str,
    runner: Optional[CommandRunner] = None,
    *,
    locustfile: Optional[Path] = None,
    user_class: Optional[str] = None,
    locust_workers: int = 0,
) -> Driver:
    """The driver called ``name``; ``runner`` runs it elsewhere than the host (a container)."""
    if name == "rust":
        from pytest_netperf.drivers.rust import RustDriver

        return RustDriver(runner=runner)
    if name == "locust":
        if runner is not None:
            raise NetperfError(
                "the Locust driver runs on the host only; this target needs the in-network (rust) driver"
            )
        from pytest_netperf.drivers.locust.driver import LocustDriver

        return LocustDriver(locustfile=locustfile, user_class=user_class, workers=locust_workers)
    raise NetperfError(f"unknown netperf driver {name!r}; expected one of {', '.join(DRIVER_NAMES)}")
