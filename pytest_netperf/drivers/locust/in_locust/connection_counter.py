"""Count TCP connections opened by Locust's HTTP clients in this process.

Wraps the socket-creating method of geventhttpclient's connection pool (FastHttpUser)
and of urllib3's HTTP connection (HttpUser / requests), when those libraries are present.
Other clients a locustfile may use (raw sockets, gRPC, …) are not counted.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Callable

_opened = 0
_installed = False

#: (module, class, method) whose successful return means "one TCP connect happened".
_CONNECT_POINTS = (
    ("geventhttpclient.connectionpool", "ConnectionPool", "_create_socket"),
    ("urllib3.connection", "HTTPConnection", "_new_conn"),
)


def sockets_opened() -> int:
    """Connections opened in this process since :func:`install_connection_counters`."""
    return _opened


def _counting(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        global _opened
        result = method(*args, **kwargs)
        _opened += 1
        return result

    return wrapper


def install_connection_counters() -> list[str]:
    """Wrap every available connect point once; returns the names that are counted."""
    global _installed
    counted = []
    for module_name, class_name, method_name in _CONNECT_POINTS:
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue
        if not _installed:
            setattr(cls, method_name, _counting(getattr(cls, method_name)))
        counted.append(f"{module_name}.{class_name}")
    _installed = True
    return counted
