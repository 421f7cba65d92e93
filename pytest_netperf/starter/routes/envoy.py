"""The routes an Envoy config names: ``match`` of the routes of its HTTP connection managers.

Every listener's ``route_config.virtual_hosts[].routes[].match`` is read (``prefix``,
``path``, ``path_separated_prefix``, ``safe_regex``); listeners with a TLS transport socket
are left out. A virtual host whose domains do not include ``*`` gives its first plain domain
as the host. YAML or JSON; a file that does not parse gives no routes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from pytest_netperf.starter.routes.model import Route, route_traits_of_path

__all__ = ["routes"]


def _mappings(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every mapping inside ``value`` (depth first)."""
    if isinstance(value, Mapping):
        yield value
        for child in value.values():
            yield from _mappings(child)
    elif isinstance(value, list):
        for child in value:
            yield from _mappings(child)


def _port(listener: Mapping[str, Any]) -> tuple[int, ...]:
    socket = ((listener.get("address") or {}).get("socket_address")) or {}
    port = socket.get("port_value")
    return (int(port),) if isinstance(port, int) or (isinstance(port, str) and port.isdigit()) else ()


def _host(domains: Any) -> str | None:
    names = [str(d) for d in domains or []]
    if not names or "*" in names:
        return None
    plain = [n.split(":", 1)[0] for n in names if "*" not in n]
    return plain[0] if plain else None


def _match(match: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(kind, path, written) of a route match."""
    for key, kind in (("path", "exact"), ("prefix", "prefix"), ("path_separated_prefix", "prefix")):
        if isinstance(match.get(key), str):
            return kind, match[key], f"{key}: {match[key]}"
    regex = match.get("safe_regex")
    if isinstance(regex, Mapping) and isinstance(regex.get("regex"), str):
        return "regex", regex["regex"], f"safe_regex: {regex['regex']}"
    return None


def routes(text: str, source: str) -> list[Route]:
    """The routes of the plain-HTTP listeners in ``text`` (``source`` names the file in each route)."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    listeners = [
        listener
        for mapping in _mappings(document)
        for listener in (mapping.get("listeners") or [] if isinstance(mapping.get("listeners"), list) else [])
        if isinstance(listener, Mapping)
    ]
    out: list[Route] = []
    for listener in listeners:
        ports = _port(listener)
        for chain in listener.get("filter_chains") or []:
            if not isinstance(chain, Mapping) or chain.get("transport_socket"):
                continue
            for mapping in _mappings(chain):
                vhosts = mapping.get("virtual_hosts")
                for vhost in vhosts if isinstance(vhosts, list) else []:
                    if not isinstance(vhost, Mapping):
                        continue
                    host = _host(vhost.get("domains"))
                    for route in vhost.get("routes") or []:
                        found = _match((route or {}).get("match") or {}) if isinstance(route, Mapping) else None
                        if found is None:
                            continue
                        kind, path, written = found
                        traits: tuple[str, ...] = ()
                        if route.get("redirect"):
                            traits += ("redirect",)
                        status = (route.get("direct_response") or {}).get("status")
                        if isinstance(status, int) and status >= 400:
                            traits += ("error",)
                        if kind != "regex":
                            traits += route_traits_of_path(path)
                        out.append(Route(path, kind, written, source, host, ports, traits))
    return out
