"""Calibrate the Locust event-loop-lag saturation rule: loop-lag P99 by load (bounded, ~1 min).

Runs the Locust driver (one process, 4 users, the default GET user) against the echo server
on 127.0.0.1 at fixed rates and closed loop, ``--repeat`` times each, and prints per round
the event-loop lag P99 of the Locust process, its CPU share of a core and the achieved
rate.  The lag bound of the saturation rule (``defaults.LOCUST_MAX_LOOP_LAG_MS``) must sit
above what moderate rates show on a busy machine and below what a saturated process shows.

Usage:  python benchmarks/locust_loop_lag.py [--rates 10,50,200,500] [--repeat 3] [--duration 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locust_vs_rust import echo_server, find_driver_binary

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust.driver import LocustDriver

TIME_BUDGET_S = 110.0


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="10,50,200,500", help="comma-separated rates (rps); closed loop is added")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per load level")
    parser.add_argument("--duration", type=float, default=2.0, help="measured seconds per round")
    options = parser.parse_args(argv)
    rates: list[Optional[float]] = [float(r) for r in options.rates.split(",") if r.strip()]
    rates.append(None)
    if options.duration > 5 or options.repeat * len(rates) * (options.duration + 1.5) > TIME_BUDGET_S:
        parser.error("keep repeat x levels x (duration + 1.5 s) under 110 s")
    binary = find_driver_binary()
    print(f"{os.cpu_count()} CPUs; load average before {os.getloadavg()[0]:.2f}")
    print("| load | round | loop lag P99 µs | CPU share of a core | achieved rps |")
    print("|---|---|---|---|---|")
    # No bound here: every round is reported, none is refused for saturation.
    driver = LocustDriver(max_loop_lag_ms=1e9)
    started = time.monotonic()
    with echo_server(binary, 1) as url:
        for rate in rates:
            for index in range(options.repeat):
                shape = LoadShape(connections=4, rate=rate or 0.0, duration_s=options.duration, warmup_s=0.5)
                result = driver.run(url, shape)
                lag = result.config["loop_lag_p99_ns"][0]
                share = (result.client.cpu_user_s + result.client.cpu_sys_s) / result.duration_s
                label = f"{rate:g} rps" if rate else "closed loop"
                lag_text = f"{lag / 1e3:,.0f}" if lag is not None else "-"
                print(f"| {label} | {index + 1} | {lag_text} | {share:.0%} | {result.achieved_rps:,.0f} |", flush=True)
    print(f"total {time.monotonic() - started:.0f} s; load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
