"""Turn the listener's JSON document into the driver-neutral :class:`RoundResult`.

Pure: no processes, no Locust import; unit-tested on synthetic documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional

from pytest_netperf import defaults
from pytest_netperf.drivers.base import sent_something
from pytest_netperf.drivers.locust import OUTPUT_SCHEMA
from pytest_netperf.errors import DriverError
from pytest_netperf.results.histogram import decode_histogram, percentile_ns, summarize
from pytest_netperf.results.model import (
    TASK_EXCEPTION_PREFIX,
    ClientHealth,
    Interval,
    LatencySummary,
    RoundResult,
)

#: A Locust process using more than this share of one core during the window is saturated
#: (Locust runs each process on one core; the same 90% Locust itself warns at).
CPU_SATURATION_SHARE = 0.90
#: Paced rounds must reach this share of the requested rate.
ACHIEVED_RATE_FLOOR = 0.99


@dataclass(frozen=True)
class RunContext:
    """What the driver asked for, recorded in the result's ``config``."""

    url: str
    users: int
    workers: int
    rate: Optional[float]
    arrival: str
    warmup_s: float
    duration_s: float
    interval_s: float
    timeout_s: float
    locustfile: Optional[str]
    user_class: Optional[str]
    request: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: A process whose event-loop lag p99 exceeds this is saturated: a late wake-up delays
    #: reading responses (the Rust driver's default --max-lag for schedule lag is also 1 ms).
    max_loop_lag_ns: float = defaults.LOCUST_MAX_LOOP_LAG_MS * 1e6


def summarize_histogram(encoded: str) -> LatencySummary:
    """Count, min/mean/max/stdev and P50/P90/P99/P99.9 of an encoded histogram (ns),
    percentiles defined as the Rust driver defines them."""
    summary = LatencySummary.from_json(summarize(decode_histogram(encoded)))
    assert summary is not None
    return summary


def _intervals(window: Mapping[str, Any]) -> list[Interval]:
    """Per-interval counters; a trailing sliver shorter than half an interval is left out
    of this view (its requests are in the totals)."""
    result = []
    half = float(window["interval_s"]) / 2
    for item in window["intervals"]:
        length = float(item["length_s"])
        if length < half:
            continue
        histogram = decode_histogram(item["histogram"])
        p50, p99 = (None, None)
        if histogram.get_total_count() > 0:
            p50, p99 = float(percentile_ns(histogram, 50.0)), float(percentile_ns(histogram, 99.0))
        result.append(
            Interval(
                start_s=float(item["start_s"]),
                requests=int(item["requests"]),
                ok=int(item["ok"]),
                errors=int(item["errors"]),
                rps=int(item["requests"]) / length,
                p50_ns=p50,
                p99_ns=p99,
            )
        )
    return result


def _process_label(process: Mapping[str, Any]) -> str:
    return f"locust {process['role']} pid {process['pid']} on {process['host']}"


def expected_iterations(window: Mapping[str, Any], rate: float, duration_s: float) -> float:
    """Iterations a paced window should hold: what its schedules intended in it, else
    ``rate * duration`` (a listener that does not count them).  With Poisson gaps the
    intended count varies by about its square root around ``rate * duration``: at 100/s
    over 1 s, 94 or fewer one time in three."""
    intended = window.get("intended")
    return float(intended) if intended is not None else rate * duration_s


def rate_floor(expected_iterations: float, users: int) -> float:
    """Fewest window iterations of a paced run that still kept up with its rate.

    Each user is paced on its own clock, so the window's edges can cut one iteration of
    every user; at 100/s over 1 s with 4 users that is 4%, more than the 1% allowance.
    """
    return ACHIEVED_RATE_FLOOR * expected_iterations - max(users, 0)


def client_health(document: Mapping[str, Any], context: RunContext, duration_s: float) -> ClientHealth:
    """CPU use of every Locust process, and whether any of them (or the pacing) saturated."""
    processes = list(document["processes"])
    reasons: list[str] = []
    kinds: list[str] = []  # measure/validity.py Shortfall values, one a reason
    for process in processes:
        busy = float(process["cpu_user_s"]) + float(process["cpu_sys_s"])
        wall = float(process["wall_s"]) or duration_s
        share = busy / wall if wall > 0 else 0.0
        if share > CPU_SATURATION_SHARE:
            reasons.append(f"{_process_label(process)} used {share:.1%} of a core during the window (> 90%)")
            kinds.append("client_cpu")
        warned = process.get("locust_cpu_warning_percent")
        if warned is not None:
            reasons.append(f"Locust reported CPU usage above 90% ({float(warned):.0f}%) in {_process_label(process)}")
            kinds.append("client_cpu")
        lag = process.get("loop_lag_p99_ns")
        if lag is not None and float(lag) > context.max_loop_lag_ns:
            reasons.append(
                f"event loop lag p99 {float(lag) / 1e3:.0f} us in {_process_label(process)} above bound "
                f"{context.max_loop_lag_ns / 1e3:.0f} us (responses wait for the client)"
            )
            kinds.append("schedule")
    achieved_ratio = None
    if context.rate:
        iterations = int(document["window"]["iterations"])
        expected = expected_iterations(document["window"], context.rate, duration_s)
        achieved_ratio = iterations / expected if expected > 0 else 0.0
        if iterations < rate_floor(expected, context.users):
            reasons.append(
                f"achieved {achieved_ratio:.1%} of requested rate "
                f"(< 99%, less one paced iteration per user at the window's edge)"
            )
            kinds.append("send_rate")
    raised = _task_exceptions(document["window"])
    if reasons and raised:
        reasons.append(
            f"the locustfile's tasks raised {raised} in the window (Locust logs each traceback, which costs "
            "the client CPU): fix the task before blaming the client"
        )
        kinds.append(kinds[-1])
    cpu_user = sum(float(process["cpu_user_s"]) for process in processes)
    cpu_sys = sum(float(process["cpu_sys_s"]) for process in processes)
    threads = max(len(processes), 1)
    return ClientHealth(
        cpu_user_s=cpu_user,
        cpu_sys_s=cpu_sys,
        cpu_util=(cpu_user + cpu_sys) / (duration_s * threads) if duration_s > 0 else 0.0,
        threads=threads,
        schedule_lag_p99_ns=None,
        achieved_ratio=achieved_ratio,
        saturated=bool(reasons),
        saturation_reasons=reasons,
        saturation_kinds=kinds,
    )


def _task_exceptions(window: Mapping[str, Any]) -> str:
    """``task exception: ValueError x20`` for the window's task exceptions, "" when none."""
    counts = {k: int(v) for k, v in window["errors"].items() if k.startswith(TASK_EXCEPTION_PREFIX) and int(v)}
    return ", ".join(f"{kind} x{count}" for kind, count in sorted(counts.items()))


def _check_document(document: Mapping[str, Any]) -> None:
    """DriverError (the gate makes the round INVALID) unless every expected worker served it."""
    if document.get("schema") != OUTPUT_SCHEMA:
        raise DriverError(f"Locust listener wrote schema {document.get('schema')!r}, expected {OUTPUT_SCHEMA!r}")
    reasons = dict(document.get("workers_missing") or {})
    missing = sorted(set(document["workers_expected"]) - set(document["workers_reported"]))
    if missing:
        named = ", ".join(f"{worker} ({reasons[worker]})" if worker in reasons else worker for worker in missing)
        raise DriverError(
            f"{len(missing)} of {len(document['workers_expected'])} Locust workers sent no measurement "
            f"(missing: {named}); the round would be a silently smaller load, so it is invalid"
        )
    if not document["workers_expected"]:
        return
    idle = [
        f"{p['node_id']} on {p['host']}"
        for p in document["processes"]
        if p["role"] == "worker" and int(p.get("requests", 0)) == 0 and int(p.get("errors", 0)) == 0
    ]
    if idle:
        raise DriverError(
            f"Locust worker(s) {', '.join(idle)} completed no request in the window (no users or stalled); "
            "the round would be a silently smaller load, so it is invalid"
        )


def worker_records(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Who served the round: id, host, address, requests, errors and CPU of each worker."""
    records = []
    for process in document["processes"]:
        if process["role"] == "master":
            continue
        busy = float(process["cpu_user_s"]) + float(process["cpu_sys_s"])
        wall = float(process["wall_s"])
        records.append(
            {
                "id": str(process["node_id"]),
                "host": str(process["host"]),
                "address": str(process.get("address", "")),
                "requests": int(process.get("requests", 0)),
                "errors": int(process.get("errors", 0)),
                "cpu_s": busy,
                "cpu_share": busy / wall if wall > 0 else 0.0,
            }
        )
    return records


def build_round_result(document: Mapping[str, Any], context: RunContext, driver_version: str) -> RoundResult:
    """Map a listener document (schema ``netperf-locust/1``) onto a :class:`RoundResult`;
    :class:`DriverError` when the document is incomplete or the round sent nothing (every task
    raised, say: named by its exceptions, before any verdict on the client's health)."""
    _check_document(document)
    window = document["window"]
    duration = float(document["window_s"])
    latency = summarize_histogram(window["latency"])
    processes = list(document["processes"])
    sockets = sum(int(process["sockets_opened"]) for process in processes)
    requests = int(window["requests"])
    config = {
        "url": context.url,
        "mode": "open" if context.rate else "closed",
        "connections": context.users,
        "users": context.users,
        "workers": context.workers,
        "processes": len(processes),
        "rate": context.rate,
        "arrival": context.arrival,
        "duration_s": context.duration_s,
        "warmup_s": context.warmup_s,
        "timeout_s": context.timeout_s,
        "interval_s": context.interval_s,
        "locustfile": context.locustfile,
        "user_class": context.user_class,
        "locust_version": document.get("locust_version", ""),
        "hosts": sorted({str(process["host"]) for process in processes}),
        "requests_per_process": [int(p.get("requests", 0)) for p in processes if p["role"] != "master"],
        "loop_lag_p99_ns": [p.get("loop_lag_p99_ns") for p in processes if p["role"] != "master"],
        # the longest the loop was held: one stall of a starved client that a P99 over the
        # window's ~200 probes does not show (a 50 ms stall at an edge leaves 5 starts unsent)
        "loop_lag_max_ns": [p.get("loop_lag_max_ns") for p in processes if p["role"] != "master"],
        "workers_served": worker_records(document) if document["workers_expected"] else [],
        "notes": list(context.notes),
        **dict(context.request),
    }
    result = RoundResult(
        driver="locust",
        target=context.url,
        mode=config["mode"],
        duration_s=duration,
        requested_rps=context.rate,
        achieved_rps=requests / duration if duration > 0 else 0.0,
        requests=requests,
        ok=int(window["ok"]),
        non_2xx=int(window["non_2xx"]),
        status_codes={str(code): int(count) for code, count in window["status_codes"].items()},
        errors={kind: int(count) for kind, count in window["errors"].items() if int(count)},
        sockets_opened=sockets,
        reconnects=max(sockets - context.users, 0),
        bytes_sent=int(window.get("bytes_sent", 0)),
        bytes_received=int(window["bytes_received"]),
        latency=latency,
        service_time=replace(latency),  # Locust measures from the actual send: the same data
        schedule_lag=None,
        connect_time=None,
        intervals=_intervals(window),
        client=client_health(document, context, duration),
        connections=context.users,
        driver_version=driver_version,
        config=config,
    )
    return sent_something(result)
