"""A driver that hangs is killed with everything it started (issue #41): a wrapper's child
(a shell script around the binary, say) must not keep sending load after the timeout.

The "driver" here is a script run by this interpreter (``sys.executable``) that starts a child
of the same interpreter and hangs; nothing outside the Python environment runs.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from pytest_netperf.errors import DriverError
from pytest_netperf.runtime.commands import BINARY_NAME, LocalRunner

WRAPPER = """#!{python}
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open({pid_file!r}, "w").write(str(child.pid))
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers signal 0: it no longer runs
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc: Linux")
def test_a_hanging_driver_and_its_child_are_killed_at_the_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    wrapper = tmp_path / BINARY_NAME
    wrapper.write_text(WRAPPER.format(python=sys.executable, pid_file=str(pid_file)))
    wrapper.chmod(0o755)
    with pytest.raises(DriverError, match="did not finish within 2s"):
        LocalRunner(binary=str(wrapper)).run([BINARY_NAME, "http"], timeout_s=2.0)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5.0
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(child)
    if alive:  # clean up before failing: nothing a test starts may outlive it
        os.kill(child, 9)
    assert not alive, "the driver's child outlived the timeout"
