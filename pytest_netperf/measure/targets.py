"""Helpers for what a gate measures: a URL string or an endpoint object with ``.url``."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Union
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

TargetLike = Union[str, Any]


def target_url(target: TargetLike) -> str:
    """The URL of a target (a string, or anything with a ``url`` attribute)."""
    if isinstance(target, str):
        return target
    url = getattr(target, "url", None)
    if not isinstance(url, str):
        raise TypeError(f"a netperf target is a URL string or an endpoint with .url, not {target!r}")
    return url


def with_query(target: TargetLike, **params: Any) -> TargetLike:
    """The same target with query parameters set, e.g. ``with_query(ep, depth=3, delay="1ms")``.

    Works on URL strings and on endpoint dataclasses (a copy with a new ``url``).
    """
    parts = urlsplit(target_url(target))
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query.update({k: str(v) for k, v in params.items()})
    url = urlunsplit(parts._replace(query=urlencode(query), path=parts.path or "/"))
    if isinstance(target, str):
        return url
    if dataclasses.is_dataclass(target) and not isinstance(target, type):
        return dataclasses.replace(target, url=url)
    raise TypeError(f"cannot set query parameters on {target!r}")


def host_header(target: TargetLike) -> Optional[str]:
    """The Host header an endpoint asks for, if any."""
    return None if isinstance(target, str) else getattr(target, "host_header", None)
