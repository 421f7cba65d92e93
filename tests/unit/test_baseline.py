"""Baseline store: file names, format, validation, atomic writes, pending results, prune."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
from datetime import datetime
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from netperf_rounds import FINGERPRINT, make_rounds

from pytest_netperf import __version__
from pytest_netperf.baseline.fingerprint import (
    compare_fingerprints,
    cpu_model,
)
from pytest_netperf.baseline.machine import machine_class
from pytest_netperf.baseline.store import (
    FORMAT_VERSION,
    Baseline,
    BaselineStore,
    SeriesRecord,
    safe_name,
)
from pytest_netperf.errors import BaselineError

TEST_ID = "tests/test_gw.py::test_overhead[kong-c100]"
#: The machine class of FINGERPRINT: the folder its baselines are stored in.
CLASS = machine_class(FINGERPRINT)


def make_baseline(test_id: str = TEST_ID, rps: float = 10_000.0, rounds: int = 3) -> Baseline:
    series = {
        "candidate": SeriesRecord(make_rounds(rounds, rps=rps), "c=100 closed 5s", "rust", "host"),
        "reference": SeriesRecord(make_rounds(rounds, rps=rps * 1.1, seed=7), "c=100 closed 5s", "rust", "host"),
    }
    return Baseline.new(test_id, series, fingerprint=FINGERPRINT)


# ------------------------------------------------------------------ file names
def test_safe_name_is_readable_stable_and_has_no_separators() -> None:
    name = safe_name(TEST_ID)
    assert name.startswith("tests_test_gw.py__test_overhead_kong-c100-")
    assert re.fullmatch(r"[A-Za-z0-9._=-]+-[0-9a-f]{10}", name)
    assert safe_name(TEST_ID) == name


def test_safe_name_does_not_collide_when_slugs_are_equal() -> None:
    ids = ["t.py::test[a b]", "t.py::test[a_b]", "t.py::test[a/b]", "t.py::test[a-b]"]
    names = {safe_name(i) for i in ids}
    assert len(names) == len(ids)


def test_safe_name_of_a_very_long_id_is_bounded() -> None:
    name = safe_name("tests/x.py::test_" + "p" * 500)
    assert len(name) <= 80 + 11


def test_path_for_is_inside_the_store(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / ".netperf")
    path = store.path_for("../../etc/passwd::x")
    assert path.parent == tmp_path / ".netperf"
    assert store.pending_path_for(TEST_ID).parent == tmp_path / ".netperf" / ".last-run"


# ------------------------------------------------------------------ round trip
def test_load_of_unknown_test_is_none(tmp_path: Path) -> None:
    assert BaselineStore(tmp_path).load(TEST_ID) is None


def test_save_then_load_keeps_everything(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / ".netperf", CLASS)
    original = make_baseline()
    path = store.save(original)
    assert path == store.path_for(TEST_ID)

    loaded = store.load(TEST_ID)
    assert loaded is not None
    assert loaded.test_id == TEST_ID
    assert loaded.fingerprint == FINGERPRINT
    assert loaded.plugin_version == __version__
    assert loaded.driver_version == "0.1.0"
    assert loaded.created_at == original.created_at
    assert list(loaded.series) == ["candidate", "reference"]
    for name in original.series:
        assert loaded.series[name].rounds == original.series[name].rounds
        assert loaded.series[name].load_shape == "c=100 closed 5s"
        assert loaded.series[name].where == "host"
    assert loaded.values("candidate", "rps") == original.values("candidate", "rps")
    assert loaded.values("absent", "rps") is None


def test_file_holds_readable_values_and_reanalysable_histograms(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    baseline = make_baseline()
    doc = json.loads(store.save(baseline).read_text())

    assert doc["format_version"] == FORMAT_VERSION == 1
    assert datetime.fromisoformat(doc["created_at"]).utcoffset().total_seconds() == 0
    series = doc["series"]["candidate"]
    assert series["driver"] == "rust" and series["load_shape"] == "c=100 closed 5s"
    assert set(series["values"]) >= {
        "rps",
        "p50",
        "p90",
        "p99",
        "p999",
        "mean",
        "errors",
        "error_rate",
        "sockets",
    }
    assert series["values"]["rps"] == [r.achieved_rps for r in baseline.series["candidate"].rounds]
    first = series["rounds"][0]["latency"]
    histogram = HdrHistogram.decode(first["histogram"])
    assert histogram.get_total_count() == first["count"]
    assert histogram.get_value_at_percentile(99) == first["p99_ns"]


def test_per_round_lists_are_one_line_and_test_ids_stay_verbatim(tmp_path: Path) -> None:
    test_id = "tests/t.py::test_x[1,2]"
    path = BaselineStore(tmp_path).save(make_baseline(test_id=test_id))
    text = path.read_text()
    assert f'"test_id": "{test_id}"' in text
    assert re.search(r'\n +"rps": \[[0-9., ]+\],?\n', text)
    assert json.loads(text)["test_id"] == test_id


def test_new_refuses_an_empty_baseline() -> None:
    with pytest.raises(ValueError, match="no series"):
        Baseline.new(TEST_ID, {}, FINGERPRINT)


# ------------------------------------------------------------------ validation
def write(tmp_path: Path, doc: object) -> tuple[BaselineStore, Path]:
    store = BaselineStore(tmp_path)
    path = store.path_for(TEST_ID)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return store, path


def test_corrupt_json_names_the_file(tmp_path: Path) -> None:
    store, path = write(tmp_path, '{"format_version": 1, "test_id": ')
    with pytest.raises(BaselineError) as info:
        store.load(TEST_ID)
    assert str(path) in str(info.value)
    assert "corrupt JSON" in str(info.value)


def test_newer_format_version_says_upgrade_or_delete(tmp_path: Path) -> None:
    doc = make_baseline().to_dict()
    doc["format_version"] = 99
    store, path = write(tmp_path, doc)
    with pytest.raises(BaselineError) as info:
        store.load(TEST_ID)
    assert str(info.value) == (
        f"{path}: format_version 99 is newer than this pytest-netperf reads (1): the file was written by a "
        "newer pytest-netperf; upgrade pytest-netperf, or delete the file to record a new baseline"
    )
    # --netperf-update-baseline reads the stored baseline first, so it fails the same way: never advise it
    assert "--netperf-update-baseline" not in str(info.value)


@pytest.mark.parametrize("version", [0, "1", True, None, 1.0])
def test_invalid_format_version_says_delete(tmp_path: Path, version: object) -> None:
    doc = make_baseline().to_dict()
    doc["format_version"] = version
    store, path = write(tmp_path, doc)
    with pytest.raises(BaselineError) as info:
        store.load(TEST_ID)
    assert str(info.value).startswith(f"{path}: unknown format_version {version!r} (this pytest-netperf reads 1)")
    assert "delete the file" in str(info.value) and "--netperf-update-baseline" not in str(info.value)


@pytest.mark.parametrize("key", ["format_version", "test_id", "series", "fingerprint", "created_at"])
def test_missing_key_is_named(tmp_path: Path, key: str) -> None:
    doc = make_baseline().to_dict()
    del doc[key]
    store, path = write(tmp_path, doc)
    with pytest.raises(BaselineError, match=re.escape(f"{path}: missing key(s) {key}")):
        store.load(TEST_ID)


def test_broken_round_names_series_and_index(tmp_path: Path) -> None:
    doc = make_baseline().to_dict()
    del doc["series"]["reference"]["rounds"][1]["latency"]
    store, _ = write(tmp_path, doc)
    with pytest.raises(
        BaselineError, match=r"\.json: series\.reference\.rounds\[1\]: missing field latency of RoundResult$"
    ):
        store.load(TEST_ID)


def test_file_of_another_test_is_rejected(tmp_path: Path) -> None:
    store, _ = write(tmp_path, make_baseline(test_id="tests/other.py::test_x").to_dict())
    with pytest.raises(BaselineError, match=r"holds test id 'tests/other.py::test_x'"):
        store.load(TEST_ID)


def test_non_object_document_is_rejected(tmp_path: Path) -> None:
    store, path = write(tmp_path, "[1, 2]")
    with pytest.raises(BaselineError, match=re.escape(f"{path}: expected a JSON object")):
        store.load(TEST_ID)


# ------------------------------------------------------------------ atomic writes
def test_save_replaces_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path, CLASS)
    store.save(make_baseline(rps=1000.0))
    store.save(make_baseline(rps=2000.0))
    assert [p.name for p in tmp_path.iterdir()] == [CLASS]
    assert [p.name for p in (tmp_path / CLASS).iterdir()] == [store.path_for(TEST_ID).name]
    loaded = store.load(TEST_ID)
    assert loaded is not None and loaded.values("candidate", "rps")[1] == 2000.0


def test_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = BaselineStore(tmp_path, CLASS)
    path = store.save(make_baseline(rps=1000.0))
    before = path.read_bytes()

    def failing_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(BaselineError, match=r"cannot write .*No space left"):
        store.save(make_baseline(rps=2000.0))
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def _writer(directory: str, worker: int, writes: int) -> None:
    store = BaselineStore(Path(directory), CLASS)
    for i in range(writes):
        # Same test id from every worker, plus one id per worker.
        store.save(make_baseline(rps=1000.0 * (worker + 1) + i, rounds=4))
        store.save(make_baseline(test_id=f"tests/t.py::test_w[{worker}]", rps=float(i + 1)))


def test_concurrent_writers_never_leave_a_torn_file(tmp_path: Path) -> None:
    workers, writes = 3, 8
    context = multiprocessing.get_context("fork")
    procs = [context.Process(target=_writer, args=(str(tmp_path), w, writes)) for w in range(workers)]
    for p in procs:
        p.start()
    store = BaselineStore(tmp_path, CLASS)
    try:
        while any(p.is_alive() for p in procs):
            if store.path_for(TEST_ID).exists():
                loaded = store.load(TEST_ID)  # raises on a torn file
                assert loaded is not None
                # Both series come from the same write, never from two writers.
                candidate = loaded.values("candidate", "rps")[1]
                assert loaded.values("reference", "rps")[1] == pytest.approx(candidate * 1.1)
    finally:
        for p in procs:
            p.join(timeout=60)
    assert all(p.exitcode == 0 for p in procs)
    final = store.load(TEST_ID)
    assert final is not None and final.values("candidate", "rps")[1] in {
        1000.0 * (w + 1) + (writes - 1) for w in range(workers)
    }
    for w in range(workers):
        own = store.load(f"tests/t.py::test_w[{w}]")
        assert own is not None and own.values("candidate", "rps")[1] == float(writes)
    assert not [p for p in (tmp_path / CLASS).iterdir() if p.name.startswith(".tmp-")]
    assert len(store.baseline_paths()) == workers + 1


# ------------------------------------------------------------------ pending results
def test_pending_results_are_separate_and_self_ignored(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    path = store.save_pending(make_baseline())
    assert path.parent == tmp_path / ".last-run"
    assert (tmp_path / ".last-run" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert store.load(TEST_ID) is None
    assert store.baseline_paths() == []
    assert store.pending_paths() == [path]
    pending = store.load_pending(TEST_ID)
    assert pending is not None and pending.test_id == TEST_ID


def test_promote_named_and_all(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path, CLASS)
    store.save_pending(make_baseline(rps=1234.0))
    store.save_pending(make_baseline(test_id="tests/b.py::test_b", rps=99.0))

    assert store.promote_pending([TEST_ID]) == [store.path_for(TEST_ID)]
    promoted = store.load(TEST_ID)
    assert promoted is not None and promoted.values("candidate", "rps")[1] == 1234.0
    assert store.load("tests/b.py::test_b") is None

    paths = store.promote_pending(None)
    assert sorted(paths) == sorted([store.path_for(TEST_ID), store.path_for("tests/b.py::test_b")])


def test_promote_of_a_test_without_pending_results_fails(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    with pytest.raises(BaselineError, match=r"no pending results for 'tests/x.py::test_x'"):
        store.promote_pending(["tests/x.py::test_x"])
    assert store.promote_pending(None) == []


# ------------------------------------------------------------------ prune
def test_prune_removes_only_unknown_tests(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    keep = store.save(make_baseline())
    gone = store.save(make_baseline(test_id="tests/old.py::test_removed"))
    gone_pending = store.save_pending(make_baseline(test_id="tests/old.py::test_removed"))

    known = [TEST_ID, "tests/other.py::test_without_baseline"]
    assert sorted(store.prune(known, dry_run=True)) == sorted([gone, gone_pending])
    assert gone.exists() and gone_pending.exists()
    removed = store.prune(known)
    assert sorted(removed) == sorted([gone, gone_pending])
    assert keep.exists() and not gone.exists() and not gone_pending.exists()


def test_prune_removes_nothing_when_a_file_is_unreadable(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    stale = store.save(make_baseline(test_id="tests/old.py::test_removed"))
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(BaselineError, match=r"broken.json: corrupt JSON"):
        store.prune([TEST_ID])
    assert stale.exists()


# ------------------------------------------------------------------ fingerprints
def test_identical_fingerprints_have_no_differences() -> None:
    assert compare_fingerprints(FINGERPRINT, dict(FINGERPRINT)) == []


def test_fingerprint_differences_are_described() -> None:
    now = {
        **FINGERPRINT,
        "kernel": "6.1.0-21-amd64",
        "logical_cores": 8,
        "docker_version": None,
        "image_digests": {"nginx": "sha256:bbb", "envoy": "sha256:ccc"},
    }
    assert compare_fingerprints(FINGERPRINT, now) == [
        "logical cores: 2 -> 8",
        "kernel: 6.1.0-18-amd64 -> 6.1.0-21-amd64",
        "Docker version: 20.10.24 -> unknown",
        "image envoy: unknown -> sha256:ccc",
        "image nginx: sha256:aaa -> sha256:bbb",
    ]


def test_cpu_model_reads_x86_and_arm_cpuinfo(tmp_path: Path) -> None:
    x86 = tmp_path / "x86"
    x86.write_text(
        "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\nmodel name\t: Intel(R)  Xeon(R) CPU @ 2.20GHz\n"
    )
    arm = tmp_path / "arm"
    arm.write_text(
        "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n"
    )
    assert cpu_model(x86) == "Intel(R) Xeon(R) CPU @ 2.20GHz"
    assert cpu_model(arm) == "Raspberry Pi 4 Model B Rev 1.4"
