"""``LocalEchoServer`` serving HTTPS (and mutual TLS) with the session's test CA: it starts
once a TLS readiness probe answers, and the real driver measures it."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from dataclasses import replace
from urllib.parse import urlsplit

import pytest

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer
from pytest_netperf.runtime.test_ca import SessionCA
from pytest_netperf.tls_options import TlsOptions

try:
    BINARY = find_driver_binary()
except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"netperf-driver binary not available: {exc}", allow_module_level=True)

SHAPE = LoadShape(connections=2, threads=1, duration_s=0.3, warmup_s=0.1, timeout_s=2.0)


@pytest.fixture(scope="module")
def ca() -> Iterator[SessionCA]:
    with SessionCA() as authority:
        yield authority


def test_tls_echo_starts_on_a_tls_probe_and_is_measured_over_https(ca: SessionCA) -> None:
    with LocalEchoServer(threads=1, tls=ca) as server:
        assert server.url.startswith("https://127.0.0.1:")
        assert "--tls-cert" in server.argv() and "--tls-client-ca" not in server.argv()
        parts = urlsplit(server.url)
        plain = http.client.HTTPConnection(parts.hostname, parts.port, timeout=2)
        try:  # it speaks TLS only: a cleartext request gets no HTTP answer
            with pytest.raises((http.client.HTTPException, OSError)):
                plain.request("GET", "/healthz")
                plain.getresponse()
        finally:
            plain.close()
        result = RustDriver(binary=BINARY).run(server.url + "/", replace(SHAPE, tls=TlsOptions(ca=str(ca.files.ca))))
        assert result.ok > 0 and not result.errors


def test_mutual_tls_echo_requires_the_client_certificate(ca: SessionCA) -> None:
    files = ca.files
    with LocalEchoServer(threads=1, tls=ca, mutual=True) as server:
        assert "--tls-client-ca" in server.argv()
        tls = TlsOptions(ca=str(files.ca), cert=str(files.client_cert), key=str(files.client_key))
        assert RustDriver(binary=BINARY).run(server.url + "/", replace(SHAPE, tls=tls)).ok > 0
    with pytest.raises(ValueError, match="mutual=True needs tls="):
        LocalEchoServer(mutual=True)
