"""Running the ``git`` command line with a time limit, its failures turned into RevisionError.

Every command runs as ``git -C <root> …`` with ``GIT_OPTIONAL_LOCKS=0`` (``status`` does
not rewrite the user's index behind their back), no terminal prompts and English messages.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pytest_netperf.errors import RevisionError

#: Seconds an ordinary git command (rev-parse, status, diff) may take.
GIT_TIMEOUT_S = 60.0
#: What to fetch when the base revision is missing from a shallow clone.
SHALLOW_HINT = (
    "this is a shallow clone: fetch with history (`git fetch --unshallow` or `actions/checkout` with `fetch-depth: 0`)"
)
_HEX = re.compile(r"^[0-9a-fA-F]{7,40}$")
_SUFFIX = re.compile(r"[~^]|@\{")
_CHUNK = 1 << 16


@dataclass(frozen=True)
class ResolvedRef:
    """A revision as the user named it and the commit it stands for."""

    ref: str
    commit: str
    short: str
    subject: str

    def describe(self) -> str:
        """``origin/main (1a2b3c4 "Raise worker_connections")``."""
        return f'{self.ref} ({self.short} "{self.subject}")'


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment plus the settings every git call here uses."""
    return {
        **os.environ,
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
        **(extra or {}),
    }


def shown(root: Path | str, args: Sequence[str]) -> str:
    """The command line as an error message shows it."""
    return shlex.join(["git", "-C", str(root), *args])


def run_git(
    root: Path | str,
    *args: str,
    timeout: float = GIT_TIMEOUT_S,
    ok: Sequence[int] = (0,),
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git -C root args``; RevisionError naming the command and git's stderr when it
    cannot start, exceeds ``timeout`` seconds or exits with a code not in ``ok``."""
    command = ["git", "-C", str(root), *args]
    try:
        done = subprocess.run(
            command, capture_output=True, timeout=timeout, env=git_env(env), stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise RevisionError(f"`{shown(root, args)}` did not finish within {timeout:g} s") from exc
    except OSError as exc:
        raise RevisionError(f"cannot run `{shown(root, args)}` (is git installed?): {exc}") from exc
    if done.returncode not in ok:
        raise RevisionError(f"`{shown(root, args)}` failed (exit {done.returncode}): {_text(done.stderr)}")
    return done


def stream_git(
    root: Path | str,
    *args: str,
    consume: Callable[[IO[bytes]], None],
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run ``git -C root args`` and hand its stdout, as it streams, to ``consume``.

    git is killed when the whole (git and ``consume``) takes longer than ``timeout`` seconds.
    RevisionError naming the command: on the time limit, or a non-zero exit (with stderr).
    An exception of ``consume`` propagates once git is gone.
    """
    command = ["git", "-C", str(root), *args]
    expired = threading.Event()
    with tempfile.TemporaryFile() as stderr:
        try:
            process = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL, env=git_env(env)
            )
        except OSError as exc:
            raise RevisionError(f"cannot run `{shown(root, args)}` (is git installed?): {exc}") from exc

        def kill() -> None:
            expired.set()
            process.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        failure: BaseException | None = None
        try:
            assert process.stdout is not None
            with process.stdout:
                try:
                    consume(process.stdout)
                    while process.stdout.read(_CHUNK):  # what the consumer left (a tar's padding)
                        pass
                except Exception as exc:  # re-raised below, once git is gone and its exit judged
                    failure = exc
            code = process.wait()  # git stops at once on the closed pipe, else the timer kills it
        finally:
            timer.cancel()
            if process.poll() is None:
                process.kill()
                process.wait()
        if expired.is_set():
            raise RevisionError(f"`{shown(root, args)}` did not finish within {timeout:g} s") from failure
        if code != 0:
            stderr.seek(0)
            raise RevisionError(f"`{shown(root, args)}` failed (exit {code}): {_text(stderr.read())}") from failure
        if failure is not None:
            raise failure


def repo_root(path: Path | str) -> Path:
    """The top folder of the work tree holding ``path`` (a file's folder for a file).

    RevisionError when ``path`` does not exist or is not inside a git repository.
    """
    start = Path(path)
    if start.exists() and not start.is_dir():
        start = start.parent
    if not start.is_dir():
        raise RevisionError(f"{path} does not exist; --netperf-base needs a folder inside a git repository")
    done = run_git(start, "rev-parse", "--show-toplevel", ok=(0, 128))
    if done.returncode != 0:
        said = _text(done.stderr)
        if "not a git repository" in said:
            raise RevisionError(f"{path} is not inside a git repository; --netperf-base needs one")
        raise RevisionError(f"`{shown(start, ['rev-parse', '--show-toplevel'])}` failed: {said}")
    top = _text(done.stdout)
    if not top:
        raise RevisionError(f"{path} is inside a git repository without a work tree; --netperf-base needs one")
    return Path(top)


def resolve(root: Path | str, ref: str) -> ResolvedRef:
    """The commit ``ref`` names in the repository at ``root`` (tags and branches peeled to commits).

    RevisionError naming ``ref`` and what to fetch when the repository has no such commit.
    """
    if not ref.strip() or ref.startswith("-"):
        raise RevisionError(f"--netperf-base {ref!r} is not a revision: give a branch, tag or commit")
    done = run_git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", ok=(0, 1, 128))
    commit = _text(done.stdout)
    if "not a git repository" in _text(done.stderr):
        raise RevisionError(f"{root} is not inside a git repository; --netperf-base needs one")
    if done.returncode != 0 or not commit:
        raise RevisionError(unknown_ref_message(root, ref, remotes(root), is_shallow(root)))
    details = _text(run_git(root, "log", "-1", "--no-show-signature", "--format=%h%x00%s", commit).stdout)
    short, _, subject = details.partition("\0")
    return ResolvedRef(ref=ref, commit=commit, short=short or commit[:7], subject=subject)


def unknown_ref_message(root: Path | str, ref: str, remote_names: Sequence[str], shallow: bool) -> str:
    """Why ``ref`` resolves to nothing and what to run to get it."""
    parts = [f"--netperf-base: unknown revision {ref!r}: no such commit in the repository at {root}"]
    hint = fetch_hint(ref, remote_names)
    if hint:
        parts.append(hint)
    if shallow:
        parts.append(SHALLOW_HINT)
    return "; ".join(parts)


def fetch_hint(ref: str, remote_names: Sequence[str]) -> str | None:
    """``run `git fetch origin main``` for ``origin/main``; None for ``HEAD~3`` and the like."""
    name = _SUFFIX.split(ref, maxsplit=1)[0]
    for prefix in ("refs/remotes/", "refs/heads/", "refs/tags/"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    if not name or name.endswith("HEAD"):
        return None
    known = list(remote_names) or ["origin"]
    for remote in sorted(known, key=len, reverse=True):
        if name.startswith(f"{remote}/") and len(name) > len(remote) + 1:
            return f"run `git fetch {remote} {name[len(remote) + 1 :]}`"
    remote = "origin" if "origin" in known else known[0]
    if _HEX.match(name):
        if len(name) == 40:
            return f"run `git fetch {remote} {name}`"
        return f"run `git fetch {remote}` (or fetch the branch that contains it)"
    return (
        f"run `git fetch {remote} {name}` and use --netperf-base {remote}/{name} "
        f"(for a tag: `git fetch {remote} tag {name}`)"
    )


def remotes(root: Path | str) -> list[str]:
    """The names of the repository's remotes."""
    return _text(run_git(root, "remote").stdout).split()


def is_shallow(root: Path | str) -> bool:
    """True for a shallow clone (history cut off, as ``actions/checkout`` does by default)."""
    return _text(run_git(root, "rev-parse", "--is-shallow-repository").stdout) == "true"


def dirty_paths(root: Path | str) -> list[str]:
    """Repository-relative paths with uncommitted changes, untracked files included (sorted)."""
    out = run_git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all").stdout
    fields = out.split(b"\0")
    paths: set[str] = set()
    index = 0
    while index < len(fields):
        entry = fields[index]
        index += 1
        if len(entry) < 4:
            continue
        paths.add(os.fsdecode(entry[3:]))
        if entry[:1] in (b"R", b"C") or entry[1:2] in (b"R", b"C"):
            index += 1  # the rename's source follows as its own field
    return sorted(paths)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace").strip()
