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

:func:`driver_preexec` adds a second step for load generators: pin the child to the load
driver's cores (``sched_setaffinity`` before ``exec``), so the driver and every thread or
process it starts stay off the cores of the system under test. Pinning in the
``preexec_fn`` rather than through ``taskset`` needs no extra binary, leaves argv (and so
every error message naming the driver) as it is, and sets the mask before the driver's
first instruction; the cores are checked in the parent, where a bad one is a clear error.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import Callable, Optional

from pytest_netperf.cpusets import cpuset_text, parse_cpuset
from pytest_netperf.runtime.resources import usable_cores

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


def check_cores(cpus: str) -> frozenset[int]:
    """The cores of cpuset ``cpus`` (``0-1``); ValueError naming it when this process may not
    use one of them or the platform cannot pin processes."""
    if not hasattr(os, "sched_setaffinity"):
        raise ValueError(f"cannot pin to cores {cpus!r}: this platform has no sched_setaffinity")
    cores = parse_cpuset(cpus)
    usable = usable_cores()
    missing = [core for core in cores if core not in usable]
    if missing:
        raise ValueError(
            f"cannot pin to cores {cpus!r}: core(s) {cpuset_text(missing)} not available to this process "
            f"(usable: {cpuset_text(usable)})"
        )
    return frozenset(cores)


def pin_to_cores(cpus: str) -> Callable[[], None]:
    """A ``preexec_fn`` step that moves the child onto cpuset ``cpus`` (checked here, in the parent)."""
    cores = check_cores(cpus)

    def pin() -> None:
        os.sched_setaffinity(0, cores)

    return pin


def driver_preexec(cpus: Optional[str] = None, signum: int = signal.SIGTERM) -> Callable[[], None]:
    """The ``preexec_fn`` of a load generator: :func:`die_with_parent`, then, when ``cpus``
    is a cpuset, :func:`pin_to_cores` (None: the child keeps the parent's cores).

    Call it in the parent right before ``Popen``; raises ValueError for cores this process
    may not use.
    """
    guard = die_with_parent(signum)
    if cpus is None:
        return guard
    pin = pin_to_cores(cpus)

    def guard_and_pin() -> None:
        guard()
        pin()

    return guard_and_pin
