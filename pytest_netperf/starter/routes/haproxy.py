"""The routes a HAProxy config names: path ACLs and inline path conditions of its HTTP frontends.

In each ``frontend`` or ``listen`` section (``mode tcp`` ones left out): ``acl NAME path_beg /a
/b`` and friends (``path``, ``path_beg``, ``path_dir``, ``path_end``, ``path_reg``, ``url_beg``,
or ``path -m beg|str|end|reg``), inline ``{ path_beg /x }`` conditions, and ``default_backend``
as the catch-all ``/``. Ports from its plain (not ``ssl``) ``bind`` lines.
"""

from __future__ import annotations

import re

from pytest_netperf.starter.routes.model import Route, route_traits_of_path

__all__ = ["routes", "tls_ports"]

_SECTIONS = frozenset(
    {"global", "defaults", "frontend", "listen", "backend", "userlist", "peers", "resolvers", "cache"}
    | {"http-errors", "program", "ring", "mailers", "fcgi-app", "crt-store", "traces"}
)
#: Fetch -> kind of match.
_FETCHES = {
    "path": "exact",
    "path_beg": "prefix",
    "path_dir": "prefix",
    "url_beg": "prefix",
    "path_end": "suffix",
    "path_reg": "regex",
    "url_reg": "regex",
}
_MATCH_FLAGS = {"str": "exact", "beg": "prefix", "dir": "prefix", "end": "suffix", "reg": "regex"}
_INLINE = re.compile(r"\{([^}]*)\}")
_WORD = re.compile(r""""[^"]*"|'[^']*'|\S+""")


def _words(line: str) -> list[str]:
    """The words of a config line, quotes removed, from a ``#`` that starts a word on left out."""
    words = []
    for token in _WORD.findall(line):
        if token.startswith("#"):
            break
        words.append(token[1:-1] if token[:1] in "\"'" and len(token) > 1 else token)
    return words


def _condition(words: list[str]) -> list[tuple[str, str]]:
    """(kind, value) of a path test ``fetch [flags] values...``; [] for any other test."""
    if not words:
        return []
    fetch, rest = words[0], words[1:]
    kind = _FETCHES.get(fetch)
    values = []
    index = 0
    while index < len(rest) and rest[index].startswith("-"):
        flag = rest[index]
        if flag == "-m" and index + 1 < len(rest):
            kind = _MATCH_FLAGS.get(rest[index + 1], kind) if fetch in ("path", "url") else kind
            index += 2
            continue
        index += 2 if flag in ("-f", "-M") else 1
    values = rest[index:]
    if kind is None:
        return []
    return [(kind, value) for value in values]


def _ports(binds: list[list[str]]) -> tuple[int, ...]:
    ports = []
    for words in binds:
        if not words or "ssl" in words[1:]:
            continue
        for address in words[0].split(","):
            text = address.rsplit(":", 1)[-1]
            low = text.split("-", 1)[0]
            if low.isdigit():
                ports.append(int(low))
    return tuple(ports)


def tls_ports(text: str, source: str = "") -> tuple[int, ...]:
    """The ports the HTTP frontends of ``text`` bind with TLS (``bind :443 ssl crt ...``), sorted."""
    del source  # the same signature as :func:`routes`
    ports: set[int] = set()
    section = ""
    for line in text.splitlines():
        words = _words(line)
        if not words:
            continue
        if words[0] in _SECTIONS:
            section = words[0]
        elif section in ("frontend", "listen") and words[0] == "bind" and "ssl" in words[2:]:
            ports.update(_ports([[words[1]]]))
    return tuple(sorted(ports))


def routes(text: str, source: str) -> list[Route]:
    """The routes of the HTTP frontends in ``text`` (``source`` names the file in each route)."""
    sections: list[tuple[str, list[tuple[int, list[str]]]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = _words(line)
        if not words:
            continue
        if words[0] in _SECTIONS:
            sections.append((words[0], []))
        elif sections:
            sections[-1][1].append((number, words))
    out: list[Route] = []
    for kind, lines in sections:
        if kind not in ("frontend", "listen"):
            continue
        if any(words[:2] == ["mode", "tcp"] for _, words in lines):
            continue
        ports = _ports([words[1:] for _, words in lines if words[0] == "bind"])
        for number, words in lines:
            where = f"{source}:{number}"
            redirect = words[:2] == ["http-request", "redirect"] or words[0] == "redirect"
            if words[0] == "acl" and len(words) > 2:
                used = [w for _, w in lines if words[1] in w[1:] and w[0] != "acl"]
                redirects = any(w[:2] == ["http-request", "redirect"] or w[0] == "redirect" for w in used)
                for match, value in _condition(words[2:]):
                    traits: tuple[str, ...] = ("redirect",) if redirects else ()
                    if match in ("exact", "prefix"):
                        traits += route_traits_of_path(value)
                    out.append(Route(value, match, f"acl {words[1]} {words[2]} {value}", where, None, ports, traits))
            for inline in _INLINE.findall(" ".join(words)):
                for match, value in _condition(inline.split()):
                    inline_traits = ("redirect",) if redirect else ()
                    out.append(Route(value, match, f"{{ {inline.strip()} }}", where, None, ports, inline_traits))
            if words[0] == "default_backend" and len(words) > 1:
                out.append(Route("/", "prefix", f"default_backend {words[1]}", where, None, ports))
    return out
