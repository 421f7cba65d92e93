"""Compose profiles: which services ``up`` starts when no service is named.

A service with ``profiles:`` starts only when one of its profiles is active (``COMPOSE_PROFILES``,
comma-separated, ``*`` for all) or when it is named on the command line. Compose reads
``COMPOSE_PROFILES`` from the environment and from the project's ``.env`` file; the
environment wins. Pure functions: the caller passes the environment and the ``.env`` text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["ENV_VAR", "active_profiles", "dotenv_value", "inactive_note", "is_active", "service_profiles"]

#: The variable that names the active profiles.
ENV_VAR = "COMPOSE_PROFILES"
#: The value that activates every profile.
ALL = "*"


def service_profiles(service: Mapping[str, Any]) -> tuple[str, ...]:
    """The profiles a service belongs to (none: it always starts)."""
    value = service.get("profiles") or ()
    if isinstance(value, str):
        value = (value,)
    return tuple(str(name) for name in value if str(name).strip())


def dotenv_value(text: str, name: str) -> str | None:
    """The value ``name`` has in a ``.env`` file's text (quotes removed), or None."""
    found = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("export "):
            line = line[len("export ") :].strip()
        key, sep, value = line.partition("=")
        if sep and key.strip() == name:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            found = value
    return found


def active_profiles(environ: Mapping[str, str], dotenv: Path | None = None) -> frozenset[str]:
    """The profiles ``COMPOSE_PROFILES`` activates: from ``environ``, else from the ``.env`` file."""
    value = environ.get(ENV_VAR)
    if value is None and dotenv is not None:
        try:
            value = dotenv_value(dotenv.read_text(encoding="utf-8", errors="replace"), ENV_VAR)
        except OSError:
            value = None
    return frozenset(name.strip() for name in (value or "").split(",") if name.strip())


def is_active(service: Mapping[str, Any], active: Iterable[str]) -> bool:
    """True when ``up`` without service names starts ``service``: it has no profile, or one of
    its profiles is active (``*`` activates all)."""
    profiles = service_profiles(service)
    chosen = set(active)
    return not profiles or ALL in chosen or bool(chosen.intersection(profiles))


def inactive_note(name: str, service: Mapping[str, Any]) -> str:
    """Why ``name`` is not started: the profiles it needs and how to turn one on."""
    profiles = ", ".join(service_profiles(service))
    return (
        f"service {name!r} is in profile(s) {profiles}, which Compose does not start unless active: "
        f"set {ENV_VAR}={service_profiles(service)[0]} (netperf_compose(..., env={{'{ENV_VAR}': "
        f"'{service_profiles(service)[0]}'}})) or name it in services="
    )
