"""The Rust driver's JSON document (``driver/schema.json``, schema_version 1) as a :class:`RoundResult`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_netperf.results.model import ClientHealth, Interval, LatencySummary, RoundResult, TransportStats


def round_from_driver_json(doc: Mapping[str, Any]) -> RoundResult:
    """Map the Rust driver's JSON document (schema_version 1) onto the model."""
    version = doc.get("schema_version")
    if version != 1:
        raise ValueError(f"unsupported driver schema_version {version!r} (expected 1)")
    cfg = doc["config"]
    summ = doc["summary"]
    cli = doc["client"]
    latency = LatencySummary.from_json(doc["latency_ns"])
    assert latency is not None
    transport = None
    if cfg.get("protocol") == "tcp-rr":
        transport = TransportStats(
            protocol="tcp-rr",
            payload_bytes=cfg.get("payload_bytes"),
            streams=int(cfg.get("connections") or 1),
        )
    return RoundResult(
        driver="rust",
        target=cfg["url"],
        mode=cfg["mode"],
        duration_s=float(summ["duration_s"]),
        requested_rps=summ.get("requested_rps"),
        achieved_rps=float(summ["achieved_rps"]),
        requests=int(summ["requests"]),
        ok=int(summ["ok"]),
        non_2xx=int(summ["non_2xx"]),
        status_codes={str(k): int(v) for k, v in summ.get("status_codes", {}).items()},
        errors={k: int(v) for k, v in summ.get("errors", {}).items() if int(v)},
        sockets_opened=int(summ["sockets_opened"]),
        reconnects=int(summ.get("reconnects", 0)),
        bytes_sent=int(summ.get("bytes_sent", 0)),
        bytes_received=int(summ.get("bytes_received", 0)),
        latency=latency,
        service_time=LatencySummary.from_json(doc.get("service_time_ns")),
        schedule_lag=LatencySummary.from_json(doc.get("schedule_lag_ns")),
        connect_time=LatencySummary.from_json(doc.get("connect_time_ns")),
        intervals=[
            Interval(
                start_s=float(i["start_s"]),
                requests=int(i["requests"]),
                ok=int(i["ok"]),
                errors=int(i["errors"]),
                rps=float(i["rps"]),
                p50_ns=i.get("p50_ns"),
                p99_ns=i.get("p99_ns"),
            )
            for i in doc.get("intervals", [])
        ],
        client=ClientHealth(
            cpu_user_s=float(cli.get("cpu_user_s", 0.0)),
            cpu_sys_s=float(cli.get("cpu_sys_s", 0.0)),
            cpu_util=float(cli.get("cpu_util", 0.0)),
            threads=int(cli.get("threads", 1)),
            schedule_lag_p99_ns=cli.get("schedule_lag_p99_ns"),
            achieved_ratio=cli.get("achieved_ratio"),
            saturated=bool(cli.get("saturated", False)),
            cpu_bound=bool(cli.get("cpu_bound", True)),
            saturation_reasons=list(cli.get("saturation_reasons", [])),
            saturation_kinds=list(cli.get("saturation_kinds", [])),
        ),
        connections=cfg.get("connections"),
        driver_version=str(doc.get("tool", {}).get("version", "")),
        config=dict(cfg),
        censored=int(summ.get("censored", 0)),
        completed_total=None if summ.get("completed_total") is None else int(summ["completed_total"]),
        transport=transport,
    )
