"""The driver binary is found next to the running interpreter when its folder is not on PATH
(a venv used by its full path, issue #41)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.runtime.commands import BINARY_ENV, BINARY_NAME, find_driver_binary


def _venv(tmp_path: Path, with_driver: bool) -> Path:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    if with_driver:
        driver = bin_dir / BINARY_NAME
        driver.write_text("#!/bin/sh\n")
        driver.chmod(0o755)
    return bin_dir


def test_the_driver_next_to_the_interpreter_is_found_off_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _venv(tmp_path, with_driver=True)
    monkeypatch.delenv(BINARY_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    assert find_driver_binary() == str(bin_dir / BINARY_NAME)


def test_without_it_the_error_names_both_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _venv(tmp_path, with_driver=False)
    monkeypatch.delenv(BINARY_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    with pytest.raises(DriverNotFoundError) as info:
        find_driver_binary()
    assert "not on PATH" in str(info.value) and str(bin_dir) in str(info.value)
