"""Load drivers: the Rust binary (precise, efficient; HTTP and tcp:// request/response),
iperf3 (L4 throughput and packet rate) and Locust (user flows, many machines).

:func:`make_driver` is the one registry of driver names; the modules are imported only
when a driver is made, so importing this package starts nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from pytest_netperf.drivers.base import Driver
from pytest_netperf.errors import NetperfError
from pytest_netperf.runtime.commands import CommandRunner

if TYPE_CHECKING:
    from pytest_netperf.drivers.locust.session import SessionPool


#: Drivers of HTTP targets: the ones a session or a test's marker may choose as its default.
HTTP_DRIVER_NAMES = ("rust", "locust")
#: Every driver name ``measure(driver=...)`` may give (iperf3 measures iperf3:// targets only).
DRIVER_NAMES = (*HTTP_DRIVER_NAMES, "iperf3")
#: Target URL schemes only one driver measures.
_SCHEME_DRIVERS = {"iperf3": "iperf3", "tcp": "rust"}


def driver_for_target(url: str, requested: Optional[str], default: Optional[str]) -> Optional[str]:
    """The driver that measures ``url``: the one its scheme needs (``iperf3://`` iperf3,
    ``tcp://`` rust), else ``requested`` or ``default``. NetperfError when ``requested`` (or
    a default the scheme cannot use, such as locust for ``tcp://``) names another."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    needed = _SCHEME_DRIVERS.get(scheme)
    if needed is None:
        if (requested or default) == "iperf3":
            raise NetperfError(f"{url}: the iperf3 driver measures iperf3://host:port targets only")
        return requested or default
    if requested is not None and requested != needed:
        raise NetperfError(f"{url}: a {scheme}:// target is measured by the {needed} driver, not {requested!r}")
    return needed


def make_driver(
    name: str,
    runner: Optional[CommandRunner] = None,
    *,
    locustfile: Optional[Path] = None,
    user_class: Optional[str] = None,
    locust_workers: int = 0,
    locust_remote_workers: int = 0,
    locust_master: tuple[str, int] = ("127.0.0.1", 0),
    locust_workers_timeout_s: float = 60.0,
    locust_sessions: Optional[SessionPool] = None,
    cpus: Optional[str] = None,
) -> Driver:
    """The driver called ``name``; ``runner`` runs it elsewhere than the host (a container).

    A distributed Locust driver (local or remote workers) given ``locust_sessions`` runs its
    rounds on that pool's long-lived master (pinned to ``cpus`` with its local workers).
    """
    if name == "rust":
        from pytest_netperf.drivers.rust import RustDriver

        return RustDriver(runner=runner)
    if name == "iperf3":
        from pytest_netperf.drivers.iperf3 import Iperf3Driver

        return Iperf3Driver(runner=runner)
    if name == "locust":
        if runner is not None:
            raise NetperfError(
                "the Locust driver runs on the host only; this target needs the in-network (rust) driver"
            )
        from pytest_netperf.drivers.locust.driver import LocustDriver

        driver = LocustDriver(
            locustfile=locustfile,
            user_class=user_class,
            workers=locust_workers,
            remote_workers=locust_remote_workers,
            master_host=locust_master[0],
            master_port=locust_master[1],
            expect_workers_timeout_s=locust_workers_timeout_s,
        )
        if locust_sessions is not None and driver.distributed:
            driver.session = locust_sessions.session_for(driver.session_spec(cpus))
        return driver
    raise NetperfError(f"unknown netperf driver {name!r}; expected one of {', '.join(DRIVER_NAMES)}")
