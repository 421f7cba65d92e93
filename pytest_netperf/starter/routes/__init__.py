"""The routes a proxy's own config names, for ``netperf init`` to gate: nginx ``location``s,
HAProxy path ACLs, Envoy route matches (:mod:`.nginx`, :mod:`.haproxy`, :mod:`.envoy`), and
which of them to gate (:mod:`.model`). The config files are the ones a service bind-mounts or
its Dockerfile copies in; each parser is a pure function of a file's text."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from pytest_netperf.starter.routes import envoy, haproxy, nginx
from pytest_netperf.starter.routes.model import Route, choose_routes

__all__ = ["Route", "choose_routes", "config_files", "envoy", "haproxy", "nginx", "read_routes", "read_tls_ports"]

#: Product -> the parser of its config files.
PARSERS: dict[str, Callable[[str, str], list[Route]]] = {
    "nginx": nginx.routes,
    "haproxy": haproxy.routes,
    "envoy": envoy.routes,
}
#: Product -> the reader of the ports its config files listen on with TLS.
TLS_PORT_READERS: dict[str, Callable[[str, str], tuple[int, ...]]] = {
    "nginx": nginx.tls_ports,
    "haproxy": haproxy.tls_ports,
}
#: Product -> the endings of its config files.
SUFFIXES: dict[str, tuple[str, ...]] = {
    "nginx": (".conf",),
    "haproxy": (".cfg",),
    "envoy": (".yaml", ".yml", ".json"),
}
#: Files larger than this are not read; at most this many files per service.
MAX_FILE_BYTES = 1_000_000
MAX_FILES = 50


def config_files(product: str, sources: Iterable[Path]) -> list[Path]:
    """The config files of ``product`` among ``sources`` (files, and folders searched two levels deep)."""
    suffixes = SUFFIXES.get(product)
    if not suffixes:
        return []
    found: list[Path] = []
    for source in sources:
        if source.is_file() and source.name.endswith(suffixes):
            found.append(source)
        elif source.is_dir():
            for pattern in ("*", "*/*"):
                found.extend(sorted(p for p in source.glob(pattern) if p.is_file() and p.name.endswith(suffixes)))
    unique = list(dict.fromkeys(found))
    return [p for p in unique if p.stat().st_size <= MAX_FILE_BYTES][:MAX_FILES]


def read_routes(product: str, files: Iterable[Path], root: Path | None = None) -> list[Route]:
    """Every route ``product``'s config ``files`` name (each named relative to ``root``)."""
    parser = PARSERS.get(product)
    if parser is None:
        return []
    out: list[Route] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        shown = path.relative_to(root).as_posix() if root is not None and path.is_relative_to(root) else str(path)
        out.extend(parser(text, shown))
    return out


def read_tls_ports(product: str, files: Iterable[Path]) -> tuple[int, ...]:
    """The ports ``product``'s config ``files`` listen on with TLS (nginx ``listen 443 ssl``,
    HAProxy ``bind :443 ssl``), sorted; none for a product whose config is not read for them."""
    reader = TLS_PORT_READERS.get(product)
    if reader is None:
        return ()
    ports: set[int] = set()
    for path in files:
        try:
            ports.update(reader(path.read_text(encoding="utf-8", errors="replace"), str(path)))
        except OSError:
            continue
    return tuple(sorted(ports))
