"""``netperf init [COMPOSE_FILE]``: starter gates, pytest settings and CI jobs for a team's stack.

Run in the repository's root. Asks nothing: every choice is an option, so it runs the same
in a terminal and in CI. Exit 0 with the files written, 1 when it cannot go on (no Compose
file, an invalid one, no proxy to gate, files it would overwrite); nothing is written then.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from pytest_netperf.errors import NetperfError
from pytest_netperf.version import __version__

if TYPE_CHECKING:
    from pytest_netperf.starter.survey import ServiceSurvey, StackSurvey

#: Compose's own default file names, in the order ``docker compose`` looks for them.
DEFAULT_COMPOSE_FILES = ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml")


def add_parser(commands: argparse._SubParsersAction) -> None:
    """The ``init`` sub-command's arguments."""
    init = commands.add_parser(
        "init",
        help="write starter gates, pytest settings and CI jobs for a Compose stack",
        description="Read a Compose file (through `compose config`), find its HTTP proxies and write a "
        "starter test module (throughput, latency and cost per request against the base revision), "
        "the pytest settings and CI jobs for GitHub Actions and GitLab. Run it in the repository's root.",
    )
    init.add_argument("compose_file", nargs="?", type=Path, metavar="COMPOSE_FILE", help="default: compose.yaml, …")
    init.add_argument("--tests-dir", default="tests/netperf", help="folder of the test module (default: %(default)s)")
    init.add_argument(
        "--package",
        default=f"pytest-netperf=={__version__}",
        help="what the CI jobs pip install: a requirement, a wheel's path or URL (default: %(default)s)",
    )
    init.add_argument(
        "--ci",
        default="github,gitlab",
        help="CI jobs to write: github, gitlab, both comma-separated, or none (default: %(default)s)",
    )
    init.add_argument(
        "--tls-ca",
        type=Path,
        metavar="PEM",
        help="CA bundle the gates of a TLS-only proxy trust (default: a CA certificate among the files it "
        "mounts; none found: its certificate is accepted unchecked, with a TODO)",
    )
    init.add_argument("--force", action="store_true", help="replace files that exist (pytest.ini: add the keys)")


def run_init(
    compose_file: Optional[Path],
    tests_dir: str,
    package: str,
    ci: str,
    force: bool,
    root: Optional[Path] = None,
    tls_ca: Optional[Path] = None,
) -> int:
    """Survey the Compose file, then write every file or none; returns the exit code."""
    # imported here: the Locust worker image runs this CLI without Compose's YAML library
    from pytest_netperf.starter import files, render
    from pytest_netperf.starter.survey import survey

    root = (root or Path.cwd()).resolve()
    began = time.monotonic()
    try:
        systems = _ci_systems(ci)
        file = _compose_file(root, compose_file)
        ca = _tls_ca(root, tls_ca)
        stack = survey(file)
        plan = render.StarterPlan(
            survey=stack,
            compose_path=_relative(file, root),
            tests_dir=tests_dir.strip("/") or ".",
            package=package,
            watched=_watched_folders(stack, root),
            tls_ca=ca,
            root=root,
        )
        _check_proxies(stack)
        written = files.plan_files(root, plan, systems, force)
        files.write_files(root, written)
    except NetperfError as exc:
        print(f"netperf init: {exc}", file=sys.stderr)
        return 1
    for warning in stack.warnings:
        print(f"netperf init: warning: {warning}")
    for service in stack.services:
        ports = ", ".join(str(port) for port in service.ports) or "none"
        kind = f"{service.proxy} proxy" if service.proxy else "not a known proxy"
        print(f"netperf init: service {service.name} ({service.image or 'build:'}): ports {ports}; {kind}")
    for service in stack.proxies_without_port:
        print(
            f"netperf init: not gated: service {service.name!r} ({service.image}) in {plan.compose_path} "
            'neither publishes nor exposes a port (add `expose: ["80"]` and run init again)'
        )
    for service in stack.inactive:
        print(
            f"netperf init: not gated: service {service.name!r} ({service.image}) is in profile(s) "
            f"{', '.join(service.profiles)}, which Compose does not start unless active; to gate it with "
            f"the profile on, run COMPOSE_PROFILES={service.profiles[0]} netperf init --force"
        )
    for service in stack.proxies:
        if service.scheme == "https":
            print(
                f"netperf init: gating {service.name} ({service.image}), HTTPS on port {service.https_port} "
                f"(it listens with TLS only), {_trust_words(plan.ca_of(service))}; with a handshake-per-request test"
            )
        else:
            print(f"netperf init: gating {service.name} ({service.image}), HTTP on port {service.http_port}")
        _print_routes(service)
    if stack.profiles_needed:
        print(f"netperf init: the gates turn on the Compose profile(s) {', '.join(stack.profiles_needed)}")
    for planned in written.files:
        print(f"netperf init: {planned.action:7} {planned.path}")
    for note in written.notes:
        print(f"netperf init: {note}")
    print(
        f"netperf init: done in {time.monotonic() - began:.1f}s. Next: check each gate's path= in "
        f"{plan.test_module}, then `python -m pytest -m netperf {plan.tests_dir}` "
        "(add --netperf-base main to measure against a branch)"
    )
    return 0


def _print_routes(service: ServiceSurvey) -> None:
    """The routes of ``service``'s config that are gated, and the others it names (to choose from)."""
    from pytest_netperf.starter.routes import choose_routes

    gated, others = choose_routes(service.routes, service.gate_port)
    if not gated:
        print(f"netperf init:   {service.name}: no route read from its config; gated at path /")
        return
    shown = ", ".join(f"{r.host or ''}{r.path}" for r in gated)
    print(f"netperf init:   {service.name}: routes gated: {shown}")
    for route in others:
        print(f"netperf init:   {service.name}: not gated: {route.describe()} ({route.source})")


def _trust_words(ca: Optional[str]) -> str:
    """How the gates of a TLS-only proxy check its certificate, for the summary line."""
    if ca is not None:
        return f"trusting the CA {ca}"
    return (
        "accepting its certificate unchecked: no CA certificate among the files it mounts "
        "(name one with --tls-ca PEM; a TODO in the gates says so)"
    )


def _tls_ca(root: Path, given: Optional[Path]) -> Optional[str]:
    """``--tls-ca`` relative to ``root`` (as the gates name it), after checking it is a PEM
    certificate inside the repository; None when not given."""
    from pytest_netperf.starter.tls import check_ca_file

    if given is None:
        return None
    path = (root / given).resolve() if not given.is_absolute() else given.resolve()
    problem = check_ca_file(path)
    if problem:
        raise _UsageError(f"{problem}. Nothing was written")
    if not path.is_relative_to(root):
        raise _UsageError(f"--tls-ca {given} is outside {root}: the CI job checks out only the repository")
    return path.relative_to(root).as_posix()


def _ci_systems(text: str) -> list[str]:
    from pytest_netperf.starter.files import CI_FILES

    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    if names == ["none"]:
        return []
    unknown = [name for name in names if name not in CI_FILES]
    if unknown or not names:
        raise _UsageError(f"--ci {text!r}: choose from {', '.join(CI_FILES)} (comma-separated) or none")
    return list(dict.fromkeys(names))


class _UsageError(NetperfError):
    """A bad option value."""


def _compose_file(root: Path, given: Optional[Path]) -> Path:
    if given is not None:
        file = (root / given).resolve() if not given.is_absolute() else given
        if not file.is_relative_to(root):
            raise _UsageError(
                f"Compose file {given} is outside {root}: run netperf init in the repository that holds it"
            )
        return file
    for name in DEFAULT_COMPOSE_FILES:
        if (root / name).is_file():
            return root / name
    raise _UsageError(f"no Compose file in {root} (looked for {', '.join(DEFAULT_COMPOSE_FILES)}); name one")


def _check_proxies(stack: StackSurvey) -> None:
    if stack.proxies:
        return
    services = ", ".join(f"{s.name} ({s.image or 'build:'})" for s in stack.services)
    if stack.proxies_without_port:
        names = ", ".join(repr(s.name) for s in stack.proxies_without_port)
        raise _UsageError(
            f"{stack.file}: service {names} neither publishes nor exposes a port; "
            'add `expose: ["80"]` (or its port) to it. Nothing was written'
        )
    if stack.inactive:
        names = ", ".join(f"{s.name!r} (profile(s) {', '.join(s.profiles)})" for s in stack.inactive)
        raise _UsageError(
            f"{stack.file}: the only proxies, service {names}, are under profiles Compose does not start "
            f"unless active; run COMPOSE_PROFILES={stack.inactive[0].profiles[0]} netperf init to gate them "
            "with the profile on. Nothing was written"
        )
    raise _UsageError(
        f"{stack.file} has no service that serves HTTP through a known proxy image "
        f"(nginx, HAProxy, Envoy, Kong, Traefik, Caddy, httpd, Varnish); its services: {services}. "
        "Nothing was written; write the gates by hand (README: 'Gate your own configs')"
    )


def _relative(path: Path, root: Path) -> str:
    return path.resolve().relative_to(root).as_posix()


def _watched_folders(stack: StackSurvey, root: Path) -> tuple[str, ...]:
    """Folders under the root that the stack's services bind-mount (their configs), for the
    GitHub job's ``paths:`` filter."""
    folders: set[str] = set()
    for service in stack.services:
        for source in service.binds:
            path = (root / source).resolve() if not source.is_absolute() else source
            folder = path if path.is_dir() else path.parent
            if folder != root and folder.is_relative_to(root):
                folders.add(folder.relative_to(root).as_posix())
    return tuple(sorted(folders))
