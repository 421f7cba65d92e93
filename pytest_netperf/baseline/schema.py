"""The schema of a baseline document (``format_version`` 1), checked before a file is used.

A baseline is read back into :class:`RoundResult` objects whose numbers feed the
statistics, the CLI and the plots; a value of the wrong type there (``"achieved_rps":
"fast"``) would surface much later as a raw ``TypeError`` or ``ValueError`` naming
neither the file nor the field. :func:`validate` checks the whole document first and
raises :class:`BaselineError` naming the file and the field path, e.g.
``.netperf/x.json: series.candidate.rounds[0].achieved_rps: expected a number, got 'fast' (string)``.

The checks are explicit code, no JSON Schema library: the top level is spelled out
here, and a round is checked against the type hints of the result dataclasses
(:class:`RoundResult`, :class:`LatencySummary`, :class:`ClientHealth`, :class:`Interval`),
so the schema follows the model when a field is added; latency histograms are decoded.
Unknown fields in a round are errors (the model could not hold them); ``values`` and
``metric_units`` are derived and not read.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from pathlib import Path
from typing import Any, Union

from pytest_netperf.errors import BaselineError
from pytest_netperf.results.model import LatencySummary, RoundResult

#: The format version this plugin writes and reads.
FORMAT_VERSION = 1
#: A series' counted costs; files written before 0.2 keep them under ``traced``, read as well.
COUNTED_KEY = "counted"
LEGACY_COUNTED_KEY = "traced"


def counted_section(body: dict[str, Any]) -> tuple[str, Any]:
    """(key, value) of a series' counted costs: ``counted``, else the legacy ``traced``."""
    key = COUNTED_KEY if body.get(COUNTED_KEY) is not None else LEGACY_COUNTED_KEY
    return key, body.get(key)


#: Top-level key of pending results whose run FAILed or was INVALID: why they are nobody's baseline.
NOT_A_BASELINE_KEY = "not_a_baseline"
#: Top-level key of results whose run had ACCEPTED budgets: which, by whom and why (the
#: baseline written from them says it came from an accepted regression).
ACCEPTED_REGRESSION_KEY = "accepted_regression"
#: Top-level keys every document has.
REQUIRED_KEYS = ("format_version", "test_id", "created_at", "fingerprint", "series")
#: Fingerprint keys with a known type (others are kept as they are).
_FINGERPRINT_TEXT = (
    "cpu_model",
    "kernel",
    "docker_version",
    "python",
    "plugin_version",
    "driver_version",
    "machine_class",
)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Invalid(Exception):
    """One problem at one field path (turned into a BaselineError naming the file)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path


def validate(doc: Any, source: Path) -> None:
    """Raise BaselineError naming ``source`` and the field path unless ``doc`` is a valid
    baseline document of this plugin's format version."""
    try:
        _check_document(doc)
    except (_Invalid, _VersionProblem) as exc:
        raise BaselineError(f"{source}: {exc}") from None


class _VersionProblem(Exception):
    """The document is of another format version (its other keys are not checked)."""


def _check_document(doc: Any) -> None:
    if not isinstance(doc, dict):
        raise _Invalid("", f"expected a JSON object, got {_describe(doc)}")
    if "format_version" in doc:
        _check_version(doc["format_version"])
    missing = [key for key in REQUIRED_KEYS if key not in doc]
    if missing:
        raise _Invalid("", f"missing key(s) {', '.join(missing)}")
    _expect_text(doc["test_id"], "test_id", empty=False)
    _expect_text(doc["created_at"], "created_at")
    for key in ("git_commit", "plugin_version", "driver_version", NOT_A_BASELINE_KEY, ACCEPTED_REGRESSION_KEY):
        if doc.get(key) is not None:
            _expect_text(doc[key], key)
    _check_fingerprint(doc["fingerprint"])
    series = doc["series"]
    if not isinstance(series, dict) or not series:
        raise _Invalid("series", f"expected a non-empty object (series name -> rounds), got {_describe(series)}")
    for name, body in series.items():
        _check_series(body, f"series{_key(name)}")


def _check_version(version: Any) -> None:
    if isinstance(version, int) and not isinstance(version, bool):
        if version == FORMAT_VERSION:
            return
        if version > FORMAT_VERSION:
            raise _VersionProblem(
                f"format_version {version} is newer than this pytest-netperf reads ({FORMAT_VERSION}): "
                "the file was written by a newer pytest-netperf; upgrade pytest-netperf, or delete the file "
                "to record a new baseline"
            )
    raise _VersionProblem(
        f"unknown format_version {version!r} (this pytest-netperf reads {FORMAT_VERSION}); "
        "delete the file to record a new baseline"
    )


def _check_fingerprint(value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise _Invalid("fingerprint", f"expected an object or null, got {_describe(value)}")
    for key in _FINGERPRINT_TEXT:
        if value.get(key) is not None:
            _expect_text(value[key], f"fingerprint.{key}")
    cores = value.get("logical_cores")
    if cores is not None and not _is_int(cores):
        raise _Invalid("fingerprint.logical_cores", f"expected an integer or null, got {_describe(cores)}")
    digests = value.get("image_digests")
    if digests is not None:
        if not isinstance(digests, dict):
            raise _Invalid("fingerprint.image_digests", f"expected an object or null, got {_describe(digests)}")
        for image, digest in digests.items():
            if digest is not None:
                _expect_text(digest, f"fingerprint.image_digests{_key(image)}")
    if value.get("calibration") is not None:
        _check_calibration(value["calibration"], "fingerprint.calibration")


def _check_calibration(value: Any, path: str) -> None:
    """The machine's speed calibration (older files have none: their machine's speed is unknown)."""
    if not isinstance(value, dict):
        raise _Invalid(path, f"expected an object or null, got {_describe(value)}")
    ms: Any = value.get("ms")
    if not _is_number(ms) or not math.isfinite(ms) or ms <= 0:
        raise _Invalid(f"{path}.ms", f"expected a positive number, got {_describe(ms)}")
    chunks = value.get("chunks_ms")
    if chunks is not None:
        if not isinstance(chunks, list):
            raise _Invalid(f"{path}.chunks_ms", f"expected a list of numbers, got {_describe(chunks)}")
        for index, chunk in enumerate(chunks):
            if not _is_number(chunk):
                raise _Invalid(f"{path}.chunks_ms[{index}]", f"expected a number, got {_describe(chunk)}")
    for key in ("wall_ms", "cpu_ms", "quota_cpus"):
        number: Any = value.get(key)
        if number is not None and (not _is_number(number) or not math.isfinite(number) or number <= 0):
            raise _Invalid(f"{path}.{key}", f"expected a positive number or null, got {_describe(number)}")
    for key in ("method", "workload", "library"):
        if value.get(key) is not None:
            _expect_text(value[key], f"{path}.{key}")


def _check_series(body: Any, path: str) -> None:
    if not isinstance(body, dict):
        raise _Invalid(path, f"expected an object, got {_describe(body)}")
    for key in ("driver", "where", "load_shape"):
        if body.get(key) is not None:
            _expect_text(body[key], f"{path}.{key}")
    if "rounds" not in body:
        raise _Invalid(path, "missing key rounds")
    rounds = body["rounds"]
    if not isinstance(rounds, list) or not rounds:
        raise _Invalid(f"{path}.rounds", f"expected a non-empty list of rounds, got {_describe(rounds)}")
    for index, round_doc in enumerate(rounds):
        _check_value(round_doc, RoundResult, f"{path}.rounds[{index}]")
    key, counted = counted_section(body)
    if counted is not None:
        _check_counted(counted, f"{path}.{key}")


def _check_counted(counted: Any, path: str) -> None:
    """tool -> node -> {node, tool, per_request: [numbers], by_name, requests, seconds}."""
    if not isinstance(counted, dict):
        raise _Invalid(path, f"expected an object (tool -> node -> cost), got {_describe(counted)}")
    for tool, nodes in counted.items():
        if not isinstance(nodes, dict):
            raise _Invalid(f"{path}{_key(tool)}", f"expected an object (node -> cost), got {_describe(nodes)}")
        for node, cost in nodes.items():
            where = f"{path}{_key(tool)}{_key(node)}"
            if not isinstance(cost, dict):
                raise _Invalid(where, f"expected an object, got {_describe(cost)}")
            for key in ("node", "tool"):
                _expect_text(cost.get(key), f"{where}.{key}")
            values = cost.get("per_request")
            if not isinstance(values, list) or not values or not all(_is_number(v) for v in values):
                raise _Invalid(f"{where}.per_request", f"expected a non-empty list of numbers, got {_describe(values)}")
            names = cost.get("by_name", {})
            if not isinstance(names, dict) or not all(_is_number(v) for v in names.values()):
                raise _Invalid(f"{where}.by_name", f"expected an object of numbers, got {_describe(names)}")
            counts = cost.get("requests", [0, 0])
            if not isinstance(counts, list) or len(counts) != 2 or not all(_is_number(v) for v in counts):
                raise _Invalid(f"{where}.requests", f"expected two request counts, got {_describe(counts)}")


# ---------------------------------------------------------------------- the round model
def _check_value(value: Any, hint: Any, path: str) -> None:
    """Check ``value`` against a type hint of the result model."""
    if hint is Any:
        return
    origin = typing.get_origin(hint)
    if origin is Union or (hasattr(types, "UnionType") and origin is getattr(types, "UnionType", None)):
        options = typing.get_args(hint)
        if value is None:
            if type(None) in options:
                return
            raise _Invalid(path, f"expected {_expected(hint)}, got null")
        real = [o for o in options if o is not type(None)]
        problems = []
        for option in real:
            try:
                _check_value(value, option, path)
                return
            except _Invalid as exc:
                problems.append(exc)
        inner = [p for p in problems if p.path != path]
        if len(real) == 1 and inner:
            raise inner[0]  # the value has the right shape; a field inside it is wrong
        raise _Invalid(path, f"expected {_expected(hint)}, got {_describe(value)}")
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        _check_dataclass(value, hint, path)
        return
    if origin is list:
        if not isinstance(value, list):
            raise _Invalid(path, f"expected a list, got {_describe(value)}")
        (item,) = typing.get_args(hint) or (Any,)
        for index, element in enumerate(value):
            _check_value(element, item, f"{path}[{index}]")
        return
    if origin is dict:
        if not isinstance(value, dict):
            raise _Invalid(path, f"expected an object, got {_describe(value)}")
        args = typing.get_args(hint)
        item = args[1] if len(args) == 2 else Any
        for key, element in value.items():
            _check_value(element, item, f"{path}{_key(key)}")
        return
    if hint is bool:
        if not isinstance(value, bool):
            raise _Invalid(path, f"expected true or false, got {_describe(value)}")
    elif hint is int:
        if not _is_int(value):
            raise _Invalid(path, f"expected an integer, got {_describe(value)}")
    elif hint is float:
        if not _is_number(value):
            raise _Invalid(path, f"expected a number, got {_describe(value)}")
    elif hint is str:
        _expect_text(value, path)
    # Any other hint: nothing to check here; RoundResult.from_dict is still guarded.


def _check_dataclass(value: Any, cls: type, path: str) -> None:
    if not isinstance(value, dict):
        raise _Invalid(path, f"expected an object ({cls.__name__}), got {_describe(value)}")
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(str(k) for k in value if k not in fields)
    if unknown:
        raise _Invalid(path, f"unknown field(s) {', '.join(unknown)} in {cls.__name__}")
    for name, f in fields.items():
        if name not in value:
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if required:
                raise _Invalid(path, f"missing field {name} of {cls.__name__}")
            continue
        _check_value(value[name], hints[name], f"{path}.{name}")
    if cls is LatencySummary and isinstance(value.get("histogram"), str):
        _check_histogram(value["histogram"], f"{path}.histogram")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _check_histogram(text: str, path: str) -> None:
    from pytest_netperf.results.histogram import decode_histogram

    try:
        decode_histogram(text)
    except (ValueError, UnicodeEncodeError) as exc:
        raise _Invalid(path, f"not a base64 HdrHistogram ({exc})") from None


# ---------------------------------------------------------------------- helpers
def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _expect_text(value: Any, path: str, empty: bool = True) -> None:
    if not isinstance(value, str):
        raise _Invalid(path, f"expected a string, got {_describe(value)}")
    if not empty and not value:
        raise _Invalid(path, "must not be empty")


def _expected(hint: Any) -> str:
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    parts = [
        names.get(o) or (f"an object ({getattr(o, '__name__', o)})" if dataclasses.is_dataclass(o) else str(o))
        for o in typing.get_args(hint)
        if o is not type(None)
    ]
    nullable = type(None) in typing.get_args(hint)
    return " or ".join(parts + (["null"] if nullable else []))


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object"}
    name = kind.get(type(value), type(value).__name__)
    if isinstance(value, (list, dict)):
        return f"a {name}" if name == "list" else f"an {name}"
    text = repr(value)
    return f"{text[:60]}…" if len(text) > 60 else f"{text} ({name})"


def _key(name: Any) -> str:
    """``.candidate`` for identifier-like keys, ``['depth=3/sidecar']`` otherwise."""
    text = str(name)
    return f".{text}" if _IDENTIFIER.match(text) else f"[{text!r}]"
