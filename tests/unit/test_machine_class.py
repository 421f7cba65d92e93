"""Machine classes and the per-class baseline store: a baseline is a reference only on its own
kind of machine; files of the layout before classes are read as their fingerprint's class."""

from __future__ import annotations

from pathlib import Path

import pytest
from netperf_rounds import make_rounds

from pytest_netperf.baseline.machine import CLASS_KEY, check_class_name, derived_class, machine_class, resolve_class
from pytest_netperf.baseline.model import dumps
from pytest_netperf.baseline.store import Baseline, BaselineStore, SeriesRecord

TEST_ID = "tests/test_gw.py::test_overhead"
XEON = {"cpu_model": "Intel(R) Xeon(R) CPU @ 2.20GHz", "logical_cores": 2}
EPYC = {"cpu_model": "AMD EPYC 7B13 64-Core Processor", "logical_cores": 2}


def baseline(fingerprint: dict[str, object], rps: float = 1000.0) -> Baseline:
    series = {"candidate": SeriesRecord(make_rounds(3, rps=rps), "c=8 closed 1s", "rust", "host")}
    return Baseline.new(TEST_ID, series, fingerprint=dict(fingerprint))


@pytest.mark.parametrize(
    ("fingerprint", "expected"),
    [
        (XEON, "intel-xeon-2c"),
        (EPYC, "amd-epyc-7b13-2c"),
        ({"cpu_model": "Apple M2 Pro", "logical_cores": 12}, "apple-m2-pro-12c"),
        ({"cpu_model": None, "logical_cores": 4}, "unknown-cpu-4c"),
        ({"cpu_model": "Neoverse-N1"}, "neoverse-n1"),
    ],
)
def test_the_class_is_the_cpu_model_and_core_count(fingerprint: dict[str, object], expected: str) -> None:
    assert derived_class(fingerprint) == expected == machine_class(fingerprint)


def test_a_named_class_wins_over_the_derived_one() -> None:
    assert machine_class({**XEON, CLASS_KEY: "ci-small"}) == "ci-small"
    assert resolve_class("ci-small", XEON) == "ci-small"
    assert resolve_class(None, XEON) == "intel-xeon-2c"
    assert resolve_class(None)  # this machine's, whatever it is


@pytest.mark.parametrize("name", ["", "../up", "a/b", "Big Box", "-x", "x" * 65])
def test_a_class_name_that_cannot_be_a_folder_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="machine class"):
        check_class_name(name)


def test_each_class_reads_only_its_own_baseline(tmp_path: Path) -> None:
    BaselineStore(tmp_path).save(baseline(XEON, rps=1000.0))
    BaselineStore(tmp_path).save(baseline(EPYC, rps=2000.0))
    assert sorted(p.parent.name for p in BaselineStore(tmp_path).baseline_paths()) == [
        "amd-epyc-7b13-2c",
        "intel-xeon-2c",
    ]
    xeon = BaselineStore(tmp_path, "intel-xeon-2c").load(TEST_ID)
    epyc = BaselineStore(tmp_path, "amd-epyc-7b13-2c").load(TEST_ID)
    assert xeon is not None and xeon.values("candidate", "rps")[0] == pytest.approx(1000.0, rel=0.2)
    assert epyc is not None and epyc.values("candidate", "rps")[0] == pytest.approx(2000.0, rel=0.2)
    other = BaselineStore(tmp_path, "arm-box-4c")
    assert other.load(TEST_ID) is None
    assert sorted(other.other_classes(TEST_ID)) == ["amd-epyc-7b13-2c", "intel-xeon-2c"]
    borrowed = other.load_from_class(TEST_ID, "intel-xeon-2c")
    assert borrowed is not None and borrowed.fingerprint["cpu_model"] == XEON["cpu_model"]


def test_a_file_of_the_flat_layout_counts_for_its_fingerprints_class(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.legacy_path_for(TEST_ID).write_text(dumps(baseline(XEON)))
    assert BaselineStore(tmp_path, "intel-xeon-2c").load(TEST_ID) is not None
    epyc = BaselineStore(tmp_path, "amd-epyc-7b13-2c")
    assert epyc.load(TEST_ID) is None
    assert epyc.other_classes(TEST_ID) == {"intel-xeon-2c": store.legacy_path_for(TEST_ID)}


def test_saving_moves_a_flat_file_of_the_same_class_into_its_folder(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path, "intel-xeon-2c")
    store.legacy_path_for(TEST_ID).write_text(dumps(baseline(XEON, rps=500.0)))
    path = store.save(baseline(XEON, rps=900.0))
    assert path == tmp_path / "intel-xeon-2c" / path.name
    assert not store.legacy_path_for(TEST_ID).exists()
    assert [p.parent.name for p in store.baseline_paths()] == ["intel-xeon-2c"]


def test_a_flat_file_of_another_class_stays_when_this_class_saves(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path, "amd-epyc-7b13-2c")
    store.legacy_path_for(TEST_ID).write_text(dumps(baseline(XEON)))
    store.save(baseline(EPYC))
    assert store.legacy_path_for(TEST_ID).exists()
    assert store.load(TEST_ID) is not None and store.load(TEST_ID).fingerprint["cpu_model"] == EPYC["cpu_model"]


def test_promoting_pending_results_writes_into_their_class(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)  # the CLI's store: no class of its own
    store.save_pending(baseline({**EPYC, CLASS_KEY: "ci-small"}))
    (path,) = store.promote_pending(None)
    assert path.parent == tmp_path / "ci-small"
