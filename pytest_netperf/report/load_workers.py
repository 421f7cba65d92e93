"""The ``load workers`` fact of a series: which Locust workers served its rounds, and how.

Pure: reads ``config["workers_served"]`` of each round (set by the Locust driver when a
master and workers measured) and summarises it per worker, so the report shows who sent
the load, and that every worker served every round.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

LOAD_WORKERS_FACT = "load workers"


def workers_fact(rounds: Iterable[Any]) -> str:
    """``172.18.0.3 (c1): 3/3 rounds, 1,480 req/round, 0 errors, CPU 21%; ...`` or ``""``."""
    rounds = list(rounds)
    per_worker: dict[str, list[dict[str, Any]]] = {}
    for result in rounds:
        config = getattr(result, "config", None) or {}
        for worker in config.get("workers_served") or []:
            per_worker.setdefault(str(worker["id"]), []).append(worker)
    if not per_worker:
        return ""
    parts = []
    for worker_id in sorted(per_worker, key=lambda key: str(per_worker[key][0].get("address") or key)):
        served = per_worker[worker_id]
        first = served[0]
        where = str(first.get("address") or worker_id)
        name = f"{where} ({first['host']})" if first.get("host") else where
        requests = statistics.median(int(w["requests"]) for w in served)
        errors = sum(int(w["errors"]) for w in served)
        cpu = statistics.median(float(w["cpu_share"]) for w in served)
        parts.append(
            f"{name}: {len(served)}/{len(rounds)} rounds, {requests:,.0f} req/round, {errors} errors, CPU {cpu:.0%}"
        )
    return "; ".join(parts)
