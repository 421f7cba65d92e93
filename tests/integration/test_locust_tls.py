"""The Locust driver over TLS against the real echo server: real handshakes, real Locust.

The same ``tls=`` options mean what they mean for the rust driver: the CA named is trusted,
the system's trust store otherwise; a client certificate for mutual TLS; and the failures
carry the rust driver's error kinds (``tls_certificate``, ``not_tls``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust.driver import LocustDriver
from pytest_netperf.runtime.local import LocalEchoServer
from pytest_netperf.runtime.test_ca import SessionCA
from pytest_netperf.tls_options import TlsOptions

SHORT = dict(connections=2, warmup_s=0.3, duration_s=1.0, interval_s=0.5)


@pytest.fixture(scope="module")
def ca() -> Iterator[SessionCA]:
    with SessionCA() as made:
        yield made


def test_trusted_ca_and_mutual_tls(ca: SessionCA) -> None:
    with LocalEchoServer(threads=1, tls=ca, mutual=True) as server:
        tls = TlsOptions(ca=str(ca.files.ca), cert=str(ca.files.client_cert), key=str(ca.files.client_key))
        result = LocustDriver().run(server.url + "/", LoadShape(tls=tls, **SHORT))
    assert result.requests > 20
    assert result.ok == result.requests and result.errors == {}
    assert result.sockets_opened == 2


def test_untrusted_certificate_is_named(ca: SessionCA) -> None:
    with LocalEchoServer(threads=1, tls=ca) as server:
        result = LocustDriver().run(server.url + "/", LoadShape(**SHORT))
    assert result.ok == 0
    assert set(result.errors) == {"tls_certificate"}


def test_insecure_accepts_any_certificate(ca: SessionCA) -> None:
    with LocalEchoServer(threads=1, tls=ca) as server:
        result = LocustDriver().run(server.url + "/", LoadShape(tls=TlsOptions(insecure=True), **SHORT))
    assert result.ok == result.requests > 20


def test_https_to_a_cleartext_port_is_named() -> None:
    with LocalEchoServer(threads=1) as server:  # cleartext, asked for https://
        https = server.url.replace("http://", "https://", 1)
        result = LocustDriver().run(https + "/", LoadShape(tls=TlsOptions(insecure=True), **SHORT))
    assert result.ok == 0
    assert set(result.errors) == {"not_tls"}
