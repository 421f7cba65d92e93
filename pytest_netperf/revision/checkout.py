"""The files of a base revision, materialised in a session folder next to the working tree.

Why ``git archive`` rather than ``git worktree add --detach``: a worktree registers itself
in the user's repository (``.git/worktrees/…``, a lock on the commit); a crash leaves that
metadata behind for ``git worktree prune`` to clean, and two sessions at once contend for it.
An archive writes nothing into the repository: the folder is all there is, and the session
cleanup removes it even after a crash (:func:`~pytest_netperf.engine.session_folders.session_folder`).

What is not materialised: submodules (their folders stay empty) and Git LFS content (files
keep their pointer text, ``GIT_LFS_SKIP_SMUDGE=1``). ``.gitattributes`` rules that ``git
archive`` honours (``export-ignore``, ``export-subst``) apply to the base files as well.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from pytest_netperf.engine.session_folders import session_folder
from pytest_netperf.errors import RevisionError
from pytest_netperf.revision.git import ResolvedRef, repo_root, resolve, stream_git
from pytest_netperf.revision.paths import repo_relative

#: Seconds ``git archive`` (and unpacking what it streams) may take.
ARCHIVE_TIMEOUT_S = 120.0


class BaseCheckout:
    """REF's tree in a new folder ``<tmp>/netperf-<session>-base-…/<repo name>/``.

    The session marker sits in the outer folder, so :attr:`path` holds exactly REF's files
    under the repository's own folder name (Compose derives names from it).
    """

    def __init__(
        self,
        root: Path | str,
        ref: str | ResolvedRef,
        session_id: str,
        *,
        timeout: float = ARCHIVE_TIMEOUT_S,
    ) -> None:
        """Resolve ``ref`` in the repository holding ``root`` and unpack its files; RevisionError
        naming the command and git's message when that fails (the folder is then removed)."""
        self._root = repo_root(root)
        self._resolved = ref if isinstance(ref, ResolvedRef) else resolve(self._root, ref)
        self._folder: Path | None = session_folder(session_id, "base")
        self._path = self._folder / (self._root.name or "repository")
        try:
            self._path.mkdir()
            stream_git(
                self._root,
                "archive",
                "--format=tar",
                self._resolved.commit,
                consume=lambda stream: unpack(stream, self._path),
                timeout=timeout,
                env={"GIT_LFS_SKIP_SMUDGE": "1"},
            )
        except (OSError, tarfile.TarError) as exc:
            self.close()
            raise RevisionError(f"cannot unpack {self._resolved.describe()} into {self._path}: {exc}") from exc
        except BaseException:
            self.close()
            raise

    @property
    def ref(self) -> str:
        """The revision as the user named it."""
        return self._resolved.ref

    @property
    def commit(self) -> str:
        """The full commit id."""
        return self._resolved.commit

    @property
    def short(self) -> str:
        """The abbreviated commit id."""
        return self._resolved.short

    @property
    def resolved(self) -> ResolvedRef:
        """Ref, commit, short id and subject together."""
        return self._resolved

    @property
    def root(self) -> Path:
        """The head repository's top folder (the working tree)."""
        return self._root

    @property
    def path(self) -> Path:
        """The folder holding the base revision's files."""
        return self._path

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._folder is None

    def map_path(self, head_path: str | os.PathLike[str]) -> Path:
        """The base folder's counterpart of ``head_path`` (absolute under :attr:`root`, or
        repository-relative); RevisionError for a path outside the repository."""
        relative = repo_relative(self._root, head_path)
        return self._path / relative if relative else self._path

    def exists(self, head_path: str | os.PathLike[str]) -> bool:
        """True when the base revision has ``head_path`` (a file, folder or symlink)."""
        return os.path.lexists(self.map_path(head_path))

    def close(self) -> None:
        """Remove the folder (again: nothing happens)."""
        folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def __enter__(self) -> BaseCheckout:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BaseCheckout({self._resolved.describe()} at {self._path})"


def unpack(stream: IO[bytes], destination: Path) -> None:
    """Unpack the tar ``git archive`` streams into ``destination``, as git would check it out.

    Symlinks are recreated as committed (even ones pointing outside the tree, which the
    ``data`` filter of :mod:`tarfile` refuses); absolute names, ``..`` and special files
    (which git never writes) are refused.
    """
    options: dict[str, Any] = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
    with tarfile.open(fileobj=stream, mode="r|") as archive:
        for member in archive:
            name = Path(member.name)
            if name.is_absolute() or ".." in name.parts:
                raise tarfile.TarError(f"unsafe member name {member.name!r}")
            if not (member.isfile() or member.isdir() or member.issym()):
                raise tarfile.TarError(f"unexpected member {member.name!r} of type {member.type!r}")
            archive.extract(member, destination, **options)
