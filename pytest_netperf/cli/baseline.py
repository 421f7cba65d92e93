"""``netperf baseline show | diff | update | prune``: the baseline store from a shell.

Each command returns an exit code: 0 done (a diff that shows a regression is still 0),
1 a problem (corrupt file, nothing to promote, refusing to prune), 2 usage.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

from pytest_netperf.baseline.fingerprint import compare_fingerprints
from pytest_netperf.baseline.machine import machine_class
from pytest_netperf.baseline.speed import SpeedCheck, stored_calibration
from pytest_netperf.baseline.store import Baseline, BaselineStore, matches
from pytest_netperf.budget import metrics
from pytest_netperf.budget.metrics import format_metric
from pytest_netperf.errors import BaselineError
from pytest_netperf.report.terminal import shorten_test_id

Printer = Callable[[str], None]

SHOW_METRICS = ("rps", "p50", "p99", "error_rate")
DIFF_METRICS = ("rps", "p50", "p90", "p99", "p999", "error_rate", "sockets")

COLLECT_COMMAND = (
    "-m",
    "pytest",
    "--collect-only",
    "-q",
    "-m",
    "netperf",
    "-p",
    "no:cacheprovider",
)


def _err(message: str) -> None:
    print(f"netperf: {message}", file=sys.stderr)


def _median(values: Sequence[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def _read_all(store: BaselineStore, paths: Sequence[Path]) -> tuple[list[Baseline], int]:
    """Read every file; print each error and return how many failed."""
    good, broken = _read_each(store, paths)
    return good, len(broken)


def _read_each(store: BaselineStore, paths: Sequence[Path]) -> tuple[list[Baseline], dict[Path, str]]:
    """Read every file; print each error; the good ones, and path -> why for the others."""
    good: list[Baseline] = []
    broken: dict[Path, str] = {}
    for path in paths:
        try:
            good.append(store.read(path))
        except BaselineError as exc:
            _err(str(exc))
            broken[path] = str(exc)
    return good, broken


def _directory_problem(store: BaselineStore) -> bool:
    """Print why the baseline directory cannot be read (missing, a file); True if so."""
    try:
        store.check_directory()
    except BaselineError as exc:
        _err(str(exc))
        return True
    return False


def show(store: BaselineStore, pattern: Optional[str], out: Printer = print) -> int:
    """Table of stored baselines (one row per series) with median key metrics."""
    from tabulate import tabulate

    if _directory_problem(store):
        return 1
    baselines, failed = _read_all(store, store.baseline_paths())
    selected = [b for b in baselines if matches(b.test_id, pattern)]
    if not selected:
        where = f" matching {pattern!r}" if pattern else ""
        out(f"no baselines{where} in {store.directory}")
        return 1 if failed else 0
    table = []
    for b in sorted(selected, key=lambda b: (b.test_id, machine_class(b.fingerprint))):
        for index, (name, series) in enumerate(b.series.items()):
            first = index == 0
            table.append(
                [
                    shorten_test_id(b.test_id, 44) if first else "",
                    machine_class(b.fingerprint) if first else "",
                    name,
                    b.created_at[:16].replace("T", " ") if first else "",
                    (b.git_commit or "-")[:10] if first else "",
                    _calibration_cell(b) if first else "",
                    len(series.rounds),
                    *(format_metric(m, _median(series.values(m))) for m in SHOW_METRICS),
                ]
            )
    headers = ["test", "machine class", "series", "created (UTC)", "commit", "calibration", "rounds", *SHOW_METRICS]
    out(tabulate(table, headers=headers, tablefmt="simple", disable_numparse=True))
    out(f"{len(selected)} baseline(s) in {store.directory}; metrics are medians over rounds")
    return 1 if failed else 0


def diff(store: BaselineStore, pattern: Optional[str], out: Printer = print) -> int:
    """Stored baseline vs the last run's pending results, per series and metric."""
    if _directory_problem(store):
        return 1
    stored, broken = _read_each(store, store.baseline_paths())
    pending, failed_pending = _read_all(store, store.pending_paths())
    failed = len(broken) + failed_pending
    stored_by_id = {(machine_class(b.fingerprint), b.test_id): b for b in stored if matches(b.test_id, pattern)}
    pending_by_id = {b.test_id: b for b in pending if matches(b.test_id, pattern)}
    if not pending_by_id:
        out(f"no pending results in {store.pending_directory}; run the tests with pytest first")
        return 1 if failed else 0
    for test_id in sorted(pending_by_id):
        out("")
        out(test_id)
        new = pending_by_id[test_id]
        old = stored_by_id.get((machine_class(new.fingerprint), test_id))
        malformed = _malformed_file(store, broken, new) if old is None else None
        if malformed is not None:
            path, why = malformed
            out(f"  stored baseline {path} is malformed, not compared: {why}")
            continue
        _diff_one(old, new, out)
    without_run = sorted({test_id for _, test_id in stored_by_id} - set(pending_by_id))
    if without_run:
        out("")
        out(f"{len(without_run)} stored baseline(s) have no results from the last run")
    return 1 if failed else 0


def _malformed_file(store: BaselineStore, broken: dict[Path, str], new: Baseline) -> Optional[tuple[Path, str]]:
    """The unreadable stored file that would hold ``new``'s baseline (its class's, or the old
    flat layout's), and why it is unreadable; None when there is none."""
    for path in (store.path_for(new.test_id, machine_class(new.fingerprint)), store.legacy_path_for(new.test_id)):
        if path in broken:
            why = broken[path]
            return path, why[len(f"{path}: ") :] if why.startswith(f"{path}: ") else why
    return None


def _diff_one(old: Optional[Baseline], new: Baseline, out: Printer) -> None:
    from tabulate import tabulate

    if old is None:
        out("  NEW: no stored baseline (promote with: netperf baseline update TEST_ID)")
        return
    out(f"  stored   {old.created_at} commit {(old.git_commit or '-')[:10]}")
    out(f"  last run {new.created_at} commit {(new.git_commit or '-')[:10]}")
    if new.accepted_regression:
        out(f"  last run accepted a regression: {new.accepted_regression}")
    for difference in compare_fingerprints(old.fingerprint, new.fingerprint):
        out(f"  machine differs: {difference}")
    speed = _speed_line(old, new)
    if speed:
        out(f"  {speed}")
    table = []
    for name in [*old.series, *(n for n in new.series if n not in old.series)]:
        if name not in new.series or name not in old.series:
            side = "stored baseline" if name in old.series else "last run"
            out(f"  series {name!r} only in the {side}")
            continue
        for metric in DIFF_METRICS:
            before = _median(old.series[name].values(metric))
            after = _median(new.series[name].values(metric))
            table.append(
                [
                    name,
                    metric,
                    format_metric(metric, before),
                    format_metric(metric, after),
                    *_ratio_cells(metric, before, after),
                ]
            )
    if table:
        headers = ["series", "metric", "stored", "last run", "ratio", "change"]
        text = tabulate(table, headers=headers, tablefmt="simple", disable_numparse=True)
        out("\n".join("  " + line for line in text.splitlines()))


def _calibration_cell(baseline: Baseline) -> str:
    """The machine's speed calibration (ms per work unit), ``-`` for a file without one."""
    calibration = stored_calibration(baseline.fingerprint)
    return f"{calibration.ms:.0f} ms" if calibration is not None else "-"


def _speed_line(old: Baseline, new: Baseline) -> str:
    """``machine speed: calibration 47 ms stored vs 94 ms last run (2.0x: another machine ...)``, or ""."""
    check = SpeedCheck(stored_calibration(old.fingerprint), stored_calibration(new.fingerprint))
    if check.stored is None or check.here is None:
        return ""
    figures = f"machine speed: calibration {check.stored.ms:.0f} ms stored vs {check.here.ms:.0f} ms last run"
    if check.differs:
        return f"{figures} ({check.ratio:.1f}x: another machine; wall-clock figures do not compare)"
    return figures


def _ratio_cells(metric: str, before: Optional[float], after: Optional[float]) -> list[str]:
    if before is None or after is None:
        return ["n/a", ""]
    worse = after < before if metrics.get(metric).higher_is_better else after > before
    if before == 0:
        return ["n/a", "" if after == 0 else "from 0" + (" (worse)" if worse else "")]
    ratio = after / before
    change = (ratio - 1.0) * 100
    mark = " (worse)" if worse and abs(change) >= 0.05 else ""
    return [f"{ratio:.3f}", f"{change:+.1f}%{mark}"]


def update(
    store: BaselineStore, test_ids: Sequence[str], promote_all: bool, out: Printer = print, accept_failed: bool = False
) -> int:
    """Promote pending results to stored baselines; those of a run whose budgets FAILed or
    were INVALID only with ``accept_failed`` (``--accept-failed``). A run whose only failures
    were ACCEPTED (an intended regression, ``--netperf-accept``) needs no flag; its baseline
    records what was accepted and why, and the line after its path says so."""
    if bool(test_ids) == promote_all:
        _err("baseline update: name test ids or pass --all (not both)")
        return 2
    try:
        written = store.promote_pending(None if promote_all else list(test_ids), accept_failed=accept_failed)
    except BaselineError as exc:
        _err(str(exc))
        return 1
    if not written:
        out(f"nothing to promote: {store.pending_directory} holds no pending results")
        return 1
    for path in written:
        out(f"updated {path}")
        accepted = _accepted_regression(store, path)
        if accepted:
            out(f"  from an accepted regression: {accepted}")
    out(f"{len(written)} baseline(s) updated; commit them with your change")
    return 0


def _accepted_regression(store: BaselineStore, path: Path) -> Optional[str]:
    """What the baseline written to ``path`` says of the regression its run accepted, if any."""
    try:
        return store.read(path).accepted_regression
    except BaselineError:  # just written: only a concurrent writer could break it
        return None


def prune(
    store: BaselineStore,
    known_from: Optional[Path],
    collect: bool,
    dry_run: bool,
    out: Printer = print,
) -> int:
    """Remove baselines whose test ids are not in the known list / not collected."""
    if _directory_problem(store):
        return 1
    try:
        known = read_known_ids(known_from) if known_from is not None else collect_test_ids()
    except (OSError, RuntimeError) as exc:
        _err(f"baseline prune: {exc}")
        return 1
    if not known:
        _err("baseline prune: the list of known tests is empty; refusing to remove every baseline")
        return 1
    try:
        stale = store.prune(known, dry_run=dry_run)
    except BaselineError as exc:
        _err(f"{exc}; nothing was removed")
        return 1
    verb = "would remove" if dry_run else "removed"
    for path in stale:
        out(f"{verb} {path}")
    out(f"{len(stale)} file(s) {verb}; {len(known)} known test id(s)")
    return 0


def read_known_ids(path: Path) -> set[str]:
    """Test ids from a file: one per line; blank lines and ``#`` comments are skipped."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")}


def collect_test_ids(cwd: Optional[Path] = None, timeout_s: float = 300.0) -> set[str]:
    """Node ids of the netperf tests: ``python -m pytest --collect-only -q -m netperf``.

    Runs in ``cwd`` (default: the current directory) with the project's own pytest
    configuration. Raises RuntimeError when collection fails or finds nothing.
    """
    argv = [sys.executable, *COLLECT_COMMAND]
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"test collection took longer than {timeout_s:g}s") from None
    ids = set()
    for line in proc.stdout.splitlines():
        if not line.strip():
            break  # node ids come first; a blank line precedes the summary and warnings
        if "::" in line and not line[:1].isspace():
            ids.add(line.strip())
    if proc.returncode == 5 or (proc.returncode == 0 and not ids):
        raise RuntimeError("pytest collected no netperf tests here; refusing to prune")
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
        raise RuntimeError(f"test collection failed (pytest exit {proc.returncode}):\n{tail}")
    return ids
