"""Which TCP ports a container's processes listen on, read from its network namespace.

A port the image declares (``EXPOSE 80``) but no process opens would otherwise be polled
for the whole readiness timeout. :class:`ListenWatch` ends that wait once the container
has listened on the same other ports for :data:`SETTLE_S` seconds: its servers are up, and
the asked port is not among them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Optional

#: ``st`` column value of a listening socket in ``/proc/net/tcp``.
TCP_LISTEN = "0A"
#: Seconds the set of listening ports must stay the same before a missing port is final.
SETTLE_S = 5.0


#: ``::1`` as ``/proc/net/tcp6`` writes it.
IPV6_LOOPBACK = "00000000000000000000000001000000"
#: The prefix of an IPv4-mapped IPv6 address there.
IPV4_MAPPED = "0000000000000000FFFF0000"


def is_loopback(address_hex: str) -> bool:
    """Is a ``/proc/net/tcp{,6}`` local address (hex, host byte order per word) on loopback?"""
    if len(address_hex) == 8:
        return address_hex[-2:] == "7F"  # 127.x.x.x, the first octet in the last byte
    return address_hex == IPV6_LOOPBACK or (address_hex.startswith(IPV4_MAPPED) and address_hex[-2:] == "7F")


def parse_listening(table: str) -> set[int]:
    """Ports in LISTEN state in a ``/proc/net/tcp`` or ``tcp6`` table that another host could
    reach: loopback listeners (a sidecar's app, Docker's embedded DNS on 127.0.0.11) are left out."""
    ports = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[3] == TCP_LISTEN:
            address, port = fields[1].rsplit(":", 1)
            if not is_loopback(address):
                ports.add(int(port, 16))
    return ports


def listening_ports(pid: int, container_id: str, proc: Path = Path("/proc")) -> Optional[set[int]]:
    """Ports listened on in the network namespace of process ``pid``, or None when ``pid`` is
    not visible here as a process of container ``container_id`` (a remote or rootless engine)."""
    if pid <= 0 or not container_id:
        return None
    try:
        if container_id not in (proc / str(pid) / "cgroup").read_text():
            return None
        tables = [(proc / str(pid) / "net" / name).read_text() for name in ("tcp", "tcp6")]
    except OSError:
        return None
    return set().union(*(parse_listening(t) for t in tables))


class ListenWatch:
    """Says when waiting for ``port`` is pointless: the container listens on other ports only,
    unchanged for :data:`SETTLE_S` seconds."""

    def __init__(
        self,
        read: Callable[[], Optional[set[int]]],
        port: int,
        settle_s: float = SETTLE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read, self._port, self._settle_s, self._clock = read, port, settle_s, clock
        self._seen: Optional[set[int]] = None
        self._since = 0.0
        #: The ports listened on when the watch gave up (None while it has not).
        self.gave_up_on: Optional[set[int]] = None

    def problem(self) -> Optional[str]:
        """Why ``port`` will not open, or None while it still may."""
        ports = self._read()
        now = self._clock()
        if not ports or self._port in ports:
            self._seen = None
            return None
        if ports != self._seen:
            self._seen, self._since = ports, now
            return None
        if now - self._since < self._settle_s:
            return None
        self.gave_up_on = ports
        shown = ", ".join(str(p) for p in sorted(ports))
        return (
            f"nothing listens on port {self._port}: the container listens on {shown} only "
            f"(unchanged for {self._settle_s:g}s)"
        )
