"""The base revision of a pull request against real git: resolving REF, materialising its files,
what changed.

Every test builds real, small git repositories in ``tmp_path`` (the user's git configuration is
kept out) and runs git; nothing here needs Docker. The pure parts (fetch hints, ``unchanged``,
a stack's inputs from a normalised config) are tested in tests/unit/test_base_revision.py.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_netperf.engine.session_folders import FOLDER_MARKER, remove_session_folders
from pytest_netperf.errors import NetperfError, RevisionError
from pytest_netperf.revision import (
    BaseCheckout,
    FileChange,
    ResolvedRef,
    changed_files,
    dirty_paths,
    repo_root,
    resolve,
    stack_inputs,
    unchanged,
)
from pytest_netperf.revision.git import SHALLOW_HINT, run_git, stream_git

COMPOSE = """\
services:
  edge:
    image: nginx:1.27
    volumes:
      - ./nginx/edge.conf:/etc/nginx/nginx.conf:ro
"""


EDGE_BASE = """\
worker_processes 1;
events {}
http {
    keepalive_timeout 65;
    gzip on;
    gzip_types text/plain;
    server { listen 80; }
}
"""


EDGE_HEAD = """\
worker_processes 1;
events {}
http {
    keepalive_timeout 5;
    server { listen 80; }
}
"""


LOGO = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def write(root: Path, relative: str, content: str | bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def files_under(folder: Path) -> set[str]:
    return {path.relative_to(folder).as_posix() for path in folder.rglob("*") if not path.is_dir()}


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No global or system git configuration, and no repository above ``tmp_path``."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def repo(tmp_path: Path) -> dict[str, str]:
    """``main`` (tagged v1): compose file, nginx/edge.conf, nginx/old.conf, logo.png. ``feature``
    (checked out) edits edge.conf (+1 -3), adds nginx/extra.conf and removes nginx/old.conf."""
    root = tmp_path / "team-gateway"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "ci@example.com")
    git(root, "config", "user.name", "CI")
    git(root, "config", "commit.gpgsign", "false")
    write(root, "docker-compose.yml", COMPOSE)
    write(root, "nginx/edge.conf", EDGE_BASE)
    write(root, "nginx/old.conf", "# retired\n")
    write(root, "logo.png", LOGO)
    base = commit(root, "Edge proxy with gzip")
    git(root, "tag", "-a", "v1", "-m", "first release")
    git(root, "checkout", "-q", "-b", "feature")
    write(root, "nginx/edge.conf", EDGE_HEAD)
    write(root, "nginx/extra.conf", "# extra\nlimit_req_zone x;\n")
    (root / "nginx/old.conf").unlink()
    head = commit(root, "Shorter keepalive, no gzip")
    return {"root": str(root), "base": base, "head": head}


@pytest.fixture
def session_id() -> Iterator[str]:
    sid = f"t{uuid.uuid4().hex[:10]}"
    yield sid
    remove_session_folders(sid)


def root_of(repo: dict[str, str]) -> Path:
    return Path(repo["root"])


def test_resolve_names_branch_tag_and_relative_revisions(repo: dict[str, str]) -> None:
    root = root_of(repo)
    main = resolve(root, "main")
    assert main == ResolvedRef("main", repo["base"], repo["base"][:7], "Edge proxy with gzip")
    assert main.describe() == f'main ({repo["base"][:7]} "Edge proxy with gzip")'
    assert resolve(root, "v1").commit == repo["base"]  # an annotated tag, peeled to its commit
    assert resolve(root, "HEAD~1").commit == repo["base"]
    assert resolve(root, "feature").commit == repo["head"]
    assert resolve(root, repo["base"][:10]).commit == repo["base"]
    assert len(main.commit) == 40 and all(c in "0123456789abcdef" for c in main.commit)


@pytest.mark.parametrize(
    ("ref", "fetch"),
    [
        ("origin/main", "run `git fetch origin main`"),
        ("release-2", "run `git fetch origin release-2` and use --netperf-base origin/release-2"),
        ("refs/remotes/origin/hotfix/tls", "run `git fetch origin hotfix/tls`"),
    ],
)
def test_an_unknown_ref_is_named_with_what_to_fetch(repo: dict[str, str], ref: str, fetch: str) -> None:
    with pytest.raises(RevisionError) as caught:
        resolve(root_of(repo), ref)
    message = str(caught.value)
    assert f"unknown revision {ref!r}" in message
    assert fetch in message
    assert "shallow" not in message
    assert isinstance(caught.value, NetperfError)


def test_history_beyond_a_full_clone_gets_no_fetch_hint(repo: dict[str, str]) -> None:
    with pytest.raises(RevisionError) as caught:
        resolve(root_of(repo), "HEAD~5")
    assert "unknown revision 'HEAD~5'" in str(caught.value)
    assert "git fetch" not in str(caught.value)


def test_a_shallow_clone_says_to_fetch_history(repo: dict[str, str], tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "feature", f"file://{repo['root']}", str(clone))
    assert resolve(clone, "HEAD").commit == repo["head"]
    with pytest.raises(RevisionError) as caught:
        resolve(clone, "HEAD~1")
    assert "unknown revision 'HEAD~1'" in str(caught.value)
    assert SHALLOW_HINT in str(caught.value)
    assert "`git fetch --unshallow`" in str(caught.value) and "fetch-depth: 0" in str(caught.value)
    with pytest.raises(RevisionError) as caught:
        resolve(clone, "origin/main")  # a single-branch clone has no origin/main either
    assert "run `git fetch origin main`" in str(caught.value)
    assert "this is a shallow clone" in str(caught.value)


def test_outside_a_repository(tmp_path: Path, session_id: str) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for call in (
        lambda: repo_root(plain),
        lambda: resolve(plain, "main"),
        lambda: BaseCheckout(plain, "main", session_id),
    ):
        with pytest.raises(RevisionError, match=r"is not inside a git repository; --netperf-base needs one"):
            call()
    with pytest.raises(RevisionError, match="does not exist"):
        repo_root(tmp_path / "missing")
    assert not list(Path(tempfile.gettempdir()).glob(f"netperf-{session_id}-*"))


def test_repo_root_from_a_file_or_subfolder(repo: dict[str, str]) -> None:
    root = root_of(repo)
    assert repo_root(root / "nginx") == root
    assert repo_root(root / "nginx" / "edge.conf") == root


def test_options_are_not_revisions(repo: dict[str, str]) -> None:
    with pytest.raises(RevisionError, match="is not a revision"):
        resolve(root_of(repo), "--output=/tmp/x")


def test_a_failing_git_command_is_named_with_its_stderr(repo: dict[str, str]) -> None:
    with pytest.raises(RevisionError) as caught:
        run_git(root_of(repo), "cat-file", "-p", "no-such-object")
    message = str(caught.value)
    assert f"`git -C {repo['root']} cat-file -p no-such-object` failed (exit 128)" in message
    assert "no-such-object" in message.split("failed", 1)[1]


def test_a_streaming_git_command_has_a_time_limit(repo: dict[str, str]) -> None:
    started = time.monotonic()
    with pytest.raises(RevisionError, match=r"`git -C .* archive --format=tar HEAD` did not finish within 0.2 s"):
        stream_git(
            root_of(repo), "archive", "--format=tar", "HEAD", consume=lambda _stream: time.sleep(1.5), timeout=0.2
        )
    assert time.monotonic() - started < 5


def test_checkout_materialises_exactly_the_base_files(repo: dict[str, str], session_id: str) -> None:
    root = root_of(repo)
    with BaseCheckout(root / "nginx", "main", session_id) as base:
        assert (base.ref, base.commit, base.short, base.root) == ("main", repo["base"], repo["base"][:7], root)
        assert base.path.name == root.name  # Compose names a root-level stack after its folder
        assert base.path.parent.name.startswith(f"netperf-{session_id}-base-")
        assert files_under(base.path) == {"docker-compose.yml", "nginx/edge.conf", "nginx/old.conf", "logo.png"}
        assert (base.path / "nginx/edge.conf").read_text() == EDGE_BASE
        assert (base.path / "logo.png").read_bytes() == LOGO
        assert not (base.path / "nginx/extra.conf").exists()
        assert (root / "nginx/extra.conf").exists()  # the working tree is untouched
    assert not base.path.exists()


def test_map_path_and_exists(repo: dict[str, str], session_id: str, tmp_path: Path) -> None:
    root = root_of(repo)
    with BaseCheckout(root, "v1", session_id) as base:
        assert base.map_path(root / "nginx/edge.conf") == base.path / "nginx/edge.conf"
        assert base.map_path("nginx/edge.conf") == base.path / "nginx/edge.conf"
        assert base.map_path(root) == base.path
        assert base.exists(root / "nginx/edge.conf")
        assert base.exists(root / "nginx")
        assert base.exists("nginx/old.conf")  # removed on the branch, present in the base
        assert not base.exists(root / "nginx/extra.conf")  # added on the branch
        with pytest.raises(RevisionError, match="outside the repository"):
            base.map_path(tmp_path / "elsewhere.yml")
        with pytest.raises(RevisionError, match="outside the repository"):
            base.exists("../elsewhere.yml")


def test_close_is_idempotent_and_removes_the_folder(repo: dict[str, str], session_id: str) -> None:
    base = BaseCheckout(root_of(repo), "HEAD~1", session_id)
    folder = base.path.parent
    assert folder.is_dir() and not base.closed
    base.close()
    base.close()
    assert not folder.exists() and base.closed


def test_the_folder_is_the_sessions_and_its_cleanup_removes_it(repo: dict[str, str], session_id: str) -> None:
    base = BaseCheckout(root_of(repo), "main", session_id)
    folder = base.path.parent
    assert (folder / FOLDER_MARKER).read_text() == session_id
    assert not (base.path / FOLDER_MARKER).exists()  # the base tree holds only REF's files
    assert remove_session_folders(session_id) == 1
    assert not folder.exists()
    base.close()


def test_checkout_failures_name_the_command_and_leave_nothing(repo: dict[str, str], session_id: str) -> None:
    with pytest.raises(RevisionError, match="unknown revision 'gone'"):
        BaseCheckout(root_of(repo), "gone", session_id)
    bogus = ResolvedRef("bogus", "0" * 40, "0000000", "")
    with pytest.raises(RevisionError) as caught:
        BaseCheckout(root_of(repo), bogus, session_id)
    message = str(caught.value)
    assert f"archive --format=tar {'0' * 40}` failed (exit 128)" in message
    assert "not a valid object name" in message.lower() or "not a tree object" in message.lower()
    assert not list(Path(tempfile.gettempdir()).glob(f"netperf-{session_id}-*"))


def test_changed_files_compares_the_base_with_the_working_tree(repo: dict[str, str]) -> None:
    root = root_of(repo)
    write(root, "nginx/untracked.conf", "a\nb\nc")  # no final newline: still 3 lines
    write(root, "logo.png", LOGO + b"\x00more")  # uncommitted, binary
    write(root, "docker-compose.yml", COMPOSE + "    ports: ['8080:80']\n")  # uncommitted
    changes = changed_files(root, repo["base"], [root / "nginx", "logo.png", "docker-compose.yml"])
    assert changes == [
        FileChange("docker-compose.yml", "modified", 1, 0),
        FileChange("logo.png", "modified", None, None),
        FileChange("nginx/edge.conf", "modified", 1, 3),
        FileChange("nginx/extra.conf", "added", 2, 0),
        FileChange("nginx/old.conf", "removed", 0, 1),
        FileChange("nginx/untracked.conf", "added", 3, 0),
    ]
    assert [change.describe() for change in changes] == [
        "docker-compose.yml +1 -0",
        "logo.png (binary)",
        "nginx/edge.conf +1 -3",
        "nginx/extra.conf (new)",
        "nginx/old.conf (removed)",
        "nginx/untracked.conf (new)",
    ]
    assert not unchanged(changes)


def test_a_path_filter_excludes_other_changes(repo: dict[str, str]) -> None:
    root = root_of(repo)
    write(root, "nginx/untracked.conf", "x\n")
    assert changed_files(root, repo["base"], ["nginx/edge.conf"]) == [FileChange("nginx/edge.conf", "modified", 1, 3)]
    assert changed_files(root, repo["base"], [root / "docker-compose.yml"]) == []
    assert unchanged(changed_files(root, repo["base"], ["docker-compose.yml", "logo.png"]))
    assert changed_files(root, repo["head"], ["nginx"]) == [FileChange("nginx/untracked.conf", "added", 1, 0)]
    assert changed_files(root, repo["base"], []) == []
    with pytest.raises(RevisionError, match="outside the repository"):
        changed_files(root, repo["base"], [root.parent / "elsewhere"])


def test_changed_files_of_the_whole_repository_and_binary_new_files(repo: dict[str, str]) -> None:
    root = root_of(repo)
    write(root, "img/new.png", LOGO)
    write(root, ".gitignore", "*.log\n")
    write(root, "debug.log", "ignored\n")
    changes = {change.path: change for change in changed_files(root, repo["base"])}
    assert set(changes) == {".gitignore", "img/new.png", "nginx/edge.conf", "nginx/extra.conf", "nginx/old.conf"}
    assert changes["img/new.png"] == FileChange("img/new.png", "added", None, None)
    assert changes["img/new.png"].binary


def test_dirty_paths_lists_uncommitted_and_untracked_files(repo: dict[str, str]) -> None:
    root = root_of(repo)
    assert dirty_paths(root) == []
    write(root, "nginx/edge.conf", EDGE_HEAD + "# tuned\n")
    write(root, "notes/todo.md", "- bench\n")
    write(root, "staged.conf", "x\n")
    git(root, "add", "staged.conf")
    (root / "nginx/extra.conf").unlink()
    git(root, "mv", "docker-compose.yml", "compose.yml")
    assert dirty_paths(root) == ["compose.yml", "nginx/edge.conf", "nginx/extra.conf", "notes/todo.md", "staged.conf"]


def test_stack_inputs_feed_changed_files(repo: dict[str, str]) -> None:
    root = root_of(repo)
    config = {
        "services": {
            "edge": {
                "image": "nginx:1.27",
                "volumes": [{"type": "bind", "source": str(root / "nginx/edge.conf"), "target": "/etc/nginx.conf"}],
            }
        }
    }
    inputs = stack_inputs(root / "docker-compose.yml", config)
    assert inputs == [root / "docker-compose.yml", root / "nginx/edge.conf"]
    assert [change.describe() for change in changed_files(root, repo["base"], inputs)] == ["nginx/edge.conf +1 -3"]
    assert unchanged(changed_files(root, repo["head"], inputs))
