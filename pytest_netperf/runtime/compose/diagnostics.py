"""Why a Compose service does not count as started: exited, restarting or unhealthy containers, with their logs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from docker.errors import NotFound
from docker.models.containers import Container

from pytest_netperf.runtime.compose import project as P
from pytest_netperf.runtime.docker import LOG_TAIL_LINES

__all__ = ["diagnosis", "host_network_message", "last_probe", "log_section", "problem"]


def problem(config: Mapping[str, Any], file: Path, service: str, container: Container) -> str | None:
    """Why ``container`` does not count as started (None when it runs, or finished as meant)."""
    with contextlib.suppress(NotFound):
        container.reload()
    state = container.attrs.get("State") or {}
    status = str(state.get("Status", "?"))
    code = state.get("ExitCode")
    if status in ("exited", "dead"):
        if status == "exited" and code == 0 and P.completed_ok(config, service):
            return None
        return (
            f"service {service!r} of {file} exited at start with exit code {code}"
            f"{' (' + state['Error'] + ')' if state.get('Error') else ''}\n{log_section(service, container)}"
        )
    if state.get("Restarting") or int(container.attrs.get("RestartCount") or 0) > 0:
        return (
            f"service {service!r} of {file} keeps restarting "
            f"({container.attrs.get('RestartCount')} restarts, last exit code {code})\n"
            f"{log_section(service, container)}"
        )
    return None


def diagnosis(
    config: Mapping[str, Any], file: Path, services: Iterable[str], containers_of: Callable[[str], list[Container]]
) -> str:
    """One section per container of the project that exited, restarts or is unhealthy."""
    sections: list[str] = []
    for service in services:
        for container in containers_of(service):
            found = problem(config, file, service, container)
            health = (container.attrs.get("State") or {}).get("Health") or {}
            if found:
                sections.append(found)
            elif health.get("Status") == "unhealthy":
                sections.append(
                    f"service {service!r} is unhealthy; last health check output: {last_probe(health)}\n"
                    f"{log_section(service, container)}"
                )
    return "\n".join(sections)


def last_probe(health: Mapping[str, Any]) -> str:
    """Exit code and output of the last health check in ``health`` (a container's ``State.Health``)."""
    log = health.get("Log") or []
    if not log:
        return "(no health check has run yet)"
    last = log[-1] or {}
    output = str(last.get("Output", "")).strip() or "(no output)"
    return f"exit code {last.get('ExitCode')}: {output[-1000:]}"


def log_section(service: str, container: Container) -> str:
    """The last :data:`LOG_TAIL_LINES` log lines of ``service``'s ``container``, under a header."""
    try:
        text = container.logs(tail=LOG_TAIL_LINES).decode(errors="replace").rstrip("\n") or "(no output)"
    except Exception as exc:  # the container is already gone
        text = f"(logs unavailable: {exc})"
    return f"--- last {LOG_TAIL_LINES} log lines of {service} ({container.name}) ---\n{text}"


def host_network_message(service: str, port: int, file: Path) -> str:
    """Why ``endpoint(service)`` cannot be given for a service on the host's network, and the way forward."""
    return (
        f"endpoint({service!r}): service {service!r} of {file} runs with network_mode: host, so it has no "
        f"address on the project's network: it listens on the host itself. Measure it there with a URL, "
        f"e.g. netperf.measure('http://127.0.0.1:{port}/') (no base twin: the base revision's copy would "
        "need the same host port), or remove network_mode: host so that it joins the project's network "
        "and endpoint() reaches it"
    )
