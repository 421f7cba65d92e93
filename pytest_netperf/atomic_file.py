"""Atomic file replacement: readers see the old file or the new one, never a mix."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

#: Prefix of in-flight temporary files; directory listings must skip them.
TEMP_PREFIX = ".tmp-"


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically and durably.

    The text goes to a temporary file in the same directory, is fsynced, then renamed
    over ``path`` with :func:`os.replace` (atomic on POSIX), and the directory is
    fsynced. Concurrent writers of the same path each complete; the last rename wins.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=TEMP_PREFIX, suffix=".part")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, 0o644)
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
