"""What a team's Compose file holds, as ``netperf init`` needs it: the HTTP proxies to gate.

The file is read through Compose's own ``config`` output (variables and ``extends`` resolved
by Compose, not by us); a service under a profile that ``COMPOSE_PROFILES`` does not turn on
is not started by Compose, so it is not gated. A service is a proxy when its image is a known
HTTP proxy or server (nginx, HAProxy, Envoy, Kong, ...); its port is the first TCP port the
file publishes or exposes, preferring the usual plain-HTTP ones. A proxy that listens with TLS
only (443, 8443, or the ports its nginx or HAProxy config listens on with ``ssl``) is gated over
HTTPS on its TLS port, trusting the CA found among its mounted certificates (starter/tls.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from pytest_netperf.errors import NetperfError
from pytest_netperf.runtime.compose import project as P
from pytest_netperf.runtime.compose.cli import ComposeCli, find_compose
from pytest_netperf.runtime.compose.commands import unset_variables, unset_variables_message
from pytest_netperf.runtime.compose.dockerfile import (
    base_images,
    build_args,
    copied_sources,
    dockerfile_of,
    from_lines,
)
from pytest_netperf.runtime.compose.profiles import active_profiles, is_active, service_profiles
from pytest_netperf.starter.routes import Route, config_files, read_routes, read_tls_ports
from pytest_netperf.starter.tls import TlsTrust, find_trust

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
#: Ports that usually carry plain HTTP, best first; TLS ports (443, 8443) are never picked as
#: plain HTTP: a proxy with only those is gated over HTTPS.
HTTP_PORTS: tuple[int, ...] = (80, 8080, 8000, 10000, 3000, 5000, 8081, 8888)
TLS_PORTS = frozenset({443, 8443})
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
    #: the Compose profiles the service belongs to (none: it always starts)
    profiles: tuple[str, ...] = ()
    #: False when none of its profiles is active: Compose does not start it
    active: bool = True
    #: the images a ``build:`` service's Dockerfile starts or copies from
    base_images: tuple[str, ...] = ()
    #: the routes its config files name (nginx, HAProxy, Envoy)
    routes: tuple[Route, ...] = ()
    #: the ports its config listens on with TLS (nginx ``listen 443 ssl``, HAProxy ``bind :443 ssl``)
    config_tls_ports: tuple[int, ...] = ()
    #: the CA and server names of the certificates it mounts (for a TLS-only proxy)
    trust: TlsTrust = field(default_factory=TlsTrust)

    @property
    def tls_ports(self) -> tuple[int, ...]:
        """Its ports that speak TLS: the usual TLS ports and those its config listens on with TLS."""
        return tuple(p for p in self.ports if p in TLS_PORTS or p in self.config_tls_ports)

    @property
    def http_port(self) -> Optional[int]:
        """The port to send HTTP to: a usual plain-HTTP port, else the lowest non-TLS one."""
        for port in HTTP_PORTS:
            if port in self.ports and port not in self.tls_ports:
                return port
        plain = [port for port in self.ports if port not in self.tls_ports]
        return plain[0] if plain else None

    @property
    def https_port(self) -> Optional[int]:
        """For a proxy that listens with TLS only: the port to send HTTPS to (443 first); else None."""
        if self.http_port is not None or not self.tls_ports:
            return None
        return 443 if 443 in self.tls_ports else self.tls_ports[0]

    @property
    def gate_port(self) -> Optional[int]:
        """The port the gates load: plain HTTP when it has one, else its TLS port."""
        return self.http_port if self.http_port is not None else self.https_port

    @property
    def scheme(self) -> str:
        """``http``, or ``https`` for a proxy that listens with TLS only."""
        return "https" if self.https_port is not None else "http"


@dataclass(frozen=True)
class StackSurvey:
    """The services of one Compose file."""

    file: Path
    services: tuple[ServiceSurvey, ...]
    #: the profiles active when the file was read (``COMPOSE_PROFILES``)
    active_profiles: frozenset[str] = frozenset()
    #: what Compose warned about while reading the file (unset variables)
    warnings: tuple[str, ...] = ()

    @property
    def proxies(self) -> list[ServiceSurvey]:
        """The services to gate: known proxies that Compose starts, with a port to send HTTP (or,
        listening with TLS only, HTTPS) to."""
        return [s for s in self.services if s.proxy and s.active and s.gate_port is not None]

    @property
    def proxies_without_port(self) -> list[ServiceSurvey]:
        """Known proxies that Compose starts and that neither publish nor expose a port."""
        return [s for s in self.services if s.proxy and s.active and s.gate_port is None]

    @property
    def inactive(self) -> list[ServiceSurvey]:
        """Known proxies under a profile that is not active: Compose does not start them."""
        return [s for s in self.services if s.proxy and not s.active]

    @property
    def profiles_needed(self) -> tuple[str, ...]:
        """The active profiles the gated proxies belong to: the gates must turn them on."""
        every = "*" in self.active_profiles
        return tuple(sorted({p for s in self.proxies for p in s.profiles if every or p in self.active_profiles}))

    def image_map(self) -> dict[str, str]:
        """Official image -> offline stand-in, for the services' images and the images their
        Dockerfiles start from (``FROM nginx:1.27``) that have one."""
        mapping = {s.image: s.local_image for s in self.services if s.local_image}
        for service in self.services:
            for base in service.base_images:
                local = P.local_equivalent(base)
                if local:
                    mapping[base] = local
        return mapping


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


def _dockerfile_text(service: Mapping[str, Any]) -> str:
    """The text of a ``build:`` service's Dockerfile, or "" when there is none to read."""
    path = dockerfile_of(service) if service.get("build") is not None else None
    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def built_from(service: Mapping[str, Any]) -> str:
    """The image a service with ``build:`` starts from: the last ``FROM`` of its Dockerfile
    (``FROM nginx:1.27-alpine AS edge`` -> ``nginx:1.27-alpine``), or "" when unreadable."""
    build = service.get("build")
    lines = from_lines(_dockerfile_text(service), build_args(build) if isinstance(build, Mapping) else {})
    return lines[-1].image if lines else ""


def built_from_images(service: Mapping[str, Any]) -> tuple[str, ...]:
    """Every image a ``build:`` service's Dockerfile starts or copies from (what ``--netperf-image``
    maps in it)."""
    build = service.get("build")
    return tuple(base_images(_dockerfile_text(service), build_args(build) if isinstance(build, Mapping) else {}))


def service_sources(service: Mapping[str, Any], folder: Path) -> list[Path]:
    """The host files and folders a service's config comes from: what it bind-mounts and what its
    Dockerfile copies in (relative paths from ``folder``, the Compose file's)."""
    sources = [path if path.is_absolute() else folder / path for path in bind_sources(service)]
    dockerfile = dockerfile_of(service) if service.get("build") is not None else None
    if dockerfile is not None:
        sources += copied_sources(_dockerfile_text(service), dockerfile.parent)
    return sources


def service_routes(product: str, service: Mapping[str, Any], folder: Path) -> list[Route]:
    """The routes the config files of a ``product`` service name (:func:`service_sources`)."""
    if not product:
        return []
    return read_routes(product, config_files(product, service_sources(service, folder)), folder)


def classify(config: Mapping[str, Any], file: Path, active_profiles: Iterable[str] = ()) -> StackSurvey:
    """The survey of an already normalised Compose configuration (``compose config`` output);
    ``active_profiles``: the Compose profiles turned on (``COMPOSE_PROFILES``)."""
    active = frozenset(active_profiles)
    services = []
    for name, service in sorted(P.services_of(config).items()):
        image = str(service.get("image") or "")
        base = "" if image and service.get("build") is None else built_from(service)
        product = proxy_product(base or image)
        sources = service_sources(service, file.parent) if product else []
        services.append(
            ServiceSurvey(
                name=name,
                image=image or (f"built FROM {base}" if base else ""),
                ports=tuple(P.known_ports(service)),
                proxy=product,
                local_image=(P.local_equivalent(image) or "") if image and not base else "",
                binds=bind_sources(service),
                profiles=service_profiles(service),
                base_images=built_from_images(service) if service.get("build") is not None else (),
                routes=tuple(service_routes(product, service, file.parent)),
                active=is_active(service, active),
                config_tls_ports=read_tls_ports(product, config_files(product, sources)),
                trust=find_trust(sources),
            )
        )
    return StackSurvey(file, tuple(services), active)


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
    stack = classify(config, file, active_profiles(os.environ, file.parent / ".env"))
    unset = unset_variables(done.stderr or "")
    return replace(stack, warnings=(unset_variables_message(file, unset),) if unset else ())
