"""No baseline from a broken run, and no crash on a baseline that cannot be compared (issue #41).

``--netperf-update-baseline`` and ``netperf baseline update`` used to store the rounds of a
run with 100% HTTP 500 (its p90 all zeros) and of a test that FAILed, without a word; the
next healthy run then crashed dividing by the zeros.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

import pytest
from netperf_rounds import FINGERPRINT, make_rounds

from pytest_netperf.baseline.model import Baseline, SeriesRecord
from pytest_netperf.baseline.policy import BaselinePolicy
from pytest_netperf.baseline.store import BaselineStore
from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.cli import baseline as cli
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.errors import BaselineError
from pytest_netperf.measure.model import Measurement, Series
from pytest_netperf.measure.outcomes import BudgetOutcome
from pytest_netperf.results.model import RoundResult
from pytest_netperf.verdict.status import Status

TEST = "tests/test_gw.py::test_latency"
CLASS = "example-cpu-2c"


def _store(tmp_path: Path) -> BaselineStore:
    return BaselineStore(tmp_path / ".netperf", machine_class=CLASS)


def _policy(store: BaselineStore, update: bool = True, accept_failed: bool = False) -> BaselinePolicy:
    return BaselinePolicy(store, "new", update=update, speed=lambda: None, accept_failed=accept_failed)


def _measurement(rounds: Optional[list[RoundResult]] = None) -> Measurement:
    series = Series(
        label="candidate",
        url="http://127.0.0.1:8080/",
        where="host",
        driver="rust",
        shape=LoadShape(),
        rounds=rounds or make_rounds(3),
    )
    return Measurement(key="default", candidate=series)


def _outcome(text: str, status: Status) -> BudgetOutcome:
    return BudgetOutcome(TEST, "default", parse_budget(text), status, None)


BROKEN = [_outcome("errors == 0", Status.FAIL), _outcome("p90 <= 1.2x baseline", Status.INVALID)]


def test_update_writes_no_baseline_from_a_run_that_failed_and_says_why(tmp_path: Path) -> None:
    store = _store(tmp_path)
    policy = _policy(store)
    recorded = policy.record(TEST, [_measurement()], {}, tmp_path, outcomes=BROKEN)
    with pytest.raises(BaselineError) as info:
        policy.write(recorded)
    text = str(info.value)
    assert "--netperf-update-baseline" in text and "not written" in text
    assert "'errors == 0'" in text and "FAIL" in text and "INVALID" in text
    assert "--netperf-accept-failed-baseline" in text
    assert store.load(TEST) is None


def test_update_writes_a_failed_run_when_told_to(tmp_path: Path) -> None:
    store = _store(tmp_path)
    policy = _policy(store, accept_failed=True)
    recorded = policy.record(TEST, [_measurement()], {}, tmp_path, outcomes=BROKEN)
    assert policy.write(recorded) is not None
    assert store.load(TEST) is not None


def test_update_writes_a_healthy_run(tmp_path: Path) -> None:
    store = _store(tmp_path)
    policy = _policy(store)
    recorded = policy.record(TEST, [_measurement()], {}, tmp_path, outcomes=[_outcome("errors == 0", Status.PASS)])
    assert policy.write(recorded) is not None


def test_record_missing_and_update_share_one_rule(tmp_path: Path) -> None:
    policy = _policy(_store(tmp_path), update=False)
    assert not policy.records_first(TEST, BROKEN)
    assert policy.records_first(TEST, [_outcome("errors == 0", Status.NEW)])


def test_cli_update_does_not_promote_a_failed_run(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _policy(store, update=False).record(TEST, [_measurement()], {}, tmp_path, outcomes=BROKEN)
    errors: list[str] = []
    assert cli.update(BaselineStore(store.directory), [TEST], False, out=errors.append) == 1
    assert not list(store.directory.glob(f"{CLASS}/*.json"))
    with pytest.raises(BaselineError, match=r"\.last-run.*'errors == 0' was FAIL.*--accept-failed"):
        BaselineStore(store.directory).promote_pending([TEST])
    written = BaselineStore(store.directory).promote_pending([TEST], accept_failed=True)
    assert len(written) == 1


def _zero_p90_rounds() -> list[RoundResult]:
    return [
        dataclasses.replace(r, ok=0, non_2xx=r.requests, latency=dataclasses.replace(r.latency, p90_ns=0.0))
        for r in make_rounds(2)
    ]


def test_a_stored_baseline_that_cannot_form_ratios_is_an_error_naming_file_and_metric(tmp_path: Path) -> None:
    store = _store(tmp_path)
    fingerprint = {**FINGERPRINT, "machine_class": CLASS}
    path = store.save(Baseline.new(TEST, {"candidate": SeriesRecord(_zero_p90_rounds())}, fingerprint))
    with pytest.raises(BaselineError) as info:
        _policy(store, update=False).choose(TEST, [parse_budget("p90 <= 1.2x baseline")])
    text = str(info.value)
    assert str(path) in text and "p90" in text and "[0.0, 0.0]" in text


def test_a_zero_baseline_of_another_metric_is_not_an_error(tmp_path: Path) -> None:
    store = _store(tmp_path)
    fingerprint = {**FINGERPRINT, "machine_class": CLASS}
    store.save(Baseline.new(TEST, {"candidate": SeriesRecord(_zero_p90_rounds())}, fingerprint))
    choice = _policy(store, update=False).choose(TEST, [parse_budget("rps >= 0.8x baseline")])
    assert choice.baseline is not None


def test_update_accepts_a_change_that_failed_only_against_the_old_baseline(tmp_path: Path) -> None:
    """Accepting an intentional change is what an update is for: a FAIL against the stored
    baseline is that change, not a broken run."""
    store = _store(tmp_path)
    policy = _policy(store)
    outcomes = [_outcome("p90 <= 1.2x baseline", Status.FAIL), _outcome("errors == 0", Status.PASS)]
    recorded = policy.record(TEST, [_measurement()], {}, tmp_path, outcomes=outcomes)
    assert policy.write(recorded) is not None


def test_an_update_replaces_a_baseline_that_cannot_form_ratios_with_a_note(tmp_path: Path) -> None:
    store = _store(tmp_path)
    fingerprint = {**FINGERPRINT, "machine_class": CLASS}
    store.save(Baseline.new(TEST, {"candidate": SeriesRecord(_zero_p90_rounds())}, fingerprint))
    choice = _policy(store, update=True).choose(TEST, [parse_budget("p90 <= 1.2x baseline")])
    assert choice.baseline is None
    assert any("p90" in note and "this run replaces it" in note for note in choice.notes)


def test_the_netperf_command_promotes_a_failed_run_only_with_accept_failed(tmp_path: Path) -> None:
    from pytest_netperf.cli.main import main

    store = _store(tmp_path)
    _policy(store, update=False).record(TEST, [_measurement()], {}, tmp_path, outcomes=BROKEN)
    assert main(["baseline", "update", TEST, "--dir", str(store.directory)]) == 1
    assert main(["baseline", "update", TEST, "--accept-failed", "--dir", str(store.directory)]) == 0
    assert store.load(TEST) is not None
