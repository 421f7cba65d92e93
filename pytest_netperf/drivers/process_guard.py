"""Child processes that die with the process that started them.

A load generator must not outlive the test run that started it: a SIGKILLed pytest runs
no ``finally`` block, so a driver or Locust process it started would keep sending load
for the rest of its round (or forever). On Linux, :func:`die_with_parent` returns a
``preexec_fn`` for :class:`subprocess.Popen` that asks the kernel for a signal (SIGTERM
by default) when the parent dies, and exits at once if the parent already died between
``fork`` and ``prctl`` (then no signal would ever come). Elsewhere it does nothing.

The kernel sends the signal when the *thread* that forked the child exits, not only the
process: start guarded children from a thread that outlives them (the thread that waits
for them does).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import Callable, Optional

#: ``PR_SET_PDEATHSIG`` from ``<linux/prctl.h>``.
_PR_SET_PDEATHSIG = 1
#: Exit code of a child whose parent was already gone before it could be guarded.
ORPHAN_EXIT_CODE = 1

_LIBC: Optional[ctypes.CDLL] = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _guard(parent_pid: int, signum: int) -> None:
    """In the child, before exec: ask for ``signum`` when the parent dies; exit if it has."""
    if _LIBC is None:
        return
    if _LIBC.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        return  # not guarded, but still a working child: better than no child at all
    if os.getppid() != parent_pid:
        os._exit(ORPHAN_EXIT_CODE)


def die_with_parent(signum: int = signal.SIGTERM, parent_pid: Optional[int] = None) -> Callable[[], None]:
    """A ``preexec_fn`` that makes the child receive ``signum`` when its parent dies.

    ``parent_pid`` defaults to the calling process (call this in the parent, right before
    ``Popen``). Linux only; a no-op elsewhere.
    """
    expected = os.getpid() if parent_pid is None else int(parent_pid)
    number = int(signum)

    def guard() -> None:
        _guard(expected, number)

    return guard
