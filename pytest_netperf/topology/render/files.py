"""The team's own config files of a file-backed node: where they are and where they are mounted.

Paths of the official images (the local images use the same ones):

========  ======================================  ===================================
kind      a file goes to                          a folder's entries go into
========  ======================================  ===================================
nginx     ``/etc/nginx/nginx.conf``               ``/etc/nginx/``
haproxy   ``/usr/local/etc/haproxy/haproxy.cfg``  ``/usr/local/etc/haproxy/``
envoy     ``/etc/envoy/envoy.yaml``               ``/etc/envoy/``
kong      ``/kong/declarative/kong.yml``          ``/kong/declarative/``
========  ======================================  ===================================

A folder without ``config_path`` is *overlaid* on the directory of the main config path:
each top-level entry is bind-mounted on its own (``nginx/nginx.conf`` at
``/etc/nginx/nginx.conf``, ``nginx/conf.d`` at ``/etc/nginx/conf.d``), so the files the image
keeps there (``mime.types``) stay. With ``config_path`` a folder is mounted whole at that
path, as a Compose ``volumes:`` line would (``./conf.d:/etc/nginx/conf.d:ro``).
Every mount is read-only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pytest_netperf.errors import NetperfError
from pytest_netperf.topology.model import Node, Topology

#: The main config file each kind's (official and local) image reads with its default command.
DEFAULT_CONFIG_PATHS: dict[str, str] = {
    "nginx": "/etc/nginx/nginx.conf",
    "haproxy": "/usr/local/etc/haproxy/haproxy.cfg",
    "envoy": "/etc/envoy/envoy.yaml",
    "kong": "/kong/declarative/kong.yml",
}


class ConfigPathError(NetperfError):
    """A node's ``config=`` path does not exist (or is empty); names the path and the base dir."""


@dataclass(frozen=True)
class Mount:
    """A bind mount: host path ``source`` at ``target`` in the container."""

    source: str
    target: str
    read_only: bool = True


def base_directory(base_dir: str | os.PathLike[str] | None) -> Path:
    """The directory relative ``config=`` paths resolve against (the cwd when None)."""
    return Path(base_dir if base_dir is not None else os.getcwd()).absolute()


def config_source(node: Node, base_dir: str | os.PathLike[str] | None) -> Path:
    """The absolute host path of ``node.config`` (relative paths join ``base_dir``)."""
    if node.config is None:
        raise ValueError(f"node {node.name!r} has no config=")
    path = Path(os.path.expanduser(os.fspath(node.config)))
    return path if path.is_absolute() else base_directory(base_dir) / path


def missing_configs(topology: Topology, base_dir: str | os.PathLike[str] | None) -> list[str]:
    """One line per node whose ``config=`` does not exist or is an empty folder."""
    problems: list[str] = []
    base = base_directory(base_dir)
    for node in topology.nodes:
        if node.config is None:
            continue
        source = config_source(node, base)
        relative = "" if Path(os.fspath(node.config)).is_absolute() else f" (resolved against {base})"
        if not source.exists():
            problems.append(f"node {node.name!r}: config {os.fspath(node.config)!r} does not exist: {source}{relative}")
        elif source.is_dir() and node.config_path is None and not any(source.iterdir()):
            problems.append(f"node {node.name!r}: config folder {source} is empty{relative}")
        elif not (source.is_file() or source.is_dir()):
            problems.append(f"node {node.name!r}: config {source} is neither a file nor a folder")
    return problems


def check_configs(topology: Topology, base_dir: str | os.PathLike[str] | None) -> None:
    """Raise ConfigPathError naming every missing ``config=`` path of ``topology``."""
    problems = missing_configs(topology, base_dir)
    if problems:
        raise ConfigPathError(f"topology {topology.name!r}: " + "; ".join(problems))


def main_config_path(node: Node) -> str:
    """Where the node's main config file is read from in the container."""
    if node.config_path is not None:
        return node.config_path
    if node.kind not in DEFAULT_CONFIG_PATHS:
        raise ValueError(f"node {node.name!r} of kind {node.kind!r} has no default config path; set config_path=")
    return DEFAULT_CONFIG_PATHS[node.kind]


def config_mounts(node: Node, base_dir: str | os.PathLike[str] | None) -> tuple[Mount, ...]:
    """The read-only bind mounts that put ``node.config`` where its image reads it.

    Raises ConfigPathError when the path does not exist (see :func:`check_configs`).
    """
    if node.config is None:
        return ()
    source = config_source(node, base_dir)
    if not source.exists():
        raise ConfigPathError(f"node {node.name!r}: config {source} does not exist")
    if source.is_file() or node.config_path is not None:
        return (Mount(str(source), main_config_path(node)),)
    directory = PurePosixPath(main_config_path(node)).parent
    return tuple(Mount(str(entry), str(directory / entry.name)) for entry in sorted(source.iterdir()))


def declarative_config_path(node: Node, base_dir: str | os.PathLike[str] | None) -> str:
    """For a file-backed Kong node: the path ``KONG_DECLARATIVE_CONFIG`` names."""
    source = config_source(node, base_dir)
    if node.config_path is not None and source.is_dir():
        return str(PurePosixPath(node.config_path) / PurePosixPath(DEFAULT_CONFIG_PATHS["kong"]).name)
    return main_config_path(node)
