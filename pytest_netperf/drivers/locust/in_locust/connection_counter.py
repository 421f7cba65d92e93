"""Count the TCP connections a Locust process opens and the bytes it sends on them.

Locust runs every user on gevent sockets (it monkey-patches ``socket``), whatever the
client: FastHttpUser (geventhttpclient), HttpUser (requests/urllib3) or a locustfile's own
socket code.  Wrapping two methods of gevent's socket class once per process therefore
counts every client type: ``connect``/``connect_ex`` of a stream socket is one TCP connect,
and ``send`` adds the bytes the kernel accepted (``sendall`` sends through ``send``, so
nothing is counted twice).  Locust's master/worker messaging runs in libzmq, below Python
sockets, so it is not counted.  TLS bytes are counted after encryption when the TLS layer
writes through these sockets; plain HTTP bytes are the request line, headers and body.
"""

from __future__ import annotations

import functools
import socket as stdlib_socket
from typing import Any, Callable

_opened = 0
_sent = 0
_installed = False

#: What is wrapped: (module, class); the methods are fixed below.
_SOCKET_CLASS = ("gevent.socket", "socket")


def sockets_opened() -> int:
    """TCP connections opened in this process since :func:`install_connection_counters`."""
    return _opened


def bytes_sent() -> int:
    """Bytes sent on Python-level sockets of this process since the counters were installed."""
    return _sent


def _is_tcp(sock: Any) -> bool:
    try:
        return bool(sock.type & stdlib_socket.SOCK_STREAM) and sock.family in (
            stdlib_socket.AF_INET,
            stdlib_socket.AF_INET6,
        )
    except (AttributeError, OSError):
        return False


def _counting_connect(method: Callable[..., Any], returns_code: bool) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        global _opened
        result = method(self, *args, **kwargs)
        if (not returns_code or result == 0) and _is_tcp(self):
            _opened += 1
        return result

    return wrapper


def _counting_send(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        global _sent
        result = method(self, *args, **kwargs)
        if isinstance(result, int) and result > 0:
            _sent += result
        return result

    return wrapper


def install_connection_counters() -> list[str]:
    """Wrap gevent's socket class once per process; returns what is counted."""
    global _installed
    import importlib

    module_name, class_name = _SOCKET_CLASS
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError):
        return []
    if not _installed:
        cls.connect = _counting_connect(cls.connect, returns_code=False)
        cls.connect_ex = _counting_connect(cls.connect_ex, returns_code=True)
        cls.send = _counting_send(cls.send)
        _installed = True
    return [f"{module_name}.{class_name} (every client on gevent sockets)"]
