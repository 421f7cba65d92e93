"""Shared helpers for the driver benchmarks: nginx and echo on loopback, child CPU time.

Every process started here is killed on exit (also when a benchmark fails halfway), and
temporary nginx directories are removed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer

NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/bin/nginx")


def free_port() -> int:
    """A free loopback port (bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout_s: float = 5.0) -> None:
    """Wait until something accepts on 127.0.0.1:port."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


@dataclass
class Nginx:
    """A running nginx (master) with a temporary config."""

    url: str
    process: subprocess.Popen
    directory: Path

    def worker_pids(self) -> list[int]:
        """PIDs of the worker processes."""
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.process.pid)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]


@contextlib.contextmanager
def nginx(workers: int = 1, keepalive_requests: int = 1_000_000) -> Iterator[Optional[Nginx]]:
    """nginx answering ``200 ok`` on a free loopback port; yields None when not installed."""
    binary = next((p for p in NGINX_CANDIDATES if os.path.exists(p)), None)
    if binary is None:
        yield None
        return
    directory = Path(tempfile.mkdtemp(prefix="netperf-bench-nginx-"))
    port = free_port()
    d = directory
    (d / "nginx.conf").write_text(
        f"worker_processes {workers}; daemon off; pid {d}/nginx.pid; error_log {d}/error.log;\n"
        "events { worker_connections 4096; }\n"
        f"http {{ access_log off; client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};\n"
        f"uwsgi_temp_path {d}; scgi_temp_path {d}; keepalive_requests {keepalive_requests};\n"
        f'server {{ listen 127.0.0.1:{port}; location / {{ return 200 "ok\\n"; }} }} }}\n'
    )
    process = subprocess.Popen(
        [binary, "-c", str(d / "nginx.conf"), "-p", str(d), "-e", str(d / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        yield Nginx(f"http://127.0.0.1:{port}/", process, d)
    finally:
        # SIGTERM: the master takes its workers down (a SIGKILLed master orphans them).
        stop_process(process)
        shutil.rmtree(d, ignore_errors=True)


def stop_process(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 3 s; waits for the process to be gone."""
    process.terminate()
    try:
        process.wait(timeout=3)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@contextlib.contextmanager
def echo_server(threads: int = 1) -> Iterator[LocalEchoServer]:
    """The project's echo server on a free loopback port."""
    with LocalEchoServer(threads=threads, binary=find_driver_binary()) as server:
        yield server


@dataclass
class ChildRun:
    """A finished child process: exit code, output, and its CPU seconds (all threads)."""

    returncode: int
    stdout: str
    stderr: str
    cpu_s: float
    wall_s: float


def run_measured(argv: list[str], timeout_s: float, cwd: Optional[str] = None) -> ChildRun:
    """Run ``argv`` and return its own user+sys CPU time via ``wait4``."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.monotonic()
        process = subprocess.Popen(argv, stdout=out, stderr=err, cwd=cwd)
        deadline = start + timeout_s
        try:
            while True:
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{argv[0]} did not finish within {timeout_s:g}s")
                time.sleep(0.01)
        except BaseException:
            process.kill()
            os.waitpid(process.pid, 0)
            raise
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return ChildRun(process.returncode, out.read(), err.read(), usage.ru_utime + usage.ru_stime, wall)


def process_cpu_s(pid: int) -> float:
    """user+sys CPU seconds of a running process (all threads) from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def median(values: list[float]) -> float:
    """Median of a non-empty list."""
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


@dataclass
class ClientSample:
    """One load client's run: requests answered, requests/s, and its CPU seconds."""

    tool: str
    requests: int
    rps: float
    cpu_s: float

    @property
    def cpu_us_per_request(self) -> float:
        return 1e6 * self.cpu_s / self.requests if self.requests else float("nan")


def check_exit(run: ChildRun, tool: str) -> None:
    """RuntimeError with the end of ``tool``'s stderr when it exited non-zero."""
    if run.returncode != 0:
        raise RuntimeError(f"{tool} exited {run.returncode}: {run.stderr.strip()[-400:]}")


def wrk_sample(run: ChildRun, strict: bool = False) -> ClientSample:
    """wrk's output as a sample (``strict``: RuntimeError on socket errors or non-2xx)."""
    check_exit(run, "wrk")
    total = re.search(r"(\d+) requests in", run.stdout)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", run.stdout)
    if total is None or rps is None:
        raise RuntimeError(f"wrk printed no totals: {run.stdout[-400:]}")
    if strict and (re.search(r"Socket errors: ", run.stdout) or "Non-2xx" in run.stdout):
        raise RuntimeError(f"wrk saw errors: {run.stdout}")
    return ClientSample("wrk", int(total.group(1)), float(rps.group(1)), run.cpu_s)


#: A sample's pairs per mode: (the established tool's, ours), in the order they ran.
Pairs = dict[str, list[tuple[ClientSample, ClientSample]]]


def alternate_pairs(
    pairs: int, modes: list[str], theirs: Callable[[str], ClientSample], ours: Callable[[str], ClientSample]
) -> Pairs:
    """``pairs`` rounds over ``modes``: each mode runs the established tool and ours back to back,
    who goes first alternating from round to round (so a drift of the machine favours neither);
    each pair is printed as it lands."""
    results: Pairs = {mode: [] for mode in modes}
    for i in range(pairs):
        for mode in modes:
            first, second = (theirs, ours) if i % 2 == 0 else (ours, theirs)
            a, b = first(mode), second(mode)
            tool, mine = (a, b) if first is theirs else (b, a)
            results[mode].append((tool, mine))
            print(
                f"pair {i + 1} {mode}: {tool.tool} {tool.rps:.0f} rps {tool.cpu_us_per_request:.2f} us/req, "
                f"ours {mine.rps:.0f} rps {mine.cpu_us_per_request:.2f} us/req",
                flush=True,
            )
    return results


def print_ratios(results: Pairs, tool: str, mode_title: str, width: int) -> None:
    """The medians of each mode, ours against ``tool`` (requests/s and CPU per request), and the
    goal line: our CPU per request at most 1.0x the tool's."""
    print(
        f"{mode_title:<{width}}{'tool':<16}{'rps':>10}{'cpu us/req':>12}"
        f"{f'rps vs {tool}':>{len(tool) + 9}}{f'cpu/req vs {tool}':>{len(tool) + 13}}"
    )
    verdicts = []
    for mode, pairs in results.items():
        rps_ratio = median([o.rps / t.rps for t, o in pairs])
        cpu_ratio = median([o.cpu_us_per_request / t.cpu_us_per_request for t, o in pairs])
        for name, pick in ((tool, 0), ("netperf-driver", 1)):
            rps = median([p[pick].rps for p in pairs])
            cpu = median([p[pick].cpu_us_per_request for p in pairs])
            ratios = ("", "") if pick == 0 else (f"{rps_ratio:.3f}", f"{cpu_ratio:.3f}")
            rps_col, cpu_col = f"{ratios[0]:>{len(tool) + 9}}", f"{ratios[1]:>{len(tool) + 13}}"
            print(f"{mode:<{width}}{name:<16}{rps:>10.0f}{cpu:>12.2f}{rps_col}{cpu_col}")
        verdicts.append(f"{mode}: cpu/req {cpu_ratio:.3f}x {tool} ({'met' if cpu_ratio <= 1.0 else 'MISSED'})")
    print(f"\nmedian ratios ours/{tool}; goal cpu/req <= 1.0x: " + "; ".join(verdicts))
