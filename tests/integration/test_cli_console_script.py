"""The installed ``netperf`` console script, run as a program (the command's behaviour is tested
in-process in tests/unit/test_cli.py)."""

from __future__ import annotations

import subprocess

from pytest_netperf import __version__


def test_console_script_is_installed() -> None:
    proc = subprocess.run(["netperf", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == f"pytest-netperf {__version__}"
