"""A Locust master that serves many rounds (runs inside the master process, with gevent).

Started by the driver with ``--netperf-control <unix socket>``: the master stays up for the
pytest session, workers attach once, and the driver asks for rounds over the socket, one
JSON line per request and per answer:

- ``{"cmd": "status"}`` -> ``{"workers": [{"id", "state"}], "ready": n}``
- ``{"cmd": "round", "options": {...}, "host": url, "users": n, "workers": n}`` -> the round's
  document (schema ``netperf-locust/1``), or ``{"error": text}`` when it could not run
- ``{"cmd": "quit"}`` -> ``{"ok": true}``, then the master releases its workers and exits

A round starts the users with Locust's own ``spawn`` messages (which carry the round's
``--netperf-*`` options and host to every worker), opens and closes the window with the
``netperf_start``/``netperf_stop`` messages, collects every worker's ``netperf_report`` and
stops the users (``stop``); the workers stay attached for the next round.  A worker that
does not report (it died, or stopped sending heartbeats) is named in ``workers_missing``
with the reason, so the round is invalid instead of silently smaller.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Optional

import gevent
import gevent.event
from gevent.server import StreamServer
from gevent.socket import socket as gsocket

#: Seconds the master waits for every worker to finish spawning its users.
SPAWN_TIMEOUT_S = 60.0
#: Seconds the master waits for workers to be ready again after a round's ``stop``.
READY_AGAIN_TIMEOUT_S = 15.0


class SessionMaster:
    """Serves round requests on a Unix socket for one :class:`NetperfNode` (the master)."""

    def __init__(self, node: Any, finish_document: Callable[..., dict[str, Any]]) -> None:
        self.node = node
        self.finish_document = finish_document
        self.spawned = gevent.event.Event()
        self.server: Optional[StreamServer] = None

    @property
    def runner(self) -> Any:
        return self.node.runner

    def serve(self, path: str) -> None:
        """Listen on the Unix socket ``path`` (created here, mode 0600)."""
        import os
        import socket

        listener = gsocket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old_mask)
        listener.listen(4)
        self.server = StreamServer(listener, self._handle)
        self.server.start()

    def on_spawning_complete(self, **_kw: Any) -> None:
        self.spawned.set()

    # -- requests ---------------------------------------------------------------------------
    def _handle(self, connection: Any, _address: Any) -> None:
        reader = connection.makefile("rb")
        try:
            for line in reader:
                if not line.strip():
                    continue
                try:
                    request = json.loads(line)
                    answer, quit_after = self._answer(request)
                except Exception as exc:  # a broken request must not kill the master
                    answer, quit_after = {"error": f"{type(exc).__name__}: {exc}"}, False
                connection.sendall((json.dumps(answer) + "\n").encode())
                if quit_after:
                    gevent.spawn_later(0.1, self.runner.quit)
                    return
        finally:
            reader.close()
            connection.close()

    def _answer(self, request: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        command = request.get("cmd")
        if command == "status":
            return self.status(), False
        if command == "round":
            return self.run_round(request), False
        if command == "quit":
            return {"ok": True}, True
        return {"error": f"unknown command {command!r}"}, False

    def status(self) -> dict[str, Any]:
        workers = [{"id": str(client.id), "state": str(client.state)} for client in self.runner.clients.all]
        return {"workers": workers, "ready": len(self.runner.clients.ready)}

    # -- one round ----------------------------------------------------------------------------
    def run_round(self, request: dict[str, Any]) -> dict[str, Any]:
        options = self.node.options
        vars(options).update(request.get("options", {}))
        self.node.environment.host = request.get("host") or None
        wanted = int(request.get("workers", 0))
        attached = [client for client in self.runner.clients.all if str(client.state) != "missing"]
        if len(attached) < wanted:
            return {"error": f"only {len(attached)} of {wanted} Locust workers are attached to the master"}
        users = int(request["users"])
        self.node.reports.clear()
        self.node.all_reported.clear()
        self.spawned.clear()
        self.runner.start(users, max(users * 10, 100))
        if not self.spawned.wait(timeout=SPAWN_TIMEOUT_S):
            self.runner.stop()
            return {"error": f"the workers did not finish spawning {users} users within {SPAWN_TIMEOUT_S:.0f}s"}
        gevent.sleep(float(options.netperf_warmup))
        expected = {str(client.id) for client in self.runner.clients.all}
        self.node.expected_workers = expected
        self.runner.send_message("netperf_start")
        self.node.cpu.start()
        started = time.monotonic()
        gevent.sleep(float(options.netperf_duration))
        window_s = time.monotonic() - started
        self.node.cpu.stop()
        self.runner.send_message("netperf_stop")
        self._wait_reports(expected, float(options.netperf_report_timeout))
        missing = self._missing(expected)
        self.runner.stop()
        self._wait_ready_again(expected - set(missing))
        document = self.finish_document(window_s, expected)
        document["workers_missing"] = missing
        return document

    def _wait_reports(self, expected: set[str], timeout_s: float) -> None:
        """Until every expected worker reported, or each one still silent is known gone."""
        deadline = time.monotonic() + timeout_s
        while not self.node.all_reported.wait(timeout=0.2) and time.monotonic() < deadline:
            silent = expected - set(self.node.reports)
            if all(self._gone(worker) for worker in silent):
                return

    def _gone(self, worker: str) -> bool:
        client = self.runner.clients.get(worker)
        return client is None or str(client.state) == "missing"

    def _missing(self, expected: set[str]) -> dict[str, str]:
        """Expected workers without a report, each with the reason the master knows."""
        reasons = {}
        for worker in sorted(expected - set(self.node.reports)):
            client = self.runner.clients.get(worker)
            if client is None:
                reasons[worker] = "disconnected from the master during the round"
            elif str(client.state) == "missing":
                reasons[worker] = "stopped sending heartbeats during the round (died or unreachable)"
            else:
                reasons[worker] = f"sent no report within the report timeout (state {client.state})"
        return reasons

    def _wait_ready_again(self, workers: set[str]) -> None:
        deadline = time.monotonic() + READY_AGAIN_TIMEOUT_S
        while time.monotonic() < deadline:
            ready = {str(client.id) for client in self.runner.clients.ready}
            if workers <= ready:
                return
            gevent.sleep(0.05)
