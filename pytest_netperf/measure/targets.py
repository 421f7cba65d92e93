"""Helpers for what a gate measures: a URL string or an :class:`~pytest_netperf.measure.endpoint.Endpoint`."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Optional, overload
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pytest_netperf.measure.endpoint import Endpoint, TargetLike
from pytest_netperf.tls_options import TlsOptions


def target_url(target: TargetLike) -> str:
    """The URL of a target."""
    return target if isinstance(target, str) else target.url


def _set_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query.update(params)
    return urlunsplit(parts._replace(query=urlencode(query), path=parts.path or "/"))


@overload
def with_query(target: str, **params: Any) -> str: ...


@overload
def with_query(target: Endpoint, **params: Any) -> Endpoint: ...


def with_query(target: TargetLike, **params: Any) -> TargetLike:
    """The same target with query parameters set, e.g. ``with_query(ep, depth=3, delay="1ms")``.

    On an endpoint the parameters reach its base twin too (``--netperf-base``), so both
    sides are measured with the same request.
    """
    values = {k: str(v) for k, v in params.items()}
    if isinstance(target, str):
        return _set_query(target, values)
    return target.map_urls(lambda url: _set_query(url, values))


def host_header(target: TargetLike) -> Optional[str]:
    """The Host header an endpoint asks for, if any."""
    return None if isinstance(target, str) else target.host_header


def target_tls(target: TargetLike, given: Optional[TlsOptions]) -> Optional[TlsOptions]:
    """The TLS options of a round against ``target``: what the endpoint carries (the CA of a
    topology's test certificates, or the one a Compose stack's ``endpoint(tls=...)`` named),
    with every option the test gave (``tls=``) in front of it."""
    own = None if isinstance(target, str) else target.tls
    if own is None or given is None:
        return given if own is None else own
    merged = {
        f.name: getattr(given, f.name) if getattr(given, f.name) != f.default else getattr(own, f.name)
        for f in fields(TlsOptions)
    }
    if given.insecure or given.ca:  # the test's trust replaces the endpoint's
        merged.update(ca=given.ca, insecure=given.insecure)
    return TlsOptions(**merged)
