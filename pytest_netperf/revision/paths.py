"""Paths relative to a repository's root: the one coordinate that head and base share."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from pytest_netperf.errors import RevisionError


def repo_relative(root: Path, path: str | os.PathLike[str]) -> str:
    """``path`` relative to ``root`` in POSIX form (``""`` for the root itself).

    A relative ``path`` is taken as repository-relative; an absolute one must lie under
    ``root`` (compared as written, then with symlinks resolved). RevisionError otherwise.
    """
    given = Path(path)
    candidate = given if given.is_absolute() else Path(root) / given
    for base, target in (
        (Path(os.path.abspath(root)), Path(os.path.abspath(candidate))),
        (Path(root).resolve(), candidate.resolve()),
    ):
        try:
            relative = target.relative_to(base)
        except ValueError:
            continue
        text = PurePosixPath(*relative.parts).as_posix()
        return "" if text == "." else text
    raise RevisionError(f"{path} lies outside the repository {root}; the base revision has no such path")


def inside(root: Path, path: str | os.PathLike[str]) -> bool:
    """True when ``path`` (absolute, or relative to ``root``) lies under ``root``."""
    try:
        repo_relative(root, path)
    except RevisionError:
        return False
    return True
