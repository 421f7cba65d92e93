"""The session's working folders in the temporary directory, marked so that only the session
that made them (or the cleanup of a crashed one) removes them."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

#: A session's working folders (a Compose stack's override file) are named ``netperf-<session>-…``
#: in the temporary directory and hold this file, whose text is the session id.
FOLDER_MARKER = ".pytest-netperf-session"


def session_folder(session_id: str, name: str) -> Path:
    """A new working folder ``netperf-<session>-<name>-…`` in the temporary directory, marked as
    the session's, so that the session's cleanup (signals and crashes included) removes it."""
    folder = Path(tempfile.mkdtemp(prefix=f"netperf-{session_id}-{name}-"))
    (folder / FOLDER_MARKER).write_text(session_id)
    return folder


def remove_session_folders(session_id: str) -> int:
    """Remove the working folders of ``session_id`` (only folders carrying its marker); return how many."""
    removed = 0
    if not session_id or session_id == "?":
        return removed
    for folder in Path(tempfile.gettempdir()).glob(f"netperf-{session_id}-*"):
        marker = folder / FOLDER_MARKER
        try:
            if not folder.is_dir() or folder.is_symlink() or marker.read_text() != session_id:
                continue
        except OSError:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    return removed
