"""TCP request/response: netperf-driver's tcp:// mode against sockperf ping-pong, same run.

sockperf (Debian's ``sockperf``) is the established TCP ping-pong tool. Each tool runs one
connection, one message in flight (netperf's TCP_RR), against its own server on loopback:
the project's echo server (``--tcp-echo``) and ``sockperf server --tcp``. Client on the
first core, servers on the last, as the L4 paths pin them. Runs alternate (A B B A …) per
payload so drift on this shared machine hits both tools. sockperf reports half the round
trip; its figures are doubled here to compare round trips. Client CPU per transaction is
the client process's user+sys (``wait4``) over its transactions (warmup included for
both). Bounded: payloads x pairs x 2 runs of ``--duration`` seconds.

Usage:  python benchmarks/l4_rr.py [--duration 3] [--pairs 2] [--payloads 64,512,1518]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _loopback import free_port, median, run_measured, stop_process, wait_for_port

from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.l4_paths import core_pair


@dataclass
class Run:
    tool: str
    payload: int
    tps: float
    p50_us: float
    p99_us: float
    cpu_us_per_transaction: float


@contextlib.contextmanager
def server(argv: list[str], port: int, cores: str | None) -> Iterator[None]:
    pinned = ["taskset", "-c", cores, *argv] if cores else argv
    process = subprocess.Popen(pinned, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield
    finally:
        stop_process(process)


def pinned(argv: list[str], cores: str | None) -> list[str]:
    return ["taskset", "-c", cores, *argv] if cores else argv


def ours(port: int, payload: int, duration: float, cores: str | None) -> Run:
    argv = [find_driver_binary(), "http", f"tcp://127.0.0.1:{port}", "--payload", str(payload)]
    argv += ["-c", "1", "-d", f"{duration}s", "-w", "0.5s", "--json"]
    done = run_measured(pinned(argv, cores), timeout_s=duration + 30)
    if done.returncode != 0:
        raise RuntimeError(f"netperf-driver failed: {done.stderr[-500:]}")
    doc = json.loads(done.stdout)
    latency = doc["latency_ns"]
    total = doc["summary"]["completed_total"]
    return Run(
        "netperf-driver",
        payload,
        doc["summary"]["achieved_rps"],
        latency["p50"] / 1e3,
        latency["p99"] / 1e3,
        done.cpu_s * 1e6 / max(total, 1),
    )


_SOCKPERF_PERCENTILE = re.compile(r"percentile (\d+\.\d+) =\s+([\d.]+)")
_SOCKPERF_COUNTS = re.compile(r"RunTime=([\d.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)")


def sockperf(port: int, payload: int, duration: float, cores: str | None) -> Run:
    argv = ["sockperf", "ping-pong", "--tcp", "-i", "127.0.0.1", "-p", str(port), "-m", str(payload)]
    argv += ["-t", str(max(1, round(duration)))]
    done = run_measured(pinned(argv, cores), timeout_s=duration + 30)
    text = done.stdout + done.stderr
    counts = _SOCKPERF_COUNTS.search(text)
    if done.returncode != 0 or counts is None:
        raise RuntimeError(f"sockperf failed: {text[-500:]}")
    percentiles = {float(q): float(v) for q, v in _SOCKPERF_PERCENTILE.findall(text)}
    runtime_s, received = float(counts.group(1)), int(counts.group(3))
    return Run(
        "sockperf",
        payload,
        received / runtime_s,
        2 * percentiles[50.0],  # sockperf reports half the round trip
        2 * percentiles[99.0],
        done.cpu_s * 1e6 / max(received, 1),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--payloads", default="64,512,1518")
    args = parser.parse_args()
    if shutil.which("sockperf") is None:
        print("sockperf is not installed (apt-get install sockperf)", file=sys.stderr)
        return 2
    client_cores, server_cores = core_pair()
    echo_port, sockperf_port = free_port(), free_port()
    echo = [find_driver_binary(), "echo", "--listen", f"127.0.0.1:{free_port()}", "-t", "1"]
    echo += ["--tcp-echo", f"127.0.0.1:{echo_port}"]
    sock = ["sockperf", "server", "--tcp", "-i", "127.0.0.1", "-p", str(sockperf_port)]
    runs: list[Run] = []
    started = time.monotonic()
    with server(echo, echo_port, server_cores), server(sock, sockperf_port, server_cores):
        for payload in (int(p) for p in args.payloads.split(",")):
            for index in range(args.pairs):
                order = [ours, sockperf] if index % 2 == 0 else [sockperf, ours]
                for tool in order:
                    port = echo_port if tool is ours else sockperf_port
                    runs.append(tool(port, payload, args.duration, client_cores))
    print(
        f"client cores {client_cores}, server cores {server_cores}; {time.monotonic() - started:.0f} s; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print("| payload | tool | transactions/s | P50 RTT us | P99 RTT us | client CPU us/transaction |")
    print("|---|---|---|---|---|---|")
    for payload in dict.fromkeys(r.payload for r in runs):
        for tool in ("netperf-driver", "sockperf"):
            mine = [r for r in runs if r.payload == payload and r.tool == tool]
            print(
                f"| {payload} | {tool} | {median([r.tps for r in mine]):,.0f} | {median([r.p50_us for r in mine]):.1f} "
                f"| {median([r.p99_us for r in mine]):.1f} | {median([r.cpu_us_per_transaction for r in mine]):.2f} |"
            )
        ratio = median([r.tps for r in runs if r.payload == payload and r.tool == "netperf-driver"]) / median(
            [r.tps for r in runs if r.payload == payload and r.tool == "sockperf"]
        )
        print(f"| {payload} | ratio netperf-driver / sockperf (transactions/s) | {ratio:.2f}x | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
