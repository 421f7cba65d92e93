"""Locust vs the Rust driver on the same target, in one run (bounded: well under 2 minutes).

Target: the project's echo server (`netperf-driver echo`, one event-loop thread) on
127.0.0.1.  Measured, each driver feeding the same RoundResult model:

* max RPS, closed loop, 16 connections/users: Rust with one thread, Locust as one process
  and as a master with two workers;
* client CPU per request: the CPU seconds the driver itself reports for the measured
  window (for Locust: every process, master and workers included) over the requests;
* P50/P90 at a fixed rate (default 200 rps, 4 connections/users): Rust open loop (latency
  from the intended send time, and service time from the actual send) vs Locust paced
  users (from the actual send);
* with ``--workers 1,2,4``: max RPS and client CPU per request of a session master (the
  one the plugin keeps for a pytest session) with 1, 2 and 4 local workers, each as a
  ratio to the Rust row measured in the same run.

Usage:  python benchmarks/locust_vs_rust.py [--rate 200] [--duration 3] [--workers 1,2,4] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Optional

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust.driver import LocustDriver
from pytest_netperf.drivers.locust.session import LocustSession
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.results.model import LatencySummary, RoundResult

REPO = Path(__file__).resolve().parents[1]
TIME_BUDGET_S = 110.0


@dataclass
class Row:
    """One measured configuration."""

    label: str
    result: RoundResult
    latency: LatencySummary

    def cells(self) -> list[str]:
        r = self.result
        cpu = r.client.cpu_user_s + r.client.cpu_sys_s
        per_request_us = cpu / r.requests * 1e6 if r.requests else float("nan")
        reasons = r.client.saturation_reasons
        saturated = "no"
        if reasons:
            more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
            saturated = f"yes: {reasons[0]}{more}"
        return [
            self.label,
            f"{r.achieved_rps:,.0f}",
            f"{per_request_us:.1f}",
            f"{self.latency.p50_ns / 1e3:.0f}",
            f"{self.latency.p90_ns / 1e3:.0f}",
            str(sum(r.errors.values()) + r.non_2xx),
            saturated,
        ]


def find_driver_binary() -> str:
    """The netperf-driver binary: $NETPERF_DRIVER, the release build, or PATH."""
    for candidate in (
        os.environ.get("NETPERF_DRIVER", ""),
        str(REPO / "driver/target/release/netperf-driver"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("netperf-driver")
    if found is None:
        sys.exit("netperf-driver not found: run `cargo build --release` in driver/ or set NETPERF_DRIVER")
    return found


@contextlib.contextmanager
def echo_server(binary: str, threads: int) -> Iterator[str]:
    """Start the echo server on 127.0.0.1 and yield its base URL; always stop it."""
    server = subprocess.Popen(
        [binary, "echo", "--listen", "127.0.0.1:0", "--threads", str(threads)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = server.stdout.readline().strip() if server.stdout else ""
        if not line.startswith("listening on "):
            raise RuntimeError(f"echo server did not start: {line!r}")
        yield f"http://{line.split()[-1]}/"
    finally:
        server.terminate()
        server.wait(timeout=10)


def measure(binary: str, url: str, rate: float, duration_s: float, warmup_s: float) -> tuple[list[Row], list[Row]]:
    """Run every configuration once; returns (max-RPS rows, fixed-rate rows)."""
    closed = LoadShape(connections=16, duration_s=duration_s, warmup_s=warmup_s)
    paced = LoadShape(connections=4, rate=rate, duration_s=max(duration_s, 5.0), warmup_s=warmup_s)
    rust = RustDriver(binary)
    max_rows = []
    result = rust.run(url, replace(closed, threads=1))
    max_rows.append(Row("rust, 1 thread, c=16", result, result.latency))
    result = LocustDriver().run(url, closed)
    max_rows.append(Row("locust, 1 process, 16 users", result, result.latency))
    result = LocustDriver(workers=2).run(url, closed)
    max_rows.append(Row("locust, master + 2 workers, 16 users", result, result.latency))
    rate_rows = []
    result = rust.run(url, replace(paced, threads=1))
    rate_rows.append(Row(f"rust open loop {rate:g} rps, latency (intended send)", result, result.latency))
    assert result.service_time is not None
    rate_rows.append(Row(f"rust open loop {rate:g} rps, service time (actual send)", result, result.service_time))
    result = LocustDriver().run(url, paced)
    rate_rows.append(Row(f"locust paced {rate:g} rps, 4 users (actual send)", result, result.latency))
    return max_rows, rate_rows


def measure_workers(url: str, counts: list[int], duration_s: float, warmup_s: float) -> list[Row]:
    """Closed loop, 16 users, through a session master with each number of local workers."""
    rows = []
    for count in counts:
        driver = LocustDriver(workers=count)
        with LocustSession(driver.session_spec()) as session:
            driver.session = session
            shape = LoadShape(connections=max(16, count), duration_s=duration_s, warmup_s=warmup_s)
            result = driver.run(url, shape)
        label = f"locust session, master + {count} worker(s), {shape.connections} users"
        rows.append(Row(label, result, result.latency))
    return rows


def cpu_per_request_us(result: RoundResult) -> float:
    """Client CPU µs per request of a round."""
    cpu = result.client.cpu_user_s + result.client.cpu_sys_s
    return cpu / result.requests * 1e6 if result.requests else float("nan")


def ratio_table(rows: list[Row], rust: Row) -> str:
    """Each row's RPS and CPU per request as a ratio to the Rust row of the same run."""
    lines = [
        "| configuration | RPS | RPS vs rust | client CPU µs/request | CPU/request vs rust | workers (requests) |",
        "|---|---|---|---|---|---|",
    ]
    base_rps, base_cpu = rust.result.achieved_rps, cpu_per_request_us(rust.result)
    for row in [rust, *rows]:
        r = row.result
        served = ", ".join(str(w["requests"]) for w in r.config.get("workers_served", [])) or "-"
        lines.append(
            f"| {row.label} | {r.achieved_rps:,.0f} | {r.achieved_rps / base_rps:.3f}x | "
            f"{cpu_per_request_us(r):.1f} | {cpu_per_request_us(r) / base_cpu:.1f}x | {served} |"
        )
    return "\n".join(lines)


def markdown_table(rows: list[Row]) -> str:
    """A GitHub-flavoured Markdown table of the rows."""
    header = [
        "configuration",
        "RPS",
        "client CPU µs/request",
        "P50 µs",
        "P90 µs",
        "errors",
        "client saturated",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0, help="fixed rate for the P50/P90 comparison")
    parser.add_argument("--duration", type=float, default=3.0, help="measured seconds per round")
    parser.add_argument("--warmup", type=float, default=1.0, help="warmup seconds per round")
    parser.add_argument("--echo-threads", type=int, default=1, help="echo server event-loop threads")
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    parser.add_argument("--workers", default="", help="comma-separated worker counts for the session sweep, e.g. 1,2,4")
    options = parser.parse_args(argv)
    counts = [int(c) for c in options.workers.split(",") if c.strip()]
    if any(c < 1 or c > 8 for c in counts):
        parser.error("--workers: counts from 1 to 8")
    if options.duration > 10 or options.warmup > 3:
        parser.error("keep --duration <= 10 and --warmup <= 3 (the benchmark must stay under 2 minutes)")
    binary = find_driver_binary()
    started = time.monotonic()
    load_before = os.getloadavg()
    with echo_server(binary, options.echo_threads) as url:
        max_rows, rate_rows = measure(binary, url, options.rate, options.duration, options.warmup)
        worker_rows = measure_workers(url, counts, options.duration, options.warmup) if counts else []
    elapsed = time.monotonic() - started
    text = "\n".join(
        [
            f"Target: netperf-driver echo ({options.echo_threads} thread) on 127.0.0.1; "
            f"{os.cpu_count()} CPUs; load average before {load_before[0]:.2f}; "
            f"Locust {LocustDriver().version()}; total {elapsed:.0f} s.",
            "",
            f"Max RPS (closed loop, {options.duration:g} s window):",
            "",
            markdown_table(max_rows),
            "",
            f"Fixed rate {options.rate:g} rps (4 connections/users, {max(options.duration, 5.0):g} s window):",
            "",
            markdown_table(rate_rows),
        ]
    )
    if worker_rows:
        text += "\n\n" + "\n".join(
            [
                f"Session master with {options.workers} local worker(s), closed loop ({options.duration:g} s window), "
                "ratios to the Rust row of this run:",
                "",
                ratio_table(worker_rows, max_rows[0]),
                "",
                markdown_table(worker_rows),
            ]
        )
    print(text)
    if options.markdown:
        options.markdown.write_text(text + "\n", encoding="utf-8")
    if elapsed > TIME_BUDGET_S:
        print(f"warning: took {elapsed:.0f} s, above the {TIME_BUDGET_S:.0f} s budget", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
