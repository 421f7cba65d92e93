"""The default locustfile of the netperf Locust driver: one HTTP request per iteration.

Loaded by path (``locust -f``) together with ``netperf_listener.py``.  The request is
configured by the ``--netperf-*`` options the driver passes (path, method, headers, body
size, timeout, TLS); pacing for rate-driven rounds is applied by the listener.

TLS (``--netperf-tls``, a JSON object): the server certificate is verified against ``ca``
(default: the system's trust store, as the rust driver does) unless ``insecure``; ``cert`` and
``key`` are a client certificate for mutual TLS; ``version`` pins TLS 1.2 or 1.3.
"""

from __future__ import annotations

import json
import ssl
from typing import Any, Callable, Optional

import gevent.ssl
from locust import FastHttpUser, constant, events, task

_TLS_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}


@events.init_command_line_parser.add_listener
def _add_request_options(parser: Any, **_kw: Any) -> None:
    group = parser.add_argument_group("netperf default user")
    group.add_argument("--netperf-path", default="/", help="request path (with query)")
    group.add_argument("--netperf-method", default="GET", help="HTTP method")
    group.add_argument("--netperf-headers", default="{}", help="JSON object of request headers")
    group.add_argument("--netperf-body-size", type=int, default=0, help="request body bytes")
    group.add_argument("--netperf-timeout", type=float, default=5.0, help="connect/read timeout (s)")
    group.add_argument("--netperf-tls", default="{}", help="JSON object: ca, insecure, cert, key, version")


def tls_context_factory(settings: dict[str, Any]) -> Callable[..., ssl.SSLContext]:
    """An SSL context factory for geventhttpclient from the round's TLS settings."""

    def factory(cafile: Optional[str] = None, **_kw: Any) -> ssl.SSLContext:
        if settings.get("insecure"):
            context = gevent.ssl._create_unverified_context()
        else:
            context = gevent.ssl.create_default_context(cafile=settings.get("ca"))
        if settings.get("cert"):
            context.load_cert_chain(settings["cert"], settings.get("key"))
        version = _TLS_VERSIONS.get(str(settings.get("version")))
        if version is not None:
            context.minimum_version = context.maximum_version = version
        return context

    return factory


@events.test_start.add_listener
def _apply_timeout(environment: Any, **_kw: Any) -> None:
    options = environment.parsed_options
    if options is not None:
        NetperfGetUser.connection_timeout = float(options.netperf_timeout)
        NetperfGetUser.network_timeout = float(options.netperf_timeout)
        settings = json.loads(getattr(options, "netperf_tls", "{}") or "{}")
        NetperfGetUser.insecure = bool(settings.get("insecure"))
        NetperfGetUser.ssl_context_factory = tls_context_factory(settings)


class NetperfGetUser(FastHttpUser):
    """Sends the configured request back to back (closed loop) over one keep-alive connection."""

    wait_time = constant(0)

    def on_start(self) -> None:
        options = self.environment.parsed_options
        self._path = options.netperf_path
        self._method = options.netperf_method.upper()
        self._headers = dict(json.loads(options.netperf_headers))
        size = int(options.netperf_body_size)
        self._body = "x" * size if size else None

    @task
    def send(self) -> None:
        """One request; the listener records its outcome."""
        self.client.request(self._method, self._path, data=self._body, headers=self._headers, name=self._path)
