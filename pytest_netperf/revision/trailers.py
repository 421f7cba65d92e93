"""The trailers of the HEAD commit (``Key: value`` lines at the end of its message).

Read with ``git log -1 --format=%h%n%B`` and ``git interpret-trailers --parse`` (git's own
rules: the last paragraph, folded lines joined). Without git, outside a repository or
before the first commit there is no trailer: :func:`head_trailers` returns nothing.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from pytest_netperf.revision.git import GIT_TIMEOUT_S, git_env


@dataclass(frozen=True)
class HeadTrailers:
    """The HEAD commit (abbreviated) and its trailers' values for one key, in order."""

    commit: str = ""
    values: tuple[str, ...] = ()


def head_trailers(directory: Path | str, key: str, timeout: float = GIT_TIMEOUT_S) -> HeadTrailers:
    """The values of the ``key`` trailers (key compared without case) of the HEAD commit of
    the repository holding ``directory``; empty when there is none or git cannot tell."""
    message = _git(directory, ["log", "-1", "--format=%h%n%B"], None, timeout)
    if message is None:
        return HeadTrailers()
    commit, _, body = message.partition("\n")
    parsed = _git(directory, ["interpret-trailers", "--parse"], body, timeout)
    if parsed is None:
        return HeadTrailers(commit.strip())
    return HeadTrailers(commit.strip(), tuple(trailer_values(parsed, key)))


def trailer_values(parsed: str, key: str) -> list[str]:
    """The values of ``key`` in the output of ``git interpret-trailers --parse`` (one
    ``Key: value`` per line)."""
    values = []
    for line in parsed.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == key.lower():
            values.append(value.strip())
    return values


def _git(directory: Path | str, args: list[str], stdin: str | None, timeout: float) -> str | None:
    """git's stdout, or None when git is missing, fails or takes too long."""
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), *args],
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
            env=git_env(),
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
