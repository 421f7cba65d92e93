"""The routes an nginx config names: the ``location`` blocks of its ``server`` blocks.

A small tokenizer (comments, quoted strings, ``{ } ;``) builds the directive tree; ``stream``
blocks (TCP) and named (``@x``) or ``internal`` locations are left out. A location's kind:
``=`` exact, none or ``^~`` prefix, ``~``/``~*`` regex. Its server's ``listen`` ports (80 when
none) and, where a port has several servers, its first plain ``server_name`` as the host.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from pytest_netperf.starter.routes.model import Route, route_traits_of_path

__all__ = ["Directive", "parse", "routes", "tls_ports"]

_TOKEN = re.compile(r"""\#[^\n]*|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|[{};]|[^\s{};"'#]+""")
_CACHES = ("proxy_cache", "fastcgi_cache", "uwsgi_cache", "scgi_cache", "memcached_pass", "srcache_fetch")
#: nginx's port when a server has no ``listen``.
DEFAULT_PORT = 80


@dataclass
class Directive:
    """``name args... ;`` or ``name args... { children }``, with its line."""

    name: str
    args: list[str]
    line: int
    children: list[Directive] | None = None
    extra: dict[str, str] = field(default_factory=dict)


def _tokens(text: str) -> Iterator[tuple[str, int]]:
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token.startswith("#"):
            continue
        if token[0] in "\"'":
            token = token[1:-1]
        yield token, text.count("\n", 0, match.start()) + 1


def parse(text: str) -> list[Directive]:
    """The directive tree of an nginx config (unbalanced braces end the block they are in)."""
    root: list[Directive] = []
    stack: list[list[Directive]] = [root]
    words: list[str] = []
    line = 0
    for token, number in _tokens(text):
        if token == ";":
            if words:
                stack[-1].append(Directive(words[0], words[1:], line))
            words = []
        elif token == "{":
            block = Directive(words[0] if words else "", words[1:], line, [])
            stack[-1].append(block)
            assert block.children is not None
            stack.append(block.children)
            words = []
        elif token == "}":
            words = []
            if len(stack) > 1:
                stack.pop()
        else:
            if not words:
                line = number
            words.append(token)
    return root


def _servers(directives: Sequence[Directive]) -> Iterator[Directive]:
    for directive in directives:
        if directive.children is None or directive.name in ("stream", "upstream", "map", "types"):
            continue
        if directive.name == "server":
            yield directive
        else:
            yield from _servers(directive.children)


def _ports(server: Directive) -> tuple[int, ...]:
    ports = []
    for directive in server.children or []:
        if directive.name == "listen" and directive.args:
            if "ssl" in directive.args[1:] or "quic" in directive.args[1:]:
                continue
            address = directive.args[0]
            if address.startswith("unix:"):
                continue
            text = address.rsplit("]:", 1)[-1].rsplit(":", 1)[-1] if ":" in address else address
            if text.isdigit():
                ports.append(int(text))
    has_listen = any(d.name == "listen" for d in server.children or [])
    return tuple(ports) if (ports or has_listen) else (DEFAULT_PORT,)


def _listen_port(address: str) -> int | None:
    """The port of a ``listen`` address (``443``, ``[::]:443``, ``10.0.0.1:8443``), None for a socket."""
    if address.startswith("unix:"):
        return None
    text = address.rsplit("]:", 1)[-1].rsplit(":", 1)[-1] if ":" in address else address
    return int(text) if text.isdigit() else None


def tls_ports(text: str, source: str = "") -> tuple[int, ...]:
    """The ports the HTTP servers of ``text`` listen on with TLS (``listen 443 ssl``), sorted."""
    del source  # the same signature as :func:`routes`
    ports = set()
    for server in _servers(parse(text)):
        for directive in server.children or []:
            if directive.name == "listen" and directive.args and "ssl" in directive.args[1:]:
                port = _listen_port(directive.args[0])
                if port is not None:
                    ports.add(port)
    return tuple(sorted(ports))


def _server_name(server: Directive) -> str | None:
    for directive in server.children or []:
        if directive.name == "server_name":
            for name in directive.args:
                if name and name != "_" and not name.startswith(("~", "*", ".")) and "*" not in name:
                    return name
    return None


def _traits(location: Directive, path: str) -> tuple[str, ...]:
    traits: list[str] = []
    for directive in location.children or []:
        if directive.name in _CACHES and directive.args and directive.args[0] != "off":
            traits.append("cached")
        if directive.name == "return" and directive.args and directive.args[0].isdigit():
            code = int(directive.args[0])
            if 300 <= code < 400:
                traits.append("redirect")
            elif code >= 400:
                traits.append("error")
        if directive.name == "rewrite" and directive.args[-1:] in (["redirect"], ["permanent"]):
            traits.append("redirect")
        if directive.name == "stub_status":
            traits.append("health")
    traits.extend(route_traits_of_path(path))
    return tuple(dict.fromkeys(traits))


def _locations(directives: Sequence[Directive]) -> Iterator[Directive]:
    for directive in directives:
        if directive.name == "location" and directive.children is not None:
            yield directive
            yield from _locations(directive.children)
        elif directive.name == "if" and directive.children is not None:
            yield from _locations(directive.children)


def routes(text: str, source: str) -> list[Route]:
    """Every location of every HTTP server in ``text`` (``source`` names the file in each route)."""
    servers = list(_servers(parse(text)))
    per_port: dict[int, int] = {}
    for server in servers:
        for port in _ports(server):
            per_port[port] = per_port.get(port, 0) + 1
    out: list[Route] = []
    for server in servers:
        ports = _ports(server)
        host = _server_name(server) if any(per_port.get(p, 0) > 1 for p in ports) else None
        for location in _locations(server.children or []):
            args = location.args
            if not args or args[0].startswith("@"):
                continue
            if any(d.name == "internal" for d in location.children or []):
                continue
            modifier, path = (args[0], args[1]) if len(args) > 1 else ("", args[0])
            match = {"=": "exact", "~": "regex", "~*": "regex"}.get(modifier, "prefix")
            written = f"location {' '.join(args)}"
            traits = _traits(location, path) if match != "regex" else _traits(location, "")
            out.append(Route(path, match, written, f"{source}:{location.line}", host, ports, traits))
    return out
