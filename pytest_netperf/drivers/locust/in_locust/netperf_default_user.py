"""The default locustfile of the netperf Locust driver: one HTTP request per iteration.

Loaded by path (``locust -f``) together with ``netperf_listener.py``.  The request is
configured by the ``--netperf-*`` options the driver passes (path, method, headers, body
size, timeout); pacing for rate-driven rounds is applied by the listener.
"""

from __future__ import annotations

import json
from typing import Any

from locust import FastHttpUser, constant, events, task


@events.init_command_line_parser.add_listener
def _add_request_options(parser: Any, **_kw: Any) -> None:
    group = parser.add_argument_group("netperf default user")
    group.add_argument("--netperf-path", default="/", help="request path (with query)")
    group.add_argument("--netperf-method", default="GET", help="HTTP method")
    group.add_argument("--netperf-headers", default="{}", help="JSON object of request headers")
    group.add_argument("--netperf-body-size", type=int, default=0, help="request body bytes")
    group.add_argument("--netperf-timeout", type=float, default=5.0, help="connect/read timeout (s)")


@events.test_start.add_listener
def _apply_timeout(environment: Any, **_kw: Any) -> None:
    options = environment.parsed_options
    if options is not None:
        NetperfGetUser.connection_timeout = float(options.netperf_timeout)
        NetperfGetUser.network_timeout = float(options.netperf_timeout)


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
