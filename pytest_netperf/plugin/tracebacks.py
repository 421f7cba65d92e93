"""Tracebacks of errors pytest-netperf raises on purpose: the user's code, not the plugin's.

A :class:`~pytest_netperf.errors.NetperfError` carries a message that names the problem
and the fix; the plugin frames it passed through are noise in a failure section. These
helpers cut them off, so pytest shows the test's own line and the message (or the
message alone when no frame of the user's is left). ``--fulltrace`` keeps everything.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Optional


def _within(filename: str, directories: tuple[Path, ...]) -> bool:
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return False
    return any(path.is_relative_to(d) for d in directories)


def cut_plugin_frames(tb: Optional[TracebackType], plugin_dir: Path, framework_dirs: tuple[Path, ...]) -> bool:
    """Drop the frames of ``plugin_dir`` at the inner end of ``tb`` (in place).

    The traceback then ends at the innermost frame outside ``plugin_dir``. Returns True
    when that frame is the user's (outside ``framework_dirs``: pytest, pluggy), so the
    cut traceback is worth showing; False when only framework frames are left (an error
    of the plugin's own fixtures or hooks: show the message alone). Nothing is cut then.
    """
    entries: list[TracebackType] = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    outside = [i for i, e in enumerate(entries) if not _within(e.tb_frame.f_code.co_filename, (plugin_dir,))]
    if not outside:
        return False
    last = entries[outside[-1]]
    if _within(last.tb_frame.f_code.co_filename, framework_dirs):
        return False
    last.tb_next = None
    return True


def plain_message(exc: BaseException) -> str:
    """``ExceptionName: message``, as pytest's ``E`` line says it, for a failure without traceback."""
    name = type(exc).__name__
    text = str(exc)
    return f"{name}: {text}" if text else name


def raised_within(tb: Optional[TracebackType], directory: Path, framework_dir: Path) -> bool:
    """Whether the innermost frame of ``tb`` outside ``framework_dir`` (pytest's own code: the
    frame that called ``pytest.skip``, say) is code of ``directory``."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    caller = next((f for f in reversed(frames) if not _within(f.f_code.co_filename, (framework_dir,))), None)
    return caller is not None and _within(caller.f_code.co_filename, (directory,))
