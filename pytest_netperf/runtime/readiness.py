"""Readiness: poll an HTTP(S) probe (or a TCP connect) of a container's bridge address until it answers."""

from __future__ import annotations

import http.client
import socket
import ssl
import time
from typing import Callable, Optional

from docker.models.containers import Container

from pytest_netperf.errors import NetperfError


class NodeNotReady(NetperfError):
    """A node did not answer its readiness probe in time, or its container exited first."""


class HttpReadiness:
    """Poll ``GET http://<address>:<port><path>`` until it answers 2xx (TCP connect when no path).

    Fails early when the container exits, or when ``give_up`` returns a reason (e.g. the
    container listens on other ports only). Timeout and poll interval are explicit. With
    ``tls`` (an SSL context, e.g. :func:`tls_context`) the GET goes over HTTPS, sending
    ``server_name`` as SNI and checking the certificate against it (default: the address).
    """

    def __init__(
        self,
        address: str,
        port: int,
        path: str | None,
        timeout_s: float = 30.0,
        poll_interval_s: float = 0.05,
        give_up: Optional[Callable[[], Optional[str]]] = None,
        tls: Optional[ssl.SSLContext] = None,
        server_name: Optional[str] = None,
    ) -> None:
        self.address, self.port, self.path = address, port, path
        self.tls, self.server_name = tls, server_name
        self.give_up = give_up
        self.timeout_s = float(timeout_s)
        self.poll_interval_s = float(poll_interval_s)
        self.last_problem = "not probed yet"

    def describe(self) -> str:
        """``http://addr:port/path`` or ``tcp://addr:port``."""
        if self.path is None:
            return f"tcp://{self.address}:{self.port}"
        if self.tls is not None:
            name = f" (SNI {self.server_name})" if self.server_name else ""
            return f"https://{self.address}:{self.port}{self.path}{name}"
        return f"http://{self.address}:{self.port}{self.path}"

    def wait_until_ready(self, container: Container) -> None:
        """Return once the probe succeeds; raise NodeNotReady otherwise."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            if self.probe_once():
                return
            status, exit_code = _status(container)
            if status in ("exited", "dead"):
                code = "" if exit_code is None else f" with exit code {exit_code}"
                raise NodeNotReady(f"container exited ({status}){code} before {self.describe()} answered")
            hopeless = self.give_up() if self.give_up is not None else None
            if hopeless:
                raise NodeNotReady(f"{self.describe()} not answering ({self.last_problem}): {hopeless}")
            if time.monotonic() >= deadline:
                raise NodeNotReady(
                    f"{self.describe()} not ready after {self.timeout_s:.0f}s (last problem: {self.last_problem})"
                )
            time.sleep(self.poll_interval_s)

    def probe_once(self) -> bool:
        """One attempt; remembers what went wrong in ``last_problem``."""
        timeout = max(0.2, min(1.0, self.timeout_s))
        try:
            if self.path is None:
                socket.create_connection((self.address, self.port), timeout=timeout).close()
                return True
            connection = http.client.HTTPConnection(self.address, self.port, timeout=timeout)
            try:
                if self.tls is not None:
                    raw = socket.create_connection((self.address, self.port), timeout=timeout)
                    try:
                        connection.sock = self.tls.wrap_socket(raw, server_hostname=self.server_name or self.address)
                    except BaseException:
                        raw.close()
                        raise
                connection.request("GET", self.path, headers={"Connection": "close"})
                status = connection.getresponse().status
            finally:
                connection.close()
        except (OSError, http.client.HTTPException) as exc:
            self.last_problem = f"{type(exc).__name__}: {exc}"
            return False
        self.last_problem = f"HTTP {status}"
        return 200 <= status < 300


def tls_context(ca_file: str, client: tuple[str, str] | None = None) -> ssl.SSLContext:
    """A client context trusting only the CA bundle ``ca_file`` (a readiness probe over TLS),
    presenting the certificate and key files ``client`` (a mutual listener)."""
    context = ssl.create_default_context(cafile=ca_file)
    if client is not None:
        context.load_cert_chain(*client)
    return context


def _status(container: Container) -> tuple[str, int | None]:
    """The container's status and, once it has exited, its exit code."""
    try:
        container.reload()
    except Exception:  # a vanished container reads as dead
        return "dead", None
    code = (container.attrs.get("State") or {}).get("ExitCode")
    return str(container.status), code if isinstance(code, int) else None
