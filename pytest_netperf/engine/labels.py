"""The labels that mark every container and network pytest-netperf creates."""

from __future__ import annotations

import os
import socket

PREFIX = "pytest-netperf"
SESSION = f"{PREFIX}.session"
PID = f"{PREFIX}.pid"
HOST = f"{PREFIX}.host"
TOPOLOGY = f"{PREFIX}.topology"
NETWORK = f"{PREFIX}.network"
NODE = f"{PREFIX}.node"


def resource_labels(session_id: str, topology: str, network: str, pid: int | None = None) -> dict[str, str]:
    """Labels for one topology's network and containers (``pid`` defaults to this process)."""
    return {
        SESSION: session_id,
        PID: str(os.getpid() if pid is None else pid),
        HOST: socket.gethostname(),
        TOPOLOGY: topology,
        NETWORK: network,
    }


def ours_filter(session_id: str | None = None) -> dict[str, list[str]]:
    """A Docker ``filters`` value matching our resources (of one session if given)."""
    return {"label": [f"{SESSION}={session_id}" if session_id else SESSION]}
