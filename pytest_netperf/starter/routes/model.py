"""A route a proxy's config names, and which of them ``netperf init`` gates.

Exact and prefix routes can be requested as written; regex and suffix routes cannot (the user
picks a path they match), so they are named, not gated. Among the gateable ones the catch-all
``/`` comes first, then cached locations (what a cache change moves), then the rest in the
config's order; health checks and redirects only when nothing else is there, and a route that
answers only an error status (``return 404``) never: ``errors == 0`` would fail it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["GATED_ROUTES", "Route", "choose_routes", "route_traits_of_path"]

#: At most this many routes of one proxy get throughput and latency gates.
GATED_ROUTES = 3
#: Kinds of match a request path can be written for.
GATEABLE = frozenset({"exact", "prefix"})
#: Traits that keep a route out of the gates while another one is there.
DEMOTED = frozenset({"health", "redirect"})
#: Traits that keep a route out of the gates altogether.
NEVER = frozenset({"error"})
_HEALTH = re.compile(
    r"^/(?:health|healthz|healthcheck|ready|readyz|live|livez|ping|status|nginx_status|stub_status|"
    r"server-status|metrics|favicon\.ico|robots\.txt)(?:/|$)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Route:
    """One route of a proxy's config."""

    #: what to request (exact and prefix routes), or the pattern as written (regex, suffix)
    path: str
    #: ``exact``, ``prefix``, ``regex`` or ``suffix``
    match: str
    #: how the config writes it (``location = /healthz``, ``acl api path_beg /api``, ``prefix: /``)
    written: str
    #: ``file:line`` it was read from
    source: str = ""
    #: the Host header it needs (name-based virtual hosts), None when any host reaches it
    host: str | None = None
    #: the ports it is served on (empty: not known)
    ports: tuple[int, ...] = ()
    #: ``cached``, ``health``, ``redirect``, ``error``
    traits: tuple[str, ...] = ()

    @property
    def port(self) -> int | None:
        """The first port it is served on, None when not known."""
        return self.ports[0] if self.ports else None

    @property
    def gateable(self) -> bool:
        """True when a request path can be written for it."""
        return self.match in GATEABLE

    def describe(self) -> str:
        """``location = /healthz (health check)``: how it is written and why it may not be gated."""
        why = {
            "regex": "regex: write a path it matches to gate it",
            "suffix": "suffix: write a path that ends so to gate it",
        }.get(self.match)
        reasons = [why] if why else []
        reasons += [_TRAIT_WORDS[t] for t in self.traits if t in _TRAIT_WORDS]
        return f"{self.written} ({'; '.join(reasons)})" if reasons else self.written


_TRAIT_WORDS = {
    "cached": "cached",
    "health": "health check",
    "redirect": "redirect",
    "error": "answers an error status",
}


def route_traits_of_path(path: str) -> tuple[str, ...]:
    """``("health",)`` for a path that looks like a health, status or metrics endpoint."""
    return ("health",) if _HEALTH.match(path) else ()


def choose_routes(
    routes: Iterable[Route], port: int | None, limit: int = GATED_ROUTES
) -> tuple[list[Route], list[Route]]:
    """(routes to gate, the other routes to name) among ``routes`` served on ``port`` (all of
    them when none is known to be)."""
    routes = list(routes)
    on_port = [r for r in routes if not r.ports or port in r.ports]
    if port is not None and not on_port:
        on_port = routes
    unique: list[Route] = []
    seen: set[tuple[str, str | None]] = set()
    for route in on_port:
        key = (route.path if route.gateable else route.written, route.host)
        if key not in seen:
            seen.add(key)
            unique.append(route)
    gateable = [r for r in unique if r.gateable and not NEVER.intersection(r.traits)]
    preferred = [r for r in gateable if not DEMOTED.intersection(r.traits)]
    ranked = sorted(preferred, key=lambda r: 0 if r.path == "/" else 1 if "cached" in r.traits else 2)
    if not ranked:
        ranked = list(gateable)
    gated = ranked[:limit]
    rest = _ordered_rest(unique, gated)
    return gated, rest


def _ordered_rest(routes: Sequence[Route], gated: Sequence[Route]) -> list[Route]:
    """The routes not gated: gateable ones first, then demoted ones, then those that cannot be."""
    rest = [r for r in routes if r not in gated]
    return sorted(
        rest,
        key=lambda r: 0 if r.gateable and not (DEMOTED | NEVER).intersection(r.traits) else 1 if r.gateable else 2,
    )
