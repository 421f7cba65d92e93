"""The JSON document the listener writes at the end of a round (schema ``netperf-locust/1``)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from pytest_netperf.drivers.locust import OUTPUT_SCHEMA
from pytest_netperf.drivers.locust.in_locust.window_recorder import merge_payloads


def output_document(
    *,
    role: str,
    window_s: float,
    rate: float,
    users: int,
    workers_expected: Iterable[str],
    parts: Iterable[Mapping[str, Any]],
    master_process: Mapping[str, Any] | None = None,
    locust_version: str = "",
) -> dict[str, Any]:
    """Merge the window parts (``{"window": payload, "process": report}`` per process that ran
    users, keyed by node id) into one document.  ``master_process`` is the master's own CPU
    report in distributed runs."""
    parts = list(parts)
    processes = ([dict(master_process)] if master_process is not None else []) + [dict(p["process"]) for p in parts]
    return {
        "schema": OUTPUT_SCHEMA,
        "locust_version": locust_version,
        "role": role,
        "window_s": float(window_s),
        "rate": float(rate),
        "users": int(users),
        "workers_expected": sorted(workers_expected),
        "workers_reported": sorted(str(p["process"]["node_id"]) for p in parts) if master_process is not None else [],
        "window": merge_payloads(p["window"] for p in parts),
        "processes": processes,
    }
