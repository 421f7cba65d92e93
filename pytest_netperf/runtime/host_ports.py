"""Ports on the host: which are free, for nodes that run on the host network."""

from __future__ import annotations

import random
import socket

#: Where free host ports are looked for.
PORT_RANGE = (20000, 60000)


def port_free(port: int) -> bool:
    """True when ``port`` can be bound for TCP and for UDP on every host address just now."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as probe:
            try:
                probe.bind(("0.0.0.0", port))
            except OSError:
                return False
    return True


def free_host_ports(count: int, seed: int | None = None) -> tuple[int, ...]:
    """``count`` distinct ports free for TCP and UDP on every host address just now."""
    chooser = random.Random(seed)
    found: list[int] = []
    for _ in range(2000):
        port = chooser.randrange(*PORT_RANGE)
        if port not in found and port_free(port):
            found.append(port)
            if len(found) == count:
                return tuple(found)
    raise OSError(f"no {count} free TCP+UDP ports found in {PORT_RANGE[0]}..{PORT_RANGE[1]}")
