"""A service of the system under test that crashed and restarted during the run is said to
have restarted, with its restart count and exit, not only "costs not recorded" (issue #41).

The Docker daemon is a stand-in object answering ``inspect_container`` and ``stats`` the way
the Docker API does; the cgroup files are out of reach (``proc`` is an empty folder), so the
probe reads Docker stats.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from netperf_rounds import make_round

from pytest_netperf.errors import CgroupError
from pytest_netperf.measure.system_costs import run_with_costs
from pytest_netperf.runtime.costs import Member, SystemProbe


class _Api:
    def __init__(self) -> None:
        self.restarts = 0
        self.cpu_ns = 1_000_000

    def crash_and_restart(self) -> None:
        self.restarts += 1
        self.cpu_ns = 10

    def inspect_container(self, container_id: str) -> dict[str, Any]:
        return {
            "RestartCount": self.restarts,
            "State": {
                "Status": "running",
                "Running": True,
                "Pid": 999_999,
                "StartedAt": f"2026-11-27T08:00:0{self.restarts}Z",
                "ExitCode": 139 if self.restarts else 0,
                "OOMKilled": False,
            },
        }

    def stats(self, container_id: str, stream: bool, one_shot: bool) -> dict[str, Any]:
        self.cpu_ns += 1000
        return {"cpu_stats": {"cpu_usage": {"total_usage": self.cpu_ns}}, "memory_stats": {"usage": 4096}}


class _Client:
    def __init__(self) -> None:
        self.api = _Api()


def _probe(tmp_path: Path) -> tuple[SystemProbe, _Api]:
    client = _Client()
    return SystemProbe(client, [Member("backend", "c0ffee", "shop-backend-1")], proc=tmp_path), client.api


def test_a_restart_mid_round_says_the_service_restarted_with_its_count_and_exit(tmp_path: Path) -> None:
    probe, api = _probe(tmp_path)
    opened = probe.begin(poll_s=0)
    api.crash_and_restart()
    with pytest.raises(CgroupError) as info:
        opened.end(served=10)
    text = str(info.value)
    assert "node 'backend' restarted during the round" in text and "restarted during the run" in text
    assert "restart count 0 -> 1" in text and "exit code 139" in text


def test_a_restart_between_rounds_is_said_too(tmp_path: Path) -> None:
    probe, api = _probe(tmp_path)
    probe.begin(poll_s=0).end(served=10)
    api.crash_and_restart()
    notes: list[str] = []
    result = run_with_costs(lambda: make_round(), probe, "candidate", False, notes)
    assert result.system is not None  # the new process's counters are whole
    assert any("node 'backend' restarted during the run" in n and "restart count 0 -> 1" in n for n in notes), notes


def test_a_restart_mid_round_is_a_note_naming_it_not_only_costs_not_recorded(tmp_path: Path) -> None:
    probe, api = _probe(tmp_path)
    notes: list[str] = []

    def run() -> Any:
        api.crash_and_restart()
        return make_round()

    run_with_costs(run, probe, "candidate", False, notes)
    assert any("node 'backend' restarted during the round" in n and "exit code 139" in n for n in notes), notes
    assert not any(n.startswith("system-under-test costs not recorded") for n in notes), notes
