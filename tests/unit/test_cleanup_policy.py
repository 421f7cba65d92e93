"""Which resources `netperf clean` and the session start remove: crashed sessions' only, unless --all.

A fake Docker client stands in for the daemon, so the policy is tested without one; the
integration tests (tests/integration/test_docker_cleanup.py) run it against Docker.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pytest

from pytest_netperf.cli.main import main
from pytest_netperf.runtime import cleanup
from pytest_netperf.runtime import labels as L
from pytest_netperf.runtime.cleanup import clean, staleness


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


DEAD = _dead_pid()


class FakeResource:
    def __init__(self, name: str, labels: dict[str, str], removed: list[str]) -> None:
        self.name = name
        self.labels = labels
        self.attrs = {"Labels": labels}
        self._removed = removed

    def remove(self, **_: Any) -> None:
        self._removed.append(self.name)


class FakeCollection:
    def __init__(self, items: list[FakeResource]) -> None:
        self.items = items

    def list(self, filters: dict[str, list[str]], **_: Any) -> list[FakeResource]:
        (wanted,) = filters["label"]
        key, _, value = wanted.partition("=")
        return [i for i in self.items if key in i.labels and (not value or i.labels[key] == value)]


class FakeClient:
    """Two live resources (this process), two of a crashed session, one of another host."""

    def __init__(self) -> None:
        self.removed: list[str] = []
        live = L.resource_labels("live0001", "echo", "net-live")
        dead = L.resource_labels("dead0002", "echo", "net-dead", pid=DEAD)
        remote = {**L.resource_labels("far00003", "echo", "net-far", pid=DEAD), L.HOST: "another-machine"}
        unlabelled_pid = {L.SESSION: "nopid004"}
        self.containers = FakeCollection(
            [
                FakeResource("net-live-echo", live, self.removed),
                FakeResource("net-dead-echo", dead, self.removed),
                FakeResource("net-far-echo", remote, self.removed),
                FakeResource("nopid-echo", unlabelled_pid, self.removed),
            ]
        )
        self.networks = FakeCollection(
            [FakeResource("net-live", live, self.removed), FakeResource("net-dead", dead, self.removed)]
        )


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    client = FakeClient()
    monkeypatch.setattr(cleanup, "docker_client", lambda: client)
    return client


def test_staleness_is_a_gone_process_on_this_host() -> None:
    assert staleness(L.resource_labels("s", "t", "n", pid=DEAD)) == (True, f"process {DEAD} is gone")
    stale, why = staleness(L.resource_labels("s", "t", "n"))
    assert not stale and "still runs" in why
    stale, why = staleness({**L.resource_labels("s", "t", "n", pid=DEAD), L.HOST: "elsewhere"})
    assert not stale and "host elsewhere" in why
    stale, why = staleness({L.SESSION: "s"})
    assert not stale and "no pid label" in why
    assert staleness({L.SESSION: "s", L.PID: str(DEAD)}, hostname=socket.gethostname())[0]  # no host label: ours


def test_default_removes_only_crashed_sessions(fake: FakeClient) -> None:
    said: list[str] = []
    result = clean(everything=False, say=said.append)
    assert fake.removed == ["net-dead-echo", "net-dead"]  # the container before its network
    assert [r.name for r in result.removed] == ["net-dead-echo", "net-dead"]
    assert {r.name for r in result.kept} == {"net-live-echo", "net-live", "net-far-echo", "nopid-echo"}
    assert said == [
        f"removed container net-dead-echo (session dead0002, pid {DEAD}: process {DEAD} is gone)",
        f"removed network net-dead (session dead0002, pid {DEAD}: process {DEAD} is gone)",
    ]
    assert result.summary() == f"removed 2 container(s)/network(s) of session(s) dead0002 (pid {DEAD})"


def test_all_removes_running_sessions_too(fake: FakeClient) -> None:
    result = clean(everything=True)
    assert sorted(fake.removed) == sorted(
        ["net-live-echo", "net-dead-echo", "net-far-echo", "nopid-echo", "net-live", "net-dead"]
    )
    assert not result.kept and len(result) == 6


def test_dry_run_lists_and_removes_nothing(fake: FakeClient) -> None:
    said: list[str] = []
    result = clean(dry_run=True, say=said.append)
    assert fake.removed == []
    assert [r.name for r in result.removed] == ["net-dead-echo", "net-dead"]
    assert all(line.startswith("would remove ") for line in said) and len(said) == 2
    assert result.summary().startswith("would remove 2 container(s)/network(s)")
    assert clean(dry_run=True, everything=True).summary().startswith("would remove 6")
    assert fake.removed == []


def test_clean_command_spares_running_sessions(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clean"]) == 0
    out = capsys.readouterr().out
    assert fake.removed == ["net-dead-echo", "net-dead"]
    assert f"removed container net-dead-echo (session dead0002, pid {DEAD}: process {DEAD} is gone)" in out
    assert "kept session live0001" in out and "still runs" in out
    assert "kept session far00003" in out and "another-machine" in out
    assert "`netperf clean --all` also removes what was kept" in out
    assert out.rstrip().endswith("netperf: removed 2 container(s)/network(s)")


def test_clean_command_dry_run(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clean", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert fake.removed == []
    assert "would remove network net-dead" in out and "kept session live0001" in out
    assert "netperf: would remove 2 container(s)/network(s) (dry run: nothing removed)" in out


def test_clean_command_all(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clean", "--all", "--dry-run"]) == 0
    assert fake.removed == [] and "would remove container net-live-echo (session live0001" in capsys.readouterr().out
    assert main(["clean", "--all"]) == 0
    out = capsys.readouterr().out
    assert len(fake.removed) == 6 and "kept" not in out
    assert "removed container net-live-echo (session live0001" in out and "netperf: removed 6" in out


def test_clean_session_and_clean_stale_keep_their_counts(fake: FakeClient) -> None:
    assert cleanup.clean_stale() == 2
    assert cleanup.clean_session("live0001") == 2
    assert fake.removed == ["net-dead-echo", "net-dead", "net-live-echo", "net-live"]
