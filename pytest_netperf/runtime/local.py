"""Echo servers as local processes (``netperf-driver echo``) for loopback tests."""

from __future__ import annotations

import http.client
import os
import selectors
import socket
import ssl
import subprocess
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Optional

from pytest_netperf.errors import DriverError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.process_guard import driver_preexec
from pytest_netperf.runtime.test_ca import SessionCA


class LocalEchoServer:
    """Context manager running ``netperf-driver echo`` on this machine.

    Start reads the ``listening on IP:PORT`` line (so port 0 works), then waits for
    ``/healthz``; the process is killed on exit and also when starting fails. ``cpus`` (a
    cpuset such as ``2-3``) keeps the server on those cores, e.g. the system under test's
    share of :func:`~pytest_netperf.runtime.resources.default_split`, away from the driver's.

    With ``tls`` (a :class:`~pytest_netperf.runtime.test_ca.SessionCA`) it serves HTTPS with
    the CA's server certificate (and, with ``mutual``, asks for a client certificate of that
    CA); ``url`` is then ``https://`` and the readiness probe is an HTTPS GET that trusts
    only that CA (presenting its client certificate when ``mutual``). ``extra``: more
    ``netperf-driver echo`` options (e.g. ``--no-http2``).
    """

    def __init__(
        self,
        listen: str = "127.0.0.1:0",
        id: Optional[str] = None,
        next_url: Optional[str] = None,
        binary: Optional[str] = None,
        threads: Optional[int] = None,
        start_timeout_s: float = 10.0,
        cpus: Optional[str] = None,
        tls: Optional[SessionCA] = None,
        mutual: bool = False,
        extra: Sequence[str] = (),
    ) -> None:
        if mutual and tls is None:
            raise ValueError("mutual=True needs tls= (the SessionCA whose client certificates to require)")
        self.tls, self.mutual = tls, mutual
        self.extra = tuple(extra)
        self.listen = listen
        self.cpus = cpus
        self.id = id
        self.next_url = next_url
        self.binary = binary
        self.threads = threads
        self.start_timeout_s = start_timeout_s
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.host = ""
        self.port = 0

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:41234`` (``https://`` with ``tls``)."""
        if not self.port:
            raise RuntimeError("echo server is not running")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls is not None else 'http'}://{host}:{self.port}"

    @property
    def pid(self) -> int:
        """Process id (e.g. to SIGSTOP the server in a test)."""
        if self.process is None:
            raise RuntimeError("echo server is not running")
        return self.process.pid

    def argv(self) -> list[str]:
        """The command line used to start the server."""
        args = [self.binary or find_driver_binary(), "echo", "--listen", self.listen]
        if self.id:
            args += ["--id", self.id]
        if self.next_url:
            args += ["--next", self.next_url]
        if self.threads:
            args += ["--threads", str(self.threads)]
        if self.tls is not None:
            args += self.tls.echo_args(self.mutual)
        return args + list(self.extra)

    def start(self) -> LocalEchoServer:
        """Start and wait until ready; raises :class:`DriverError` on failure."""
        argv = self.argv()
        try:
            preexec = driver_preexec(self.cpus)
        except ValueError as exc:
            raise DriverError(f"echo server: {exc}") from exc
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=preexec)
        try:
            deadline = time.monotonic() + self.start_timeout_s
            self.host, self.port = self._read_address(deadline)
            self._wait_healthy(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Kill the process (idempotent)."""
        proc, self.process = self.process, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> LocalEchoServer:
        return self.start()

    def __exit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        self.stop()

    def _read_address(self, deadline: float) -> tuple[str, int]:
        assert self.process is not None
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        line = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while not line.endswith(b"\n"):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DriverError(f"echo server printed no 'listening on' line within {self.start_timeout_s:g}s")
                if not sel.select(remaining):
                    continue
                chunk = os.read(fd, 1)
                if not chunk:
                    raise DriverError(f"echo server exited during start: {self._stderr_line()}")
                line += chunk
        text = line.decode(errors="replace").strip()
        if not text.startswith("listening on "):
            raise DriverError(f"unexpected echo server output {text!r}")
        host, _, port = text[len("listening on ") :].rpartition(":")
        host = host.strip("[]")
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1" if host == "0.0.0.0" else "::1"
        return host, int(port)

    def _wait_healthy(self, deadline: float) -> None:
        last_error = "no attempt"
        context = self._client_context()
        while time.monotonic() < deadline:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=1.0)
            try:
                if context is not None:
                    raw = socket.create_connection((self.host, self.port), timeout=1.0)
                    try:
                        conn.sock = context.wrap_socket(raw, server_hostname=self.host)
                    except BaseException:
                        raw.close()
                        raise
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    return
            except OSError as exc:
                last_error = str(exc)
            finally:
                conn.close()
            time.sleep(0.02)
        raise DriverError(f"echo server at {self.url} not healthy within {self.start_timeout_s:g}s: {last_error}")

    def _client_context(self) -> Optional[ssl.SSLContext]:
        """The readiness probe's TLS context: trust only the test CA (its client certificate too
        when ``mutual``); None for a cleartext server."""
        if self.tls is None:
            return None
        context = ssl.create_default_context(cafile=str(self.tls.files.ca))
        if self.mutual:
            context.load_cert_chain(str(self.tls.files.client_cert), str(self.tls.files.client_key))
        return context

    def _stderr_line(self) -> str:
        assert self.process is not None
        assert self.process.stderr is not None
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "(still running)"
        lines = [ln for ln in self.process.stderr.read().decode(errors="replace").splitlines() if ln.strip()]
        return lines[-1] if lines else f"exit code {self.process.returncode}"
