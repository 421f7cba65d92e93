"""Real pinned children: each test starts a real short-lived child (``sleep``, ``sh``) the way
the driver (or Locust) is started and reads ``os.sched_getaffinity(pid)`` while the child runs.
This machine may have only two cores, so pinning is tested with explicit one-core cpusets.

The ``driver_cpus`` setting and its resolution are tested in tests/unit/test_driver_pinning.py.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import psutil
import pytest

from pytest_netperf.drivers.locust.processes import ProcessGroups
from pytest_netperf.runtime.commands import CommandOutcome, LocalRunner
from pytest_netperf.runtime.resources import usable_cores

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning needs Linux")

SLEEP = shutil.which("sleep") or "/bin/sleep"
#: One core this process may use (the last: on most machines not the only one).
ONE = usable_cores()[-1]


def _child_named(name: str, timeout_s: float = 5.0) -> psutil.Process:
    """The running child of this process called ``name``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for child in psutil.Process().children(recursive=True):
            try:
                if child.name() == name:
                    return child
            except psutil.NoSuchProcess:
                continue
        time.sleep(0.01)
    raise AssertionError(f"no child process {name!r} appeared within {timeout_s:g}s")


def test_local_runner_pins_the_driver_process_to_one_core() -> None:
    runner = LocalRunner(binary=SLEEP, cpus=str(ONE))
    outcome: dict[str, CommandOutcome] = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("done", runner.run(["netperf-driver", "2"], 10.0)))
    thread.start()
    try:
        child = _child_named(Path(SLEEP).name)
        assert os.sched_getaffinity(child.pid) == {ONE}
    finally:
        thread.join(timeout=15)
    assert outcome["done"].returncode == 0


def test_an_unpinned_local_runner_keeps_this_process_cores() -> None:
    runner = LocalRunner(binary=SLEEP)
    thread = threading.Thread(target=runner.run, args=(["netperf-driver", "1"], 10.0))
    thread.start()
    try:
        child = _child_named(Path(SLEEP).name)
        assert os.sched_getaffinity(child.pid) == os.sched_getaffinity(0)
    finally:
        thread.join(timeout=15)


def test_locust_process_groups_pin_every_process(tmp_path: Path) -> None:
    with ProcessGroups(tmp_path, grace_s=1.0, cpus=str(ONE)) as groups:
        first = groups.start("master", [SLEEP, "5"])
        second = groups.start("worker 1", ["sh", "-c", f"{SLEEP} 5 & wait"])
        time.sleep(0.2)  # let the shell fork its sleep
        assert os.sched_getaffinity(first.pid) == {ONE}
        assert os.sched_getaffinity(second.pid) == {ONE}
        grandchildren = psutil.Process(second.pid).children()
        assert grandchildren and all(os.sched_getaffinity(p.pid) == {ONE} for p in grandchildren)
    assert all(p.poll() is not None for p in groups.processes)
