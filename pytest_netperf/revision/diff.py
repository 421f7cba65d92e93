"""What differs between the base revision and the working tree, for the files a stack depends on.

The head side is the working tree as it is: uncommitted and untracked files count, since
that is what the user tests. :func:`stack_inputs` (pure) names a Compose stack's input
files; :func:`changed_files` (git) compares them with the base commit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_netperf.revision.git import run_git
from pytest_netperf.revision.paths import inside, repo_relative

Status = Literal["added", "removed", "modified"]
#: Bytes of a file git looks at to call it binary (a NUL among them).
BINARY_PROBE = 8000
_STATUS: dict[str, Status] = {"A": "added", "D": "removed"}


#: The report fact naming a stack's input files that differ from the base revision.
CHANGES_FACT = "vs base"
#: What that fact says of a stack whose inputs are the same at the base: the run's A/A control.
UNCHANGED = "unchanged (A/A control)"


@dataclass(frozen=True)
class FileChange:
    """One repository-relative file that differs; line counts are None for a binary file."""

    path: str
    status: Status
    added_lines: int | None = None
    removed_lines: int | None = None

    @property
    def binary(self) -> bool:
        """True when git counted no lines (a binary file)."""
        return self.added_lines is None and self.removed_lines is None

    def describe(self) -> str:
        """``nginx/edge.conf +1 -3``, ``nginx/extra.conf (new)``, ``old.conf (removed)``, ``logo.png (binary)``."""
        if self.status == "added":
            return f"{self.path} (new)"
        if self.status == "removed":
            return f"{self.path} (removed)"
        if self.binary:
            return f"{self.path} (binary)"
        return f"{self.path} +{self.added_lines or 0} -{self.removed_lines or 0}"


def changed_files(
    root: Path | str, commit: str, paths: Iterable[str | os.PathLike[str]] | None = None
) -> list[FileChange]:
    """The files under ``paths`` (files or folders; repository-relative or absolute under ``root``;
    None: the whole repository) that differ between ``commit`` and the working tree, by path.

    Tracked files through ``git diff --numstat <commit>``; untracked, non-ignored ones are new
    files whose lines all count as added. RevisionError for a path outside the repository.
    """
    root = Path(root)
    specs = [repo_relative(root, path) or "." for path in paths] if paths is not None else ["."]
    if not specs:
        return []
    diff = ["--literal-pathspecs", "diff", "--no-ext-diff", "--no-textconv", "--no-renames", "-z"]
    statuses = _pairs(run_git(root, *diff, "--name-status", commit, "--", *specs).stdout)
    counts = _numstat(run_git(root, *diff, "--numstat", commit, "--", *specs).stdout)
    changes: dict[str, FileChange] = {}
    for letter, path in statuses:
        added, removed = counts.get(path, (None, None))
        changes[path] = FileChange(path, _STATUS.get(letter[:1], "modified"), added, removed)
    untracked = run_git(root, "--literal-pathspecs", "ls-files", "-z", "--others", "--exclude-standard", "--", *specs)
    for raw in untracked.stdout.split(b"\0"):
        if raw:
            path = os.fsdecode(raw)
            lines = _line_count(root / path)
            changes[path] = FileChange(path, "added", lines, None if lines is None else 0)
    return [changes[path] for path in sorted(changes)]


def unchanged(changes: Iterable[FileChange]) -> bool:
    """True when nothing differs."""
    return next(iter(changes), None) is None


def stack_inputs(compose_file: Path | str, config: Mapping[str, Any], root: Path | str | None = None) -> list[Path]:
    """The files and folders a Compose stack's behaviour depends on, inside the repository.

    From the normalised ``config`` (what ``compose config`` prints, parsed): the compose file,
    bind-mount sources of service ``volumes`` (long and short form; named volumes are not
    files), ``build.context`` folders with their ``dockerfile`` and path-valued
    ``additional_contexts``, ``env_file`` entries, and ``file`` of top-level ``configs`` and
    ``secrets``. Relative paths are taken from the compose file's folder. Paths outside
    ``root`` (default: the nearest folder above the compose file holding ``.git``, else the
    compose file's folder) are left out. No git command runs.
    """
    compose = Path(os.path.abspath(compose_file))
    base = compose.parent
    top = Path(root) if root is not None else find_root(compose)
    found: list[Path] = [compose]
    for service in (config.get("services") or {}).values():
        service = service or {}
        for volume in service.get("volumes") or []:
            source = _bind_source(volume)
            if source:
                found.append(_path(base, source))
        found.extend(_build_inputs(base, service.get("build")))
        found.extend(_path(base, entry) for entry in _env_files(service.get("env_file")))
    for section in ("configs", "secrets"):
        for entry in (config.get(section) or {}).values():
            if isinstance(entry, Mapping) and entry.get("file"):
                found.append(_path(base, str(entry["file"])))
    out: list[Path] = []
    for path in found:
        if path not in out and inside(top, path):
            out.append(path)
    return out


def find_root(path: Path) -> Path:
    """The nearest folder at or above ``path``'s folder holding ``.git``; that folder itself when none does."""
    start = path if path.is_dir() else path.parent
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def _bind_source(volume: Any) -> str | None:
    """The host path of a bind mount (``type: bind`` or ``./src:/dst:ro``); None for a volume."""
    if isinstance(volume, Mapping):
        source = volume.get("source")
        return str(source) if volume.get("type") == "bind" and source else None
    source, separator, _ = str(volume).partition(":")
    if separator and source.startswith(("/", ".", "~")):
        return source
    return None  # a named volume (``cache:/var/cache``) or an anonymous one (``/data``)


def _build_inputs(base: Path, build: Any) -> list[Path]:
    """The context folder, the Dockerfile in it and path-valued additional contexts."""
    if build is None:
        return []
    spec: Mapping[str, Any] = build if isinstance(build, Mapping) else {"context": build}
    context_text = str(spec.get("context") or ".")
    if _remote(context_text):
        return []
    context = _path(base, context_text)
    out = [context]
    if spec.get("dockerfile"):
        out.append(_path(context, str(spec["dockerfile"])))
    for extra in (spec.get("additional_contexts") or {}).values():
        if extra and not _remote(str(extra)):
            out.append(_path(base, str(extra)))
    return out


def _env_files(value: Any) -> list[str]:
    """``env_file`` as a string, a list of strings or (Compose 2.24+) a list of ``{path: …}``."""
    if not value:
        return []
    entries = value if isinstance(value, list) else [value]
    out = []
    for entry in entries:
        path = entry.get("path") if isinstance(entry, Mapping) else entry
        if path:
            out.append(str(path))
    return out


def _remote(text: str) -> bool:
    """A Git URL or image reference rather than a folder (``https://…``, ``git@…``, ``docker-image://…``)."""
    return "://" in text or text.startswith("git@")


def _path(base: Path, text: str) -> Path:
    return Path(os.path.abspath(base / os.path.expanduser(text)))


def _pairs(output: bytes) -> list[tuple[str, str]]:
    """``--name-status -z`` output -> [(status letter, path)]."""
    fields = [os.fsdecode(field) for field in output.split(b"\0")]
    return [(fields[i], fields[i + 1]) for i in range(0, len(fields) - 1, 2) if fields[i]]


def _numstat(output: bytes) -> dict[str, tuple[int | None, int | None]]:
    """``--numstat -z`` output -> path -> (added, removed); None for binary files (``-``)."""
    out: dict[str, tuple[int | None, int | None]] = {}
    for record in output.split(b"\0"):
        added, _, rest = record.partition(b"\t")
        removed, _, path = rest.partition(b"\t")
        if path:
            out[os.fsdecode(path)] = (_count(added), _count(removed))
    return out


def _count(text: bytes) -> int | None:
    return None if text == b"-" else int(text)


def _line_count(path: Path) -> int | None:
    """Lines of a new file as ``git diff`` counts them; None for a binary one (a symlink: 1)."""
    if path.is_symlink():
        return 1
    try:
        data = path.read_bytes()
    except OSError:  # a nested repository's folder, or gone since git listed it
        return None
    if b"\0" in data[:BINARY_PROBE]:
        return None
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
