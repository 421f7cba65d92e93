"""HTTP/2 client efficiency: netperf-driver vs h2load against the same echo server.

One run, on loopback: our echo server (one event-loop thread, plus its HTTP/2 companion
thread) pinned to one core, serving h2 over TLS (ECDSA P-256 certificate of the test CA,
pytest_netperf.runtime.test_ca; ALPN h2) and, a second one, cleartext h2c; each client
pinned to the other core (``taskset``), one thread, the same connections and streams per
connection (h2load ``-c C -m M``; ours ``-c C --streams-per-connection M``), closed loop, a
GET of ``/`` answered with 3 bytes. Neither client checks the certificate chain (h2load never
does; ours runs with ``--insecure``).

For each client process: CPU seconds (user+sys of the child, from wait4) per request answered,
and requests/s. h2load and netperf-driver alternate (A B B A …) so drift on this shared
machine hits both; the ratios ours/h2load are per pair and their medians are printed.
Bounded: about two minutes with the defaults.

Goal (issue 39): our CPU per request <= 1.0x h2load's.

Usage:  python benchmarks/h2_driver_vs_h2load.py [--duration 4] [--pairs 3] [--connections 8] [--streams 10]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _loopback import ChildRun, alternate_pairs, check_exit, print_ratios, run_measured, stop_process
from _loopback import ClientSample as Sample
from tls_driver_vs_wrk import wait_for_quiet_machine

from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.test_ca import SessionCA

SERVER_CORE = "1"
CLIENT_CORE = "0"
MODES = ("h2 (TLS)", "h2c")


@contextmanager
def echo(extra: list[str], scheme: str) -> Iterator[str]:
    """Our echo server on SERVER_CORE with ``extra`` arguments; yields its base URL."""
    argv = ["taskset", "-c", SERVER_CORE, find_driver_binary(), "echo", "-l", "127.0.0.1:0", "-t", "1"]
    process = subprocess.Popen(argv + extra, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("listening on "):
            raise RuntimeError(f"echo server did not start: {line!r}")
        yield f"{scheme}://{line.removeprefix('listening on ')}/"
    finally:
        stop_process(process)


def h2load_sample(run: ChildRun) -> Sample:
    """h2load's output as a sample; RuntimeError on failed or errored requests."""
    check_exit(run, "h2load")
    totals = r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored"
    done = re.search(totals, run.stdout)
    rate = re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", run.stdout)
    if done is None or rate is None:
        raise RuntimeError(f"h2load printed no totals: {run.stdout[-600:]}")
    if int(done.group(5)) or int(done.group(6)):
        raise RuntimeError(f"h2load saw failed requests: {run.stdout[-600:]}")
    return Sample("h2load", int(done.group(3)), float(rate.group(1)), run.cpu_s)


def run_h2load(url: str, connections: int, streams: int, duration_s: float) -> Sample:
    argv = ["taskset", "-c", CLIENT_CORE, "h2load", "-t1", f"-c{connections}", f"-m{streams}"]
    argv += ["-D", f"{duration_s:g}", url]
    return h2load_sample(run_measured(argv, duration_s + 30))


def run_ours(url: str, connections: int, streams: int, duration_s: float) -> Sample:
    argv = ["taskset", "-c", CLIENT_CORE, find_driver_binary(), "http", url, "--http2"]
    argv += ["-c", str(connections), "--streams-per-connection", str(streams)]
    argv += ["-t", "1", "-d", f"{duration_s:g}s", "-w", "0", "--json"]
    if url.startswith("https://"):
        argv.append("--insecure")
    run = run_measured(argv, duration_s + 30)
    check_exit(run, "netperf-driver")
    doc = json.loads(run.stdout)
    s = doc["summary"]
    if s["ok"] != s["requests"] or doc["http2"] is None:
        raise RuntimeError(f"netperf-driver: errors or not HTTP/2: {s['errors']} {doc['http2']}")
    # the CPU covers the whole process, so divide by every response it got
    return Sample("netperf-driver", s["completed_total"], s["achieved_rps"], run.cpu_s)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=4.0)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--streams", type=int, default=10)
    args = parser.parse_args()
    if shutil.which("h2load") is None or shutil.which("taskset") is None:
        print("h2load (Debian's nghttp2-client) and taskset are needed (scripts/setup installs them)")
        return 2
    wait_for_quiet_machine()
    c, m, d = args.connections, args.streams, args.duration
    with SessionCA(key_type="ecdsa") as ca, echo(ca.echo_args(), "https") as tls_url, echo([], "http") as plain_url:
        urls = {"h2 (TLS)": tls_url, "h2c": plain_url}
        results = alternate_pairs(
            args.pairs,
            list(MODES),
            lambda mode: run_h2load(urls[mode], c, m, d),
            lambda mode: run_ours(urls[mode], c, m, d),
        )
    print(
        f"\nHTTP/2 GET, {c} connections x {m} streams, echo server on core {SERVER_CORE}, client on core "
        f"{CLIENT_CORE} (one thread), {d:g}s runs, {args.pairs} alternating pairs per protocol\n"
    )
    print_ratios(results, "h2load", "protocol", 11)
    return 0


if __name__ == "__main__":
    sys.exit(main())
