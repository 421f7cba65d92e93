"""Baseline files are validated when read: a malformed file is a BaselineError naming the
file and the field path, never a raw TypeError/ValueError later (in the gate or the CLI)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from netperf_rounds import latency_summary, make_round

from pytest_netperf.baseline.store import Baseline, BaselineStore, SeriesRecord
from pytest_netperf.budget import metrics
from pytest_netperf.cli import baseline as cli_baseline
from pytest_netperf.cli.main import main
from pytest_netperf.errors import BaselineError
from pytest_netperf.results.model import Interval

TEST_ID = "tests/test_gw.py::test_overhead[kong-c100]"
FINGERPRINT = {
    "cpu_model": "Example CPU",
    "logical_cores": 2,
    "kernel": "6.1.0-18-amd64",
    "docker_version": None,
    "image_digests": {"nginx": "sha256:aaa"},
    "python": "3.11.2",
    "plugin_version": "0.1.0",
    "driver_version": "0.1.0",
}


def good_doc() -> dict[str, Any]:
    """One series, one round that uses every part of the round model."""
    first = make_round(errors=3)
    first.errors = {"reset": 2}
    first.service_time = latency_summary(400_000.0, samples=50, seed=3)
    first.intervals = [Interval(0.0, 100, 97, 3, 97.0, 450_000.0, None)]
    first.client.saturation_reasons = ["none really"]
    first.client.schedule_lag_p99_ns = 1_000.0
    series = {"depth=3/sidecar": SeriesRecord([first], "c=100 closed 5s", "rust", "host")}
    return copy.deepcopy(Baseline.new(TEST_ID, series, fingerprint=FINGERPRINT).to_dict())


ROUND = "series['depth=3/sidecar'].rounds[0]"


def write(tmp_path: Path, doc: Any) -> tuple[BaselineStore, Path]:
    store = BaselineStore(tmp_path / ".netperf")
    path = store.path_for(TEST_ID)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return store, path


def round_of(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["series"]["depth=3/sidecar"]["rounds"][0]


def test_a_document_as_written_is_valid_and_reads_back(tmp_path: Path) -> None:
    doc = good_doc()
    store, _ = write(tmp_path, doc)
    loaded = store.load(TEST_ID)
    assert loaded is not None and loaded.to_dict()["series"] == doc["series"]


# ------------------------------------------------------------------ named problems
def _set(doc: dict[str, Any], where: str, value: Any) -> None:
    """``where``: ``round.latency.count``-style dotted path; ``round`` is the one round."""
    parts = where.split(".")
    target: Any = round_of(doc) if parts[0] == "round" else doc
    for part in parts[1:-1] if parts[0] == "round" else parts[:-1]:
        target = target[int(part)] if isinstance(target, list) else target[part]
    last = parts[-1]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value


@pytest.mark.parametrize(
    ("where", "value", "problem"),
    [
        ("round.achieved_rps", "fast", f"{ROUND}.achieved_rps: expected a number, got 'fast' (string)"),
        ("round.achieved_rps", None, f"{ROUND}.achieved_rps: expected a number, got null"),
        ("round.achieved_rps", True, f"{ROUND}.achieved_rps: expected a number, got True (boolean)"),
        ("round.requests", 1.5, f"{ROUND}.requests: expected an integer, got 1.5 (number)"),
        ("round.latency.count", "500", f"{ROUND}.latency.count: expected an integer, got '500' (string)"),
        ("round.latency.p99_ns", [1], f"{ROUND}.latency.p99_ns: expected a number, got a list"),
        ("round.latency.histogram", "HISTnot-a-histogram", f"{ROUND}.latency.histogram: not a base64 HdrHistogram"),
        ("round.latency", "fast", f"{ROUND}.latency: expected an object (LatencySummary), got 'fast' (string)"),
        (
            "round.service_time",
            3,
            f"{ROUND}.service_time: expected an object (LatencySummary) or null, got 3 (integer)",
        ),
        ("round.status_codes.200", "many", f"{ROUND}.status_codes['200']: expected an integer, got 'many' (string)"),
        ("round.errors", [], f"{ROUND}.errors: expected an object, got a list"),
        ("round.intervals", {}, f"{ROUND}.intervals: expected a list, got an object"),
        ("round.intervals.0.rps", "x", f"{ROUND}.intervals[0].rps: expected a number, got 'x' (string)"),
        ("round.intervals.0.p99_ns", "x", f"{ROUND}.intervals[0].p99_ns: expected a number or null, got 'x'"),
        ("round.client.saturated", "no", f"{ROUND}.client.saturated: expected true or false, got 'no' (string)"),
        ("round.client.saturation_reasons", "cpu", f"{ROUND}.client.saturation_reasons: expected a list"),
        ("round.client.saturation_reasons.0", 7, f"{ROUND}.client.saturation_reasons[0]: expected a string"),
        ("round.driver", 1, f"{ROUND}.driver: expected a string, got 1 (integer)"),
        ("round.surprise", 1, f"{ROUND}: unknown field(s) surprise in RoundResult"),
        ("test_id", 5, "test_id: expected a string, got 5 (integer)"),
        ("test_id", "", "test_id: must not be empty"),
        ("created_at", None, "created_at: expected a string, got null"),
        ("git_commit", 12, "git_commit: expected a string, got 12 (integer)"),
        ("fingerprint", "x", "fingerprint: expected an object or null, got 'x' (string)"),
        ("fingerprint.image_digests", ["a"], "fingerprint.image_digests: expected an object or null, got a list"),
        ("fingerprint.image_digests.nginx", 1, "fingerprint.image_digests.nginx: expected a string, got 1"),
        ("fingerprint.logical_cores", "two", "fingerprint.logical_cores: expected an integer or null"),
        ("series", [], "series: expected a non-empty object (series name -> rounds), got a list"),
        ("series", {}, "series: expected a non-empty object (series name -> rounds), got an object"),
        ("series.depth=3/sidecar", "x", "series['depth=3/sidecar']: expected an object, got 'x' (string)"),
        ("series.depth=3/sidecar.rounds", [], "series['depth=3/sidecar'].rounds: expected a non-empty list"),
        ("series.depth=3/sidecar.load_shape", 5, "series['depth=3/sidecar'].load_shape: expected a string"),
    ],
)
def test_a_wrong_value_is_named_with_file_and_field(tmp_path: Path, where: str, value: Any, problem: str) -> None:
    doc = good_doc()
    if where.startswith("series.depth=3/sidecar"):
        body = doc["series"]["depth=3/sidecar"]
        rest = where[len("series.depth=3/sidecar") :]
        if rest:
            body[rest.lstrip(".")] = value
        else:
            doc["series"]["depth=3/sidecar"] = value
    else:
        _set(doc, where, value)
    store, path = write(tmp_path, doc)
    with pytest.raises(BaselineError) as info:
        store.load(TEST_ID)
    assert str(info.value).startswith(f"{path}: {problem}")


def test_a_missing_round_field_is_named(tmp_path: Path) -> None:
    doc = good_doc()
    del round_of(doc)["latency"]["p50_ns"]
    store, path = write(tmp_path, doc)
    with pytest.raises(BaselineError) as info:
        store.load(TEST_ID)
    assert str(info.value) == f"{path}: {ROUND}.latency: missing field p50_ns of LatencySummary"


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    store, path = write(tmp_path, {})
    path.write_bytes(b'{"test_id": "\xff\xfe"}')
    with pytest.raises(BaselineError, match=r"\.json: corrupt file: not UTF-8 text"):
        store.load(TEST_ID)


# ------------------------------------------------------------------ any malformed file
def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every value in a JSON document, containers included."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(doc)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


REPLACEMENTS = ["fast", None, -1, 2.5, True, [], {}, float("nan")]


def test_any_wrong_value_anywhere_is_a_baseline_error_or_a_usable_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every value of a valid file, replaced by each of REPLACEMENTS: reading either
    raises BaselineError naming the file, or gives a baseline whose every metric can be
    computed; and `netperf baseline show/diff` never raise (exit 0 or 1)."""
    doc = good_doc()
    paths = list(_paths(doc))
    assert len(paths) > 80
    store = BaselineStore(tmp_path / ".netperf")
    store.pending_directory.mkdir(parents=True)
    stored, pending = store.path_for(TEST_ID), store.pending_path_for(TEST_ID)
    checked = 0
    for path in paths:
        for value in REPLACEMENTS:
            text = json.dumps(_replaced(doc, path, value))
            stored.write_text(text)  # the same file as stored baseline and as last run: both sides of a diff
            pending.write_text(text)
            try:
                loaded = store.load(TEST_ID)
            except BaselineError as exc:
                problem = str(exc)
                assert problem.startswith(f"{stored}: "), (path, value, problem)
            else:
                assert loaded is not None
                for record in loaded.series.values():
                    for r in record.rounds:
                        for name in metrics.stored_names():  # (p75 and p95 decode the histogram: slow)
                            assert isinstance(metrics.metric_value(r, name), (float, int)), (path, value, name)
            for command in (cli_baseline.show, cli_baseline.diff):
                assert command(store, None, out=lambda _line: None) in (0, 1), (path, value)
            checked += 1
    capsys.readouterr()
    assert checked == len(paths) * len(REPLACEMENTS)


# ------------------------------------------------------------------ the CLI
@pytest.mark.parametrize("command", ["show", "diff"])
def test_cli_prints_a_wrong_type_and_exits_1_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    doc = good_doc()
    round_of(doc)["achieved_rps"] = "fast"
    store = BaselineStore(tmp_path / ".netperf")
    good = good_doc()
    good["test_id"] = "tests/other.py::test_ok"
    for target in (store.directory, store.pending_directory):
        target.mkdir(parents=True, exist_ok=True)
        (target / "bad.json").write_text(json.dumps(doc))
        (target / "good.json").write_text(json.dumps(good))
    code = main(["baseline", command, "--dir", str(store.directory)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "tests/other.py::test_ok" in out  # the readable file is still shown
    bad = (store.directory if command == "show" else store.pending_directory) / "bad.json"
    assert f"netperf: {bad}: {ROUND}.achieved_rps: expected a number, got 'fast' (string)" in err
    assert "Traceback" not in out + err
