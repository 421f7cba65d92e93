"""What a team's Compose file holds, as ``netperf init`` needs it: the HTTP proxies to gate.

The file is read through Compose's own ``config`` output (variables, ``extends`` and
profiles resolved by Compose, not by us). A service is a proxy when its image is a known
HTTP proxy or server (nginx, HAProxy, Envoy, Kong, ...); its port is the first TCP port the
file publishes or exposes, preferring the usual plain-HTTP ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pytest_netperf.errors import NetperfError
from pytest_netperf.runtime.compose import project as P
from pytest_netperf.runtime.compose.cli import ComposeCli, find_compose

#: Image names (the last path part, without tag) of HTTP proxies and servers, by product.
PROXY_IMAGES: Mapping[str, str] = {
    "nginx": "nginx",
    "nginx-unprivileged": "nginx",
    "openresty": "nginx",
    "haproxy": "haproxy",
    "envoy": "envoy",
    "kong": "kong",
    "kong-gateway": "kong",
    "traefik": "traefik",
    "caddy": "caddy",
    "httpd": "httpd",
    "varnish": "varnish",
}
#: Ports that usually carry plain HTTP, best first; TLS ports (443, 8443) are never picked.
HTTP_PORTS: tuple[int, ...] = (80, 8080, 8000, 10000, 3000, 5000, 8081, 8888)
TLS_PORTS = frozenset({443, 8443})
_FROM = re.compile(r"(?im)^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)")
#: Seconds ``compose config`` may take.
CONFIG_TIMEOUT_S = 60.0


class InitError(NetperfError):
    """``netperf init`` cannot go on: the message names the file and the service."""


@dataclass(frozen=True)
class ServiceSurvey:
    """One service of the Compose file as ``netperf init`` sees it."""

    name: str
    image: str
    #: TCP ports the file publishes or exposes, sorted
    ports: tuple[int, ...]
    #: the proxy product (``nginx``, ``envoy``, ...) or "" for any other service
    proxy: str = ""
    #: the image the offline build stands in with (``pytest-netperf/nginx:local``), or ""
    local_image: str = ""
    #: host paths the service bind-mounts (its config files and folders)
    binds: tuple[Path, ...] = ()

    @property
    def http_port(self) -> Optional[int]:
        """The port to send HTTP to: a usual plain-HTTP port, else the lowest non-TLS one."""
        for port in HTTP_PORTS:
            if port in self.ports:
                return port
        plain = [port for port in self.ports if port not in TLS_PORTS]
        return plain[0] if plain else None


@dataclass(frozen=True)
class StackSurvey:
    """The services of one Compose file."""

    file: Path
    services: tuple[ServiceSurvey, ...]

    @property
    def proxies(self) -> list[ServiceSurvey]:
        """The services to gate: known proxies with a port to send HTTP to."""
        return [s for s in self.services if s.proxy and s.http_port is not None]

    @property
    def proxies_without_port(self) -> list[ServiceSurvey]:
        """Known proxies that neither publish nor expose a plain-HTTP port."""
        return [s for s in self.services if s.proxy and s.http_port is None]

    def image_map(self) -> dict[str, str]:
        """Official image -> offline stand-in, for the proxies that have one."""
        return {s.image: s.local_image for s in self.services if s.local_image}


def proxy_product(image: str) -> str:
    """``nginx:1.27`` -> ``nginx``; ``envoyproxy/envoy:v1.31-latest`` -> ``envoy``; unknown -> ""."""
    if not image:
        return ""
    name = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0].lower()
    return PROXY_IMAGES.get(name, "")


def bind_sources(service: Mapping[str, Any]) -> tuple[Path, ...]:
    """Host paths of a service's bind mounts, in both ``config`` output forms: Compose v2's
    ``{type: bind, source: ...}`` and v1's ``/host/path:/container/path:ro``."""
    found: list[Path] = []
    for volume in service.get("volumes") or []:
        if isinstance(volume, Mapping):
            if volume.get("type") == "bind" and volume.get("source"):
                found.append(Path(str(volume["source"])))
        else:
            source = str(volume).split(":", 1)[0]
            if source.startswith(("/", "./", "../", "~")):
                found.append(Path(source))
    return tuple(found)


def built_from(service: Mapping[str, Any]) -> str:
    """The image a service with ``build:`` starts from: the last ``FROM`` of its Dockerfile
    (``FROM nginx:1.27-alpine AS edge`` -> ``nginx:1.27-alpine``), or "" when unreadable."""
    build = service.get("build")
    if not isinstance(build, Mapping) or not build.get("context"):
        return ""
    dockerfile = Path(str(build["context"])) / str(build.get("dockerfile") or "Dockerfile")
    try:
        text = dockerfile.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    bases = [match.group(1) for match in _FROM.finditer(text)]
    return bases[-1] if bases else ""


def classify(config: Mapping[str, Any], file: Path) -> StackSurvey:
    """The survey of an already normalised Compose configuration (``compose config`` output)."""
    services = []
    for name, service in sorted(P.services_of(config).items()):
        image = str(service.get("image") or "")
        base = "" if image and service.get("build") is None else built_from(service)
        services.append(
            ServiceSurvey(
                name=name,
                image=image or (f"built FROM {base}" if base else ""),
                ports=tuple(P.known_ports(service)),
                proxy=proxy_product(base or image),
                local_image=(P.local_equivalent(image) or "") if image and not base else "",
                binds=bind_sources(service),
            )
        )
    return StackSurvey(file, tuple(services))


def survey(file: Path, cli: Optional[ComposeCli] = None) -> StackSurvey:
    """Read ``file`` with ``compose config`` and classify its services; InitError when Compose
    is missing, the file is missing or invalid, or it defines no services."""
    if not file.is_file():
        raise InitError(f"Compose file {file} does not exist (give its path: netperf init path/to/compose.yml)")
    try:
        cli = cli or find_compose()
    except NetperfError as exc:
        raise InitError(f"cannot read {file}: {exc}") from exc
    done = cli.run(["-f", str(file), "config"], CONFIG_TIMEOUT_S)
    if done.returncode != 0:
        said = ((done.stderr or "") + (done.stdout or "")).strip()[-2000:] or "(nothing)"
        raise InitError(f"invalid Compose file {file}: `{' '.join(cli.argv)} config` said:\n{said}")
    try:
        config = P.parse_config(done.stdout, file)
    except NetperfError as exc:
        raise InitError(str(exc)) from exc
    return classify(config, file)
