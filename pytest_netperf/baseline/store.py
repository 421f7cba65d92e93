"""Stored baselines: what earlier runs measured, one versioned JSON file per test id.

Layout of a baseline directory (default ``.netperf/``, committed with the tests)::

    .netperf/
      amd-epyc-7b13-2c/                                             # one folder per machine class
        tests_test_gw.py__test_overhead_kong-c100-3f9a0c1b2d.json   # one per test id
      intel-xeon-4c/
        tests_test_gw.py__test_overhead_kong-c100-3f9a0c1b2d.json
      .last-run/                                                    # pending results
        .gitignore                                                  # "*": never committed
        tests_test_gw.py__test_overhead_kong-c100-3f9a0c1b2d.json

A baseline is used only on its machine class (:mod:`pytest_netperf.baseline.machine`):
numbers from another kind of machine are not a reference. Files directly in the directory
(the layout before machine classes) are still read, as baselines of the class their own
fingerprint names.

File names are a readable slug of the test id plus a short hash of the full id, so
parametrized ids never collide and the name is the same in every run.

Baselines are only written on request (``--netperf-update-baseline`` or ``netperf
baseline update``). Every run, the plugin saves what it measured as *pending* results
in ``.last-run/`` (same format); ``netperf baseline update`` promotes those files, so
accepting an intentional change does not need a second, slower and noisier run.

Writes are atomic (temporary file, fsync, ``os.replace``), so pytest-xdist workers
writing concurrently never leave a torn file: for one test id the last complete write
wins. There is no directory index (listing reads the files), hence nothing to lock.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from pathlib import Path
from typing import Iterable, Optional

from pytest_netperf import defaults
from pytest_netperf.atomic_file import TEMP_PREFIX, write_text_atomic
from pytest_netperf.baseline.fingerprint import compare_fingerprints
from pytest_netperf.baseline.machine import machine_class
from pytest_netperf.baseline.model import (
    FORMAT_VERSION,
    Baseline,
    SeriesRecord,
    dumps,
    git_commit,
    loads,
)
from pytest_netperf.errors import BaselineError

__all__ = [
    "FORMAT_VERSION",
    "Baseline",
    "BaselineStore",
    "SeriesRecord",
    "compare_fingerprints",
    "git_commit",
    "matches",
    "safe_name",
]

PENDING_DIRNAME = ".last-run"
#: ``netperf baseline update``'s flag that promotes the results of a run that failed.
ACCEPT_FAILED_FLAG = "--accept-failed"


def safe_name(test_id: str) -> str:
    """A readable, collision-free, stable file stem for a test id.

    ``tests/test_gw.py::test_overhead[kong-c100]`` ->
    ``tests_test_gw.py__test_overhead_kong-c100-<10 hex digits of sha256>``.
    """
    parts = [re.sub(r"[^A-Za-z0-9._=-]+", "_", p).strip("._-") for p in test_id.split("::")]
    slug = "__".join(p for p in parts if p)[:80].rstrip("._-") or "test"
    digest = hashlib.sha256(test_id.encode("utf-8")).hexdigest()[:10]
    return f"{slug}-{digest}"


def matches(test_id: str, pattern: Optional[str]) -> bool:
    """True when ``pattern`` is None, equals ``test_id``, or matches it as a glob."""
    return pattern is None or test_id == pattern or fnmatch.fnmatchcase(test_id, pattern)


class BaselineStore:
    """Baseline files of one directory (one folder per machine class), plus the pending
    results of the last run. ``machine_class`` is this run's class: :meth:`load` reads only
    its baselines; None (the CLI) reads every class and writes by each file's fingerprint."""

    def __init__(self, directory: Path = Path(defaults.BASELINE_DIR), machine_class: Optional[str] = None) -> None:
        self.directory = Path(directory)
        self.machine_class = machine_class
        self.pending_directory = self.directory / PENDING_DIRNAME

    # -- paths ---------------------------------------------------------------------
    def path_for(self, test_id: str, machine: Optional[str] = None) -> Path:
        """Where the baseline of ``test_id`` for class ``machine`` (default: this run's) lives."""
        machine = machine or self.machine_class
        folder = self.directory / machine if machine else self.directory
        return folder / f"{safe_name(test_id)}.json"

    def legacy_path_for(self, test_id: str) -> Path:
        """Where a baseline of the layout without machine classes lives."""
        return self.directory / f"{safe_name(test_id)}.json"

    def pending_path_for(self, test_id: str) -> Path:
        """Where the last run's results for ``test_id`` live."""
        return self.pending_directory / f"{safe_name(test_id)}.json"

    def baseline_paths(self) -> list[Path]:
        """Every baseline file of every machine class (and of the old flat layout), sorted."""
        folders = (
            sorted(p for p in self.directory.iterdir() if p.is_dir() and not p.name.startswith("."))
            if self.directory.is_dir()
            else []
        )
        return _json_files(self.directory) + [path for folder in folders for path in _json_files(folder)]

    def pending_paths(self) -> list[Path]:
        """Every pending result file, sorted."""
        return _json_files(self.pending_directory)

    # -- reading -------------------------------------------------------------------
    def read(self, path: Path) -> Baseline:
        """Parse one file; BaselineError names the file and what is wrong."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise BaselineError(f"{path}: cannot read ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise BaselineError(f"{path}: corrupt file: not UTF-8 text (byte {exc.start})") from None
        return loads(text, path)

    def check_directory(self) -> None:
        """BaselineError naming the directory unless it exists and is a directory."""
        if self.directory.is_dir():
            return
        if self.directory.exists():
            raise BaselineError(f"{self.directory}: not a directory (expected the baseline directory)")
        raise BaselineError(f"{self.directory}: no such baseline directory")

    def load(self, test_id: str) -> Optional[Baseline]:
        """The stored baseline of ``test_id`` for this run's machine class, or ``None`` (NEW).

        Its class folder first; then a file of the old flat layout whose fingerprint is of
        this class. Without a class (the CLI), the flat file whatever its class.
        """
        found = self._load_from(self.path_for(test_id), test_id)
        if found is not None or self.machine_class is None:
            return found
        legacy = self._load_from(self.legacy_path_for(test_id), test_id)
        if legacy is not None and machine_class(legacy.fingerprint) == self.machine_class:
            return legacy
        return None

    def other_classes(self, test_id: str) -> dict[str, Path]:
        """Machine class -> file, for the baselines of ``test_id`` stored for other classes."""
        out: dict[str, Path] = {}
        name = f"{safe_name(test_id)}.json"
        for path in self.baseline_paths():
            if path.name != name:
                continue
            if path.parent == self.directory:
                machine = machine_class(self.read(path).fingerprint)
            else:
                machine = path.parent.name
            if machine != self.machine_class:
                out.setdefault(machine, path)
        return out

    def load_from_class(self, test_id: str, machine: str) -> Optional[Baseline]:
        """The baseline of ``test_id`` stored for class ``machine`` (opting in to another machine's)."""
        path = self.other_classes(test_id).get(machine) or self.path_for(test_id, machine)
        return self._load_from(path, test_id)

    def load_pending(self, test_id: str) -> Optional[Baseline]:
        """The last run's results for ``test_id``, or ``None``."""
        return self._load_from(self.pending_path_for(test_id), test_id)

    def _load_from(self, path: Path, test_id: str) -> Optional[Baseline]:
        if not path.exists():
            return None
        baseline = self.read(path)
        if baseline.test_id != test_id:
            raise BaselineError(f"{path}: holds test id {baseline.test_id!r}, expected {test_id!r}")
        return baseline

    # -- writing -------------------------------------------------------------------
    def save(self, baseline: Baseline) -> Path:
        """Write ``baseline`` atomically as the stored baseline of its test id, in the folder
        of the machine class its fingerprint names (a file of the old flat layout goes)."""
        path = self.path_for(baseline.test_id, machine_class(baseline.fingerprint))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BaselineError(f"{path.parent}: cannot create ({exc.strerror or exc})") from None
        self._write(path, baseline)
        legacy = self.legacy_path_for(baseline.test_id)
        if legacy.exists() and machine_class(self.read(legacy).fingerprint) == machine_class(baseline.fingerprint):
            legacy.unlink(missing_ok=True)
        return path

    def save_pending(self, baseline: Baseline) -> Path:
        """Write the last run's results for a test (never the stored baseline)."""
        ignore = self.pending_directory / ".gitignore"
        try:
            self.pending_directory.mkdir(parents=True, exist_ok=True)
            if not ignore.exists():
                write_text_atomic(ignore, "# pending results of the last netperf run\n*\n")
        except OSError as exc:
            raise BaselineError(f"{self.pending_directory}: cannot write ({exc.strerror or exc})") from None
        path = self.pending_path_for(baseline.test_id)
        self._write(path, baseline)
        return path

    def _write(self, path: Path, baseline: Baseline) -> None:
        try:
            write_text_atomic(path, dumps(baseline))
        except OSError as exc:
            raise BaselineError(f"{path}: cannot write ({exc.strerror or exc})") from None

    def promote_pending(self, test_ids: Optional[Iterable[str]] = None, accept_failed: bool = False) -> list[Path]:
        """Make pending results the stored baselines; ``None`` promotes all of them.

        Every file is read and validated before anything is written. Raises
        BaselineError when a named test has no pending results, or when a run's results are
        nobody's baseline (a budget FAILed or was INVALID) unless ``accept_failed``.
        """
        if test_ids is None:
            pending = [self.read(p) for p in self.pending_paths()]
        else:
            pending = []
            for test_id in test_ids:
                found = self.load_pending(test_id)
                if found is None:
                    raise BaselineError(
                        f"{self.pending_path_for(test_id)}: no pending results for "
                        f"{test_id!r}; run it with pytest first"
                    )
                pending.append(found)
        refused = [b for b in pending if b.not_a_baseline] if not accept_failed else []
        if refused:
            lines = "; ".join(f"{b.source or self.pending_path_for(b.test_id)}: {b.not_a_baseline}" for b in refused)
            raise BaselineError(
                f"{len(refused)} pending result(s) not promoted, their run failed: {lines}; nothing was "
                f"written (pass {ACCEPT_FAILED_FLAG} to store them anyway)"
            )
        return [self.save(baseline) for baseline in pending]

    def prune(self, known_test_ids: Iterable[str], dry_run: bool = False) -> list[Path]:
        """Remove baselines (and pending results) of tests not in ``known_test_ids``;
        returns those files (with ``dry_run``, only returns them).

        Every file is read first; if any is unreadable nothing is removed and
        BaselineError names it (its test id is unknown).
        """
        known = set(known_test_ids)
        files = self.baseline_paths() + self.pending_paths()
        stale = [path for path in files if self.read(path).test_id not in known]
        if not dry_run:
            for path in stale:
                try:
                    path.unlink(missing_ok=True)
                except OSError as exc:
                    raise BaselineError(f"{path}: cannot remove ({exc.strerror or exc})") from None
        return stale


def _json_files(directory: Path) -> list[Path]:
    """Baseline-shaped files: not temporaries, not the store's own files (``_noise.json``)."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.json") if p.is_file() and not p.name.startswith((TEMP_PREFIX, "_")))
