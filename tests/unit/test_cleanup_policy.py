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
from pytest_netperf.engine import labels as L
from pytest_netperf.engine import session_folders
from pytest_netperf.runtime import cleanup
from pytest_netperf.runtime.cleanup import clean, staleness


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


DEAD = _dead_pid()


class FakeResource:
    def __init__(self, name: str, labels: dict[str, str], removed: list[str]) -> None:
        self.name = name
        self.id = f"sha256:{name}"
        self.short_id = name[:12]
        self.tags = [f"{name}:latest"]
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

    def remove(self, image_id: str, **_: Any) -> None:  # images.remove(id, force=True)
        (item,) = [i for i in self.items if i.id == image_id]
        item.remove()


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
        self.volumes = FakeCollection([])
        self.images = FakeCollection([])


class FakeComposeClient(FakeClient):
    """Adds what a crashed session's Compose stack leaves besides containers: a volume, a built image."""

    def __init__(self) -> None:
        super().__init__()
        dead = L.resource_labels("dead0002", "stack", "net-dead", pid=DEAD)
        live = L.resource_labels("live0001", "stack", "net-live")
        self.volumes = FakeCollection(
            [FakeResource("net-dead_cache", dead, self.removed), FakeResource("net-live_cache", live, self.removed)]
        )
        self.images = FakeCollection([FakeResource("net-dead_app", dead, self.removed)])


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


def test_volumes_and_images_of_crashed_sessions_go_after_their_containers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    client = FakeComposeClient()
    monkeypatch.setattr(cleanup, "docker_client", lambda: client)
    result = clean()
    assert client.removed == ["net-dead-echo", "net-dead", "net-dead_cache", "net-dead_app"]
    assert [r.kind for r in result.removed] == ["container", "network", "volume", "image"]
    assert "net-live_cache" in {r.name for r in result.kept}
    assert result.summary() == (
        f"removed 2 container(s)/network(s), 1 volume(s), 1 image(s) of session(s) dead0002 (pid {DEAD})"
    )
    assert any("kept session live0001 (pid" in line and "1 volume(s)" in line for line in result.kept_lines())
    client = FakeComposeClient()
    monkeypatch.setattr(cleanup, "docker_client", lambda: client)
    assert main(["clean", "--all"]) == 0
    out = capsys.readouterr().out
    assert "removed volume net-live_cache (session live0001" in out
    assert "removed image net-dead_app:latest (session dead0002" in out
    assert out.rstrip().endswith("netperf: removed 6 container(s)/network(s), 2 volume(s), 1 image(s)")


def test_session_folders_go_with_their_session_and_only_marked_ones(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_folders.tempfile, "tempdir", str(tmp_path))
    mine = session_folders.session_folder("sess0001", "team-1")
    (mine / "netperf-override.yml").write_text("services: {}\n")
    other = session_folders.session_folder("sess0002", "team-1")
    unmarked = tmp_path / "netperf-sess0001-not-ours"
    unmarked.mkdir()
    forged = tmp_path / "netperf-sess0001-forged"
    forged.mkdir()
    (forged / session_folders.FOLDER_MARKER).write_text("sess0002")
    assert mine.name.startswith("netperf-sess0001-team-1-") and mine.parent == tmp_path
    assert session_folders.remove_session_folders("sess0001") == 1
    assert not mine.exists() and other.exists() and unmarked.exists() and forged.exists()
    assert session_folders.remove_session_folders("?") == 0


def test_clean_removes_the_folders_of_the_sessions_it_removed(
    fake: FakeClient, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_folders.tempfile, "tempdir", str(tmp_path))
    dead, live = (
        session_folders.session_folder("dead0002", "stack-1"),
        session_folders.session_folder("live0001", "stack-1"),
    )
    clean(dry_run=True)
    assert dead.exists()
    clean()
    assert not dead.exists() and live.exists()
    cleanup.clean_session("live0001")
    assert not live.exists()
