"""Map a failed request's exception onto the driver-neutral error kinds of the result model.

Wrapped exceptions are followed (``__cause__``/``__context__``, urllib3's ``reason``,
geventhttpclient's ``original``).  A timeout while connecting and one while reading look
the same through geventhttpclient, so both count as ``timeout`` unless the exception says
``ConnectTimeout`` (requests/urllib3).

Works by exception type names and errno values, so it needs neither geventhttpclient nor
requests/urllib3 to be importable.
"""

from __future__ import annotations

import errno
from typing import Iterator, Optional

from pytest_netperf.results.model import TASK_EXCEPTION_PREFIX

_CONNECT_TIMEOUT_NAMES = {"ConnectTimeout", "ConnectTimeoutError"}
_TIMEOUT_NAMES = {"Timeout", "TimeoutError", "ReadTimeout", "ReadTimeoutError", "timeout"}
_REFUSED_NAMES = {"ConnectionRefusedError"}
_RESET_NAMES = {"ConnectionResetError", "BrokenPipeError", "ConnectionAbortedError"}
_READ_ERROR_NAMES = {
    "HTTPParseError",
    "HTTPConnectionClosed",
    "IncompleteRead",
    "ChunkedEncodingError",
    "RemoteDisconnected",
    "ProtocolError",
    "BadStatusLine",
    "ContentDecodingError",
}
#: TLS failures, named as the rust driver names them: the certificate rejected, a handshake
#: that failed, and an ``https://`` request answered in cleartext.
_CERTIFICATE_NAMES = {"SSLCertVerificationError", "CertificateError"}
_TLS_NAMES = {"SSLError", "SSLZeroReturnError", "SSLEOFError"}
_NOT_TLS_REASONS = ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG")
_ERRNO_KINDS = {
    errno.ECONNREFUSED: "connect_refused",
    errno.ECONNRESET: "reset",
    errno.EPIPE: "reset",
    errno.ECONNABORTED: "reset",
    errno.ETIMEDOUT: "timeout",
}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, its causes/contexts and wrapped reasons (requests → urllib3 → OSError)."""
    seen: set[int] = set()
    todo: list[Optional[BaseException]] = [exc]
    while todo:
        current = todo.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        linked = [current.__cause__, current.__context__]
        linked += [getattr(current, name, None) for name in ("reason", "original")]
        linked.extend(getattr(current, "args", ()))
        todo.extend(item for item in linked if isinstance(item, BaseException))


def _kind_of(exc: BaseException, names: set[str]) -> Optional[str]:
    if names & _CERTIFICATE_NAMES:
        return "tls_certificate"
    if names & _TLS_NAMES:
        text = f"{getattr(exc, 'reason', '')} {exc}".upper()
        return "not_tls" if any(reason in text for reason in _NOT_TLS_REASONS) else "tls_handshake"
    if names & _CONNECT_TIMEOUT_NAMES:
        return "connect_timeout"
    if names & _REFUSED_NAMES:
        return "connect_refused"
    if names & _RESET_NAMES:
        return "reset"
    if names & _TIMEOUT_NAMES:
        return "timeout"
    if names & _READ_ERROR_NAMES:
        return "read_error"
    code = getattr(exc, "errno", None)
    if isinstance(code, int) and code in _ERRNO_KINDS:
        return _ERRNO_KINDS[code]
    return None


def classify_exception(exc: BaseException) -> str:
    """Return one of ``connect_refused``, ``connect_timeout``, ``timeout``, ``reset``,
    ``read_error``, ``tls_certificate``, ``tls_handshake``, ``not_tls`` or ``other`` for a
    transport-level request failure.

    Exact class names along the chain decide first (urllib3's NewConnectionError
    subclasses ConnectTimeoutError even when the cause is a refusal); base-class names
    are the fallback.
    """
    chain = list(_chain(exc))
    for link in chain:
        kind = _kind_of(link, {type(link).__name__})
        if kind is not None:
            return kind
    for link in chain:
        kind = _kind_of(link, {cls.__name__ for cls in type(link).__mro__})
        if kind is not None:
            return kind
    return "other"


def task_exception_kind(exc: BaseException) -> str:
    """The error kind of an exception a Locust task raised (Locust's ``user_error`` event):
    ``task exception: ValueError``. No request failed; the locustfile's code did."""
    return f"{TASK_EXCEPTION_PREFIX}{type(exc).__name__}"
