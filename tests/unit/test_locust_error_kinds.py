"""classify_exception on the real exception types Locust's HTTP clients raise."""

from __future__ import annotations

import errno
import ssl

import pytest
import requests
import urllib3.exceptions
from geventhttpclient.useragent import RetriesExceeded

from pytest_netperf.drivers.locust.in_locust.error_kinds import classify_exception


def _raised_from(outer: type[BaseException], inner: BaseException, *args: object) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as cause:
            raise outer(*args) from cause
    except BaseException as wrapped:
        return wrapped


@pytest.mark.parametrize(
    ("exception", "kind"),
    [
        (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), "connect_refused"),
        (ConnectionResetError(errno.ECONNRESET, "reset"), "reset"),
        (BrokenPipeError(errno.EPIPE, "pipe"), "reset"),
        (TimeoutError("timed out"), "timeout"),
        (OSError(errno.ECONNREFUSED, "refused, as plain OSError"), "connect_refused"),
        (OSError(errno.ETIMEDOUT, "timed out, as plain OSError"), "timeout"),
        (RetriesExceeded("http://x/", 0, original=TimeoutError("timed out")), "timeout"),
        (RetriesExceeded("http://x/", 0, original=ConnectionRefusedError()), "connect_refused"),
        (requests.exceptions.ConnectTimeout("connect timed out"), "connect_timeout"),
        (requests.exceptions.ReadTimeout("read timed out"), "timeout"),
        (requests.exceptions.ChunkedEncodingError("broken body"), "read_error"),
        (ValueError("something else"), "other"),
    ],
)
def test_direct_exceptions(exception: BaseException, kind: str) -> None:
    assert classify_exception(exception) == kind


def test_follows_the_cause_chain() -> None:
    wrapped = _raised_from(requests.exceptions.ConnectionError, ConnectionRefusedError(), "wrapper")
    assert classify_exception(wrapped) == "connect_refused"


def test_follows_urllib3_reason_attribute() -> None:
    reason = urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection: [Errno 111]")
    reason.__cause__ = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    outer = urllib3.exceptions.MaxRetryError(None, "/", reason=reason)
    assert classify_exception(requests.exceptions.ConnectionError(outer)) == "connect_refused"


def test_cycles_in_the_chain_terminate() -> None:
    first, second = ValueError("a"), ValueError("b")
    first.__context__, second.__context__ = second, first
    assert classify_exception(first) == "other"


@pytest.mark.parametrize(
    ("exception", "kind"),
    [
        (
            ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"),
            "tls_certificate",
        ),
        (ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:992)"), "not_tls"),
        (ssl.SSLError(1, "[SSL: SSLV3_ALERT_HANDSHAKE_FAILURE] sslv3 alert handshake failure"), "tls_handshake"),
        (
            RetriesExceeded("https://x/", 0, original=ssl.SSLCertVerificationError(1, "verify failed")),
            "tls_certificate",
        ),
    ],
)
def test_tls_failures_are_named_as_the_rust_driver_names_them(exception: BaseException, kind: str) -> None:
    assert classify_exception(exception) == kind
