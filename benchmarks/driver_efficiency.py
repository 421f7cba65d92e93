"""Client efficiency: netperf-driver vs wrk (and oha, Locust for context) on one nginx.

Same run, same nginx on loopback (temporary config, one worker), same number of
connections, closed loop.  For each client process: CPU seconds (user+sys, from wait4,
so every thread counts) per request, and achieved requests/s.  wrk and netperf-driver
run interleaved (A B B A …) so drift on this shared machine hits both; ratios are per
pair and the table shows their median.  Bounded: well under two minutes.

Targets (issue 2): CPU per request no more than wrk's; RPS at least 95% of wrk's.

Usage:  python benchmarks/driver_efficiency.py [--connections 32] [--duration 4] [--pairs 3]
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _loopback import ClientSample as Sample
from _loopback import check_exit, median, nginx, run_measured, wrk_sample

from pytest_netperf.runtime.commands import find_driver_binary

TIME_BUDGET_S = 115.0


def run_wrk(url: str, connections: int, duration_s: float) -> Sample:
    return wrk_sample(run_measured(["wrk", "-t1", f"-c{connections}", f"-d{duration_s:g}s", url], duration_s + 30))


def run_netperf(url: str, connections: int, duration_s: float) -> Sample:
    argv = [
        find_driver_binary(),
        "http",
        url,
        "-c",
        str(connections),
        "-t",
        "1",
        "-d",
        f"{duration_s:g}s",
        "-w",
        "0",
        "--json",
    ]
    run = run_measured(argv, duration_s + 30)
    check_exit(run, "netperf-driver")
    doc = json.loads(run.stdout)
    s = doc["summary"]
    return Sample("netperf-driver", s["requests"], s["achieved_rps"], run.cpu_s)


def run_oha(url: str, connections: int, duration_s: float) -> Optional[Sample]:
    oha = shutil.which("oha") or (
        str(Path.home() / ".cargo/bin/oha") if (Path.home() / ".cargo/bin/oha").exists() else None
    )
    if oha is None:
        return None
    run = run_measured(
        [oha, "-z", f"{duration_s:g}s", "-c", str(connections), "--no-tui", "--output-format", "json", url],
        duration_s + 30,
    )
    if run.returncode != 0:  # older oha spells it --json
        run = run_measured(
            [oha, "-z", f"{duration_s:g}s", "-c", str(connections), "--no-tui", "--json", url], duration_s + 30
        )
    check_exit(run, "oha")
    doc = json.loads(run.stdout)
    total = sum(int(v) for v in doc["statusCodeDistribution"].values())
    return Sample("oha", total, float(doc["summary"]["requestsPerSec"]), run.cpu_s)


LOCUSTFILE = """
from locust import FastHttpUser, constant, task

class Hammer(FastHttpUser):
    wait_time = constant(0)

    @task
    def get(self):
        self.client.get("/")
"""


def run_locust(url: str, connections: int, duration_s: float) -> Optional[Sample]:
    locust = shutil.which("locust")
    if locust is None:
        return None
    with tempfile.TemporaryDirectory(prefix="netperf-bench-locust-") as tmp:
        (Path(tmp) / "locustfile.py").write_text(LOCUSTFILE)
        argv = [
            locust,
            "-f",
            "locustfile.py",
            "--headless",
            "-u",
            str(connections),
            "-r",
            str(connections),
            "-t",
            f"{duration_s:g}s",
            "--host",
            url.rstrip("/"),
            "--only-summary",
            "--csv",
            "out",
            "--loglevel",
            "ERROR",
        ]
        run = run_measured(argv, duration_s + 60, cwd=tmp)
        with open(Path(tmp) / "out_stats.csv") as fh:
            row = next(r for r in csv.DictReader(fh) if r["Name"] == "Aggregated")
    total = int(row["Request Count"])
    return Sample("locust (1 process)", total, total / duration_s, run.cpu_s)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--duration", type=float, default=4.0)
    parser.add_argument("--pairs", type=int, default=4)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed (apt-get install -y wrk)")
        return 2
    started = time.monotonic()
    c, d = args.connections, args.duration
    with nginx(workers=1) as server:
        if server is None:
            print("nginx is not installed (apt-get install -y nginx-light)")
            return 2
        url = server.url
        run_netperf(url, c, 0.5)  # warm caches and nginx once, unmeasured
        pairs: list[tuple[Sample, Sample]] = []
        for i in range(args.pairs):
            order: list[Callable[[str, int, float], Sample]] = (
                [run_wrk, run_netperf] if i % 2 == 0 else [run_netperf, run_wrk]
            )
            a, b = (fn(url, c, d) for fn in order)
            wrk, ours = (a, b) if a.tool == "wrk" else (b, a)
            pairs.append((wrk, ours))
            if time.monotonic() - started > TIME_BUDGET_S - 4 * d:
                break
        context = [s for s in (run_oha(url, c, d), run_locust(url, c, d)) if s is not None]
    print(
        f"nginx (1 worker) on loopback, {c} connections, closed loop, {d:g}s per run, "
        f"{len(pairs)} interleaved wrk/netperf-driver pairs (2-core shared machine)\n"
    )
    print(
        f"{'pair':<6}{'tool':<20}{'requests':>10}{'rps':>11}{'cpu s':>8}{'cpu us/req':>12}"
        f"{'rps vs wrk':>12}{'cpu/req vs wrk':>16}"
    )
    rps_ratios, cpu_ratios = [], []
    for i, (wrk, ours) in enumerate(pairs, 1):
        rps_ratios.append(ours.rps / wrk.rps)
        cpu_ratios.append(ours.cpu_us_per_request / wrk.cpu_us_per_request)
        for s in (wrk, ours):
            rr = s.rps / wrk.rps
            cr = s.cpu_us_per_request / wrk.cpu_us_per_request
            print(
                f"{i:<6}{s.tool:<20}{s.requests:>10}{s.rps:>11.0f}{s.cpu_s:>8.2f}{s.cpu_us_per_request:>12.2f}"
                f"{rr:>12.3f}{cr:>16.3f}"
            )
    ref_wrk = median([w.cpu_us_per_request for w, _ in pairs])
    ref_rps = median([w.rps for w, _ in pairs])
    for s in context:
        print(
            f"{'ctx':<6}{s.tool:<20}{s.requests:>10}{s.rps:>11.0f}{s.cpu_s:>8.2f}{s.cpu_us_per_request:>12.2f}"
            f"{s.rps / ref_rps:>12.3f}{s.cpu_us_per_request / ref_wrk:>16.3f}"
        )
    if not any(s.tool == "oha" for s in context):
        print("ctx   oha                 absent (not installed: `cargo install oha`)")
    rps_med, cpu_med = median(rps_ratios), median(cpu_ratios)
    print(
        f"\nmedian netperf-driver/wrk: rps {rps_med:.3f} (target >= 0.95: {'met' if rps_med >= 0.95 else 'MISSED'}), "
        f"cpu per request {cpu_med:.3f} (target <= 1.00: {'met' if cpu_med <= 1.0 else 'MISSED'})"
    )
    print(
        f"ratio spread over pairs: rps {min(rps_ratios):.3f}..{max(rps_ratios):.3f}, "
        f"cpu/req {min(cpu_ratios):.3f}..{max(cpu_ratios):.3f}; elapsed {time.monotonic() - started:.0f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
