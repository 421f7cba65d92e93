"""The Locust driver over TLS against the real echo server: real handshakes, real Locust.

The same ``tls=`` options mean what they mean for the rust driver: the CA named is trusted,
the system's trust store otherwise; a client certificate for mutual TLS; and the failures
carry the rust driver's error kinds (``tls_certificate``, ``not_tls``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust.driver import LocustDriver
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.test_ca import SessionCA
from pytest_netperf.tls_options import TlsOptions

SHORT = dict(connections=2, warmup_s=0.3, duration_s=1.0, interval_s=0.5)


@contextmanager
def _echo(extra: list[str]) -> Iterator[str]:
    """A `netperf-driver echo` on 127.0.0.1 with ``extra`` options; yields host:port."""
    server = subprocess.Popen(
        [find_driver_binary(), "echo", "--listen", "127.0.0.1:0", "--threads", "1", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline().strip() if server.stdout else ""
        if not line.startswith("listening on "):
            pytest.fail(f"echo server did not start: {line!r}")
        yield line.split()[-1]
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def ca() -> Iterator[SessionCA]:
    with SessionCA() as made:
        yield made


def test_trusted_ca_and_mutual_tls(ca: SessionCA) -> None:
    with _echo(ca.echo_args(mutual=True)) as address:
        tls = TlsOptions(ca=str(ca.files.ca), cert=str(ca.files.client_cert), key=str(ca.files.client_key))
        result = LocustDriver().run(f"https://{address}/", LoadShape(tls=tls, **SHORT))
    assert result.requests > 20
    assert result.ok == result.requests and result.errors == {}
    assert result.sockets_opened == 2


def test_untrusted_certificate_is_named(ca: SessionCA) -> None:
    with _echo(ca.echo_args()) as address:
        result = LocustDriver().run(f"https://{address}/", LoadShape(**SHORT))
    assert result.ok == 0
    assert set(result.errors) == {"tls_certificate"}


def test_insecure_accepts_any_certificate(ca: SessionCA) -> None:
    with _echo(ca.echo_args()) as address:
        result = LocustDriver().run(f"https://{address}/", LoadShape(tls=TlsOptions(insecure=True), **SHORT))
    assert result.ok == result.requests > 20


def test_https_to_a_cleartext_port_is_named() -> None:
    with _echo([]) as address:
        result = LocustDriver().run(f"https://{address}/", LoadShape(tls=TlsOptions(insecure=True), **SHORT))
    assert result.ok == 0
    assert set(result.errors) == {"not_tls"}
