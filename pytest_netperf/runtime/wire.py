"""Packets on the wire: one interface's counters in a server's network namespace.

A :class:`WireProbe` reads ``/proc/<pid>/net/dev`` of the server container's main process
for one interface (``eth0`` on a Docker network, ``lo`` for a server on the host network)
just before and just after a round. The difference says how many packets, of what average
size, crossed that interface: where a virtual network coalesces small TCP segments into
large ones (GSO/GRO), the average packet is far larger than the payload written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_netperf.results.model import WireCounters
from pytest_netperf.runtime.cgroups import CgroupError, interface_counters

#: Returns the pid whose network namespace holds the interface (the server's main process).
PidSource = Callable[[], int]


@dataclass(frozen=True)
class _Reading:
    at: float
    rx_packets: int
    tx_packets: int
    rx_bytes: int
    tx_bytes: int


class WireProbe:
    """Reads one interface of one network namespace around each round."""

    def __init__(self, pid_of: PidSource, interface: str, what: str, proc: Path = Path("/proc")) -> None:
        self._pid_of = pid_of
        self.interface = interface
        #: Human description of whose interface this is (``eth0 of l4-server``).
        self.what = what
        self._proc = proc

    def read(self) -> _Reading:
        """The counters now; CgroupError naming the file when they cannot be read."""
        path = self._proc / str(self._pid_of()) / "net" / "dev"
        try:
            text = path.read_text()
        except OSError as exc:
            raise CgroupError(f"cannot read {path} ({self.what}): {exc}") from None
        counters = interface_counters(text, path)
        if self.interface not in counters:
            raise CgroupError(f"{path} ({self.what}) has no interface {self.interface!r}: {', '.join(counters)}")
        rx_p, tx_p, rx_b, tx_b = counters[self.interface]
        return _Reading(time.monotonic(), rx_p, tx_p, rx_b, tx_b)

    def between(self, first: _Reading, last: _Reading) -> WireCounters:
        """What crossed the interface between two readings."""
        return WireCounters(
            interface=self.interface,
            rx_packets=last.rx_packets - first.rx_packets,
            rx_bytes=last.rx_bytes - first.rx_bytes,
            tx_packets=last.tx_packets - first.tx_packets,
            tx_bytes=last.tx_bytes - first.tx_bytes,
            span_s=last.at - first.at,
        )


def container_pid(client: object, container_id: str) -> PidSource:
    """A pid source asking Docker for a running container's main process."""

    def pid() -> int:
        try:
            state = client.api.inspect_container(container_id).get("State") or {}  # type: ignore[attr-defined]
        except Exception as exc:  # docker errors: the container is gone or Docker is
            raise CgroupError(f"cannot inspect container {container_id[:12]}: {exc}") from None
        found = int(state.get("Pid") or 0)
        if not state.get("Running") or found <= 0:
            raise CgroupError(f"container {container_id[:12]} is not running")
        return found

    return pid
