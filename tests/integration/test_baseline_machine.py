"""The baseline store on this machine: the git commit a baseline records (real git) and the
machine fingerprint (asks the installed netperf-driver and the Docker daemon, when there)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from netperf_rounds import FINGERPRINT, make_round

from pytest_netperf import __version__
from pytest_netperf.baseline.fingerprint import machine_fingerprint
from pytest_netperf.baseline.store import Baseline, SeriesRecord, git_commit

TEST_ID = "tests/test_gw.py::test_overhead[kong-c100]"


def test_git_commit_is_recorded_inside_a_repo_and_none_outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    outside = tmp_path / "plain"
    outside.mkdir()
    env = dict(os.environ)
    repo = tmp_path / "repo"
    repo.mkdir()
    git = [
        "git",
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "-c",
        "commit.gpgsign=false",
    ]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo, check=True, env=env)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()

    assert git_commit(repo) == head
    assert git_commit(outside) is None
    baseline = Baseline.new(TEST_ID, {"candidate": SeriesRecord([make_round()])}, FINGERPRINT, repo_dir=repo)
    assert baseline.git_commit == head


def test_machine_fingerprint_describes_this_machine() -> None:
    fingerprint = machine_fingerprint({"nginx": "sha256:abc"})
    assert fingerprint["logical_cores"] == os.cpu_count()
    assert fingerprint["kernel"] == os.uname().release
    assert fingerprint["plugin_version"] == __version__
    assert fingerprint["image_digests"] == {"nginx": "sha256:abc"}
    assert machine_fingerprint()["image_digests"] == {}
    binary = shutil.which("netperf-driver")
    if binary is None:
        assert fingerprint["driver_version"] is None
    else:
        printed = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
        assert fingerprint["driver_version"] == printed.split()[-1]
    if Path("/proc/cpuinfo").exists():
        assert fingerprint["cpu_model"]
    docker_version = fingerprint["docker_version"]
    assert docker_version is None or re.match(r"\d+\.\d+", docker_version)
