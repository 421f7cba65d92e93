"""The JSON report is strict JSON: non-finite numbers are ``null``, never NaN/Infinity."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from netperf_rounds import make_round

from pytest_netperf.budget.grammar import Budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.measure.model import Measurement, Series
from pytest_netperf.measure.outcomes import BudgetOutcome
from pytest_netperf.report.json_report import strict_jsonable, write_json
from pytest_netperf.report.rows import ReportRow, row_for_outcome
from pytest_netperf.report.session_report import SessionReport
from pytest_netperf.verdict import stats

TEST = "tests/test_gw.py::test_overhead"


def strict_loads(text: str) -> Any:
    """json.loads that rejects NaN, Infinity and -Infinity, like strict parsers do."""

    def reject(constant: str) -> None:
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=reject)


def rows() -> list[ReportRow]:
    return [
        ReportRow(
            TEST,
            "sockets <= 32",
            "absolute",
            "100",
            "",
            "FAIL",
            3,
            raw={"estimate": 100.0, "threshold": 32.0, "mde": math.nan, "p_value": math.nan, "exact": True},
        ),
        ReportRow(
            TEST,
            "p99 <= 1.2x baseline",
            "baseline",
            "1.3x",
            "[1.1x, inf]",
            "INCONCLUSIVE",
            2,
            raw={"estimate": 1.3, "ci_low": -math.inf, "ci_high": math.inf, "threshold": math.inf, "mde": math.inf},
        ),
    ]


def results() -> dict[str, Any]:
    saturated = make_round()
    saturated.client.achieved_ratio = math.nan
    saturated.latency.stdev_ns = math.inf
    saturated.config = {"rate": np.float64("nan"), "connections": np.int64(4), "weights": np.array([1.0, np.inf])}
    return {TEST: [{"key": "default", "series": {"candidate": {"rounds": [saturated], "extra": (math.nan, 1)}}}]}


def test_the_report_file_is_strict_json_with_null_for_non_finite_numbers(tmp_path: Path) -> None:
    path = write_json(rows(), results(), tmp_path / "netperf.json")
    text = path.read_text()
    for constant in ("NaN", "Infinity"):
        assert constant not in text
    doc = strict_loads(text)
    first, second = (r["raw"] for r in doc["rows"])
    assert first["mde"] is None and first["p_value"] is None and first["threshold"] == 32.0
    assert second["threshold"] is None and second["mde"] is None
    assert second["ci_low"] is None and second["ci_high"] is None and second["estimate"] == 1.3
    (round_doc,) = doc["results"][TEST][0]["series"]["candidate"]["rounds"]
    assert round_doc["client"]["achieved_ratio"] is None
    assert round_doc["latency"]["stdev_ns"] is None
    assert round_doc["latency"]["p50_ns"] > 0
    assert round_doc["config"] == {"rate": None, "connections": 4, "weights": [1.0, None]}
    assert doc["results"][TEST][0]["series"]["candidate"]["extra"] == [None, 1]


def test_a_real_verdict_with_an_undefined_mde_is_written_as_null(tmp_path: Path) -> None:
    """A row built from a real exact verdict (its mde is NaN) through the session report."""
    budget = Budget.parse("sockets <= 32")
    verdict = stats.evaluate(budget, [100.0, 100.0, 100.0])
    assert math.isnan(verdict.mde)
    outcome = BudgetOutcome(TEST, "default", budget, verdict.status, verdict, [], "absolute")
    candidate = Series(
        label="candidate",
        url="http://10.0.0.2:80/",
        where="host",
        driver="rust",
        shape=LoadShape(connections=4),
        rounds=[make_round()] * 3,
        facts={"driver cores": "0"},
    )
    measurement = Measurement(key="default", candidate=candidate)
    gate = SimpleNamespace(test_id=TEST, measurement=lambda key: measurement)
    report = SessionReport(json_path=tmp_path / "out.json")
    report.add([row_for_outcome(outcome, gate).to_dict()], {TEST: []})  # type: ignore[arg-type]
    assert report.write_reports() == [tmp_path / "out.json"]
    (row,) = strict_loads((tmp_path / "out.json").read_text())["rows"]
    assert row["raw"]["mde"] is None and row["verdict"] == "FAIL"
    assert row["facts"] == {
        "candidate": {"driver cores": "0", "request": "GET http://10.0.0.2:80/; c=4 closed 5s (+1s warmup)"}
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (math.nan, None),
        (-math.inf, None),
        (np.float32("inf"), None),
        (np.float64(2.5), 2.5),
        (np.int64(7), 7),
        (True, True),
        ({"a": [1.0, math.nan, {"b": math.inf}]}, {"a": [1.0, None, {"b": None}]}),
    ],
)
def test_strict_jsonable(value: Any, expected: Any) -> None:
    assert strict_jsonable(value) == expected
