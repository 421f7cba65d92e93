"""The Locust driver against the real echo server on loopback: real Locust processes.

Covers closed loop, paced (rate) rounds, a master with two workers, error kinds, a
locustfile user flow, every bad-input error, and that no Locust process outlives a round.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

import psutil
import pytest
from docker_helpers import interruptible

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust.driver import LocustDriver, LocustNotInstalled
from pytest_netperf.drivers.locust.processes import ProcessGroups
from pytest_netperf.errors import DriverError
from pytest_netperf.results.histogram import decode_histogram
from pytest_netperf.results.model import RoundResult

REPO = Path(__file__).resolve().parents[2]
SHORT = dict(warmup_s=0.3, duration_s=1.5, interval_s=0.5)


def _echo_binary() -> Optional[str]:
    candidates = [os.environ.get("NETPERF_DRIVER", ""), str(REPO / "driver/target/release/netperf-driver")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("netperf-driver")


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    """Base URL of a real `netperf-driver echo` server on 127.0.0.1 (one event-loop thread)."""
    binary = _echo_binary()
    if binary is None:
        pytest.skip("netperf-driver binary not found (build it: cargo build --release in driver/)")
    server = subprocess.Popen(
        [binary, "echo", "--listen", "127.0.0.1:0", "--threads", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline().strip() if server.stdout else ""
        if not line.startswith("listening on "):
            pytest.fail(f"echo server did not start: {line!r} {server.stderr.read() if server.stderr else ''}")
        yield f"http://{line.split()[-1]}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def _assert_no_leftovers(driver: LocustDriver) -> None:
    assert driver.last_pids, "the driver started no process"
    alive = [
        pid
        for pid in driver.last_pids
        if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    ]
    assert alive == []
    children = [p for p in psutil.Process().children(recursive=True) if "locust" in _cmdline(p)]
    assert children == []


def _cmdline(process: psutil.Process) -> str:
    """The command line, or "" for a process that is gone or a zombie (nothing to leak)."""
    try:
        return " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return ""


def test_closed_loop_default_user(echo_url: str) -> None:
    driver = LocustDriver()
    result = driver.run(f"{echo_url}/", LoadShape(connections=2, **SHORT))
    assert result.driver == "locust" and result.mode == "closed"
    assert result.requests > 100
    assert result.ok == result.requests and result.errors == {} and result.non_2xx == 0
    assert result.status_codes == {"200": result.requests}
    assert result.duration_s == pytest.approx(1.5, abs=0.1)
    assert result.achieved_rps == pytest.approx(result.requests / result.duration_s)
    assert decode_histogram(result.latency.histogram).get_total_count() == result.ok == result.latency.count
    assert 0 < result.latency.min_ns <= result.latency.p50_ns <= result.latency.p99_ns <= result.latency.max_ns
    assert result.sockets_opened == 2 and result.reconnects == 0
    assert result.client.threads == 1 and result.client.cpu_user_s > 0
    assert sum(interval.requests for interval in result.intervals) <= result.requests
    assert result.driver_version == driver.version()
    _assert_no_leftovers(driver)


def test_latency_reflects_a_known_server_delay(echo_url: str) -> None:
    result = LocustDriver().run(f"{echo_url}/?delay=5ms", LoadShape(connections=2, **SHORT))
    # the echo server holds each response 5 ms: Locust's latency must show it, not 1 ms buckets
    assert 5_000_000 <= result.latency.p50_ns < 8_000_000
    assert result.latency.min_ns >= 5_000_000


def test_paced_round_holds_the_rate(echo_url: str) -> None:
    driver = LocustDriver()
    shape = LoadShape(connections=2, rate=100.0, warmup_s=0.5, duration_s=2.0, arrival="constant")
    result = driver.run(f"{echo_url}/", shape)
    assert result.mode == "open" and result.requested_rps == 100.0
    assert result.schedule_lag is None
    assert result.client.achieved_ratio == pytest.approx(1.0, abs=0.05)
    assert result.requests == pytest.approx(200, rel=0.05)
    assert any("approximate open loop" in note for note in result.config["notes"])


#: Poisson rounds the test judges, and the most it measures to find them.
POISSON_ROUNDS, POISSON_ATTEMPTS = 4, 12


def _starved_by_the_machine(driver: LocustDriver, result: RoundResult) -> Optional[str]:
    """Why ``result``'s Locust process was held off the CPU by something else, or None.

    Its event loop woke a sleeping greenlet later than the driver's lag bound at least once
    (``config["loop_lag_max_ns"]``; a single stall is below the P99 the driver judges) while
    its own CPU was not the limit: the round's starts then waited for the machine, not for
    the driver, and the shortfall (or the backlog sent after the window opened) is as long
    as the stall, 5 starts for 50 ms at 100/s."""
    if "client_cpu" in result.client.saturation_kinds:
        return None  # the driver's own CPU: judged, never excused
    stalls = [float(ns) for ns in result.config["loop_lag_max_ns"] if ns is not None]
    worst = max(stalls, default=0.0)
    if worst <= driver.max_loop_lag_ms * 1e6:
        return None
    return f"event loop held {worst / 1e6:.0f} ms ({'; '.join(result.client.saturation_reasons) or 'not saturated'})"


def test_poisson_rounds_keep_up_with_the_starts_they_drew(echo_url: str) -> None:
    """At 100/s over 1 s a Poisson schedule draws 94 starts or fewer one time in three; CI
    saw such rounds called a saturated driver when they were judged against 100.

    Judged against the starts drawn, a client that keeps up ends within one iteration per
    user of them (an iteration begun before the window and ended in it, one begun in it and
    not ended): about +-1 at 100/s with 4 users, so 5% (3.5 starts at the fewest draws, 70)
    holds.  A round whose client the machine starved (a neighbour held the CPU: 20-130 ms
    loop stalls beside a busy neighbour with loopback traffic on 2 cores) is measured again,
    as the gate measures a saturated round again; a client starved in too many rounds, or
    one that falls behind while its loop kept time, fails."""
    driver = LocustDriver()
    shape = LoadShape(connections=4, rate=100.0, warmup_s=0.3, duration_s=1.0, arrival="poisson")
    judged: list[RoundResult] = []
    starved: list[str] = []
    for _ in range(POISSON_ATTEMPTS):
        result = driver.run(f"{echo_url}/", shape)
        reason = _starved_by_the_machine(driver, result)
        if reason is not None:
            starved.append(reason)
            continue
        assert not result.client.saturated, result.client.saturation_reasons
        assert result.client.achieved_ratio == pytest.approx(1.0, abs=0.05)
        judged.append(result)
        if len(judged) == POISSON_ROUNDS:
            return
    pytest.fail(
        f"the Locust client's event loop was held past its bound in {len(starved)} of {POISSON_ATTEMPTS} "
        f"rounds, {len(judged)} judged (a starving machine, or a driver that blocks its own loop): "
        + " | ".join(starved)
    )


def test_master_with_two_workers_merges_both(echo_url: str) -> None:
    driver = LocustDriver(workers=2)
    shape = LoadShape(connections=4, rate=200.0, warmup_s=0.5, duration_s=2.0, arrival="constant")  # counts
    result = driver.run(f"{echo_url}/", shape)
    per_worker = result.config["requests_per_process"]
    assert len(per_worker) == 2 and all(count > 50 for count in per_worker)
    assert sum(per_worker) == result.requests
    assert result.requests == pytest.approx(400, rel=0.05)
    assert result.latency.count == result.ok == result.requests
    assert result.client.threads == 3 and result.config["processes"] == 3
    assert result.sockets_opened == 4
    _assert_no_leftovers(driver)


def test_remote_worker_started_by_hand_joins_the_master(echo_url: str, tmp_path: Path) -> None:
    """The documented remote-worker procedure, with the "remote" machine being loopback."""
    port = _unused_port()
    driver = LocustDriver(remote_workers=1, master_port=port, expect_workers_timeout_s=15.0)
    outcome: dict[str, object] = {}

    def measure() -> None:
        try:
            shape = LoadShape(connections=2, rate=50.0, arrival="constant", **SHORT)  # counted below
            outcome["result"] = driver.run(f"{echo_url}/", shape)
        except Exception as exc:  # reported by the assertion below
            outcome["error"] = exc

    runner = threading.Thread(target=measure)
    runner.start()
    command = driver.worker_command("127.0.0.1", port)
    assert command[0] == "python"
    with open(tmp_path / "worker.err", "wb") as stderr:
        worker = subprocess.Popen([sys.executable, *command[1:]], stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        runner.join(timeout=60)
        assert not runner.is_alive()
        assert "error" not in outcome, outcome.get("error")
        result = outcome["result"]
        assert isinstance(result, RoundResult)
        assert result.config["workers"] == 1 and result.config["requests_per_process"] == [result.requests]
        assert result.requests == pytest.approx(75, rel=0.1)
        assert worker.wait(timeout=15) == 0  # the master releases its workers at the end of the round
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_error_kinds(echo_url: str) -> None:
    shape = LoadShape(connections=1, warmup_s=0.2, duration_s=1.0, timeout_s=0.3)
    failing = LocustDriver().run(f"{echo_url}/?status=503", shape)
    assert failing.ok == 0 and failing.non_2xx == failing.requests > 0
    assert failing.status_codes == {"503": failing.requests} and failing.error_rate == 1.0

    slow = LocustDriver().run(f"{echo_url}/?delay=1s", shape)
    assert slow.requests == 0 and slow.errors.get("timeout", 0) >= 2

    closed_port = _unused_port()
    refused = LocustDriver().run(f"http://127.0.0.1:{closed_port}/", shape)
    assert refused.requests == 0 and refused.errors.get("connect_refused", 0) > 0
    assert set(refused.errors) == {"connect_refused"}


def test_locustfile_flow_with_headers_and_rejections(echo_url: str, tmp_path: Path) -> None:
    flows = tmp_path / "flows.py"
    flows.write_text(
        "from locust import FastHttpUser, task\n"
        "class Shopper(FastHttpUser):\n"
        "    @task\n"
        "    def browse(self):\n"
        "        self.client.get('/?size=10', headers={'X-Flow': 'browse'})\n"
        "        with self.client.get('/', catch_response=True) as response:\n"
        "            if response.headers.get('x-netperf-hops') is None:\n"
        "                response.success()\n"
        "            else:\n"
        "                response.failure('rejected on purpose')\n"
        "class Idle(FastHttpUser):\n"
        "    @task\n"
        "    def nothing(self):\n"
        "        pass\n"
    )
    driver = LocustDriver(locustfile=flows, user_class="Shopper")
    shape = LoadShape(connections=2, rate=20.0, warmup_s=0.5, duration_s=2.0, arrival="constant")  # counted below
    result = driver.run(echo_url, shape)
    assert result.client.achieved_ratio == pytest.approx(1.0, abs=0.1)  # iterations, not requests
    assert result.requests == pytest.approx(80, rel=0.1)  # two requests per iteration
    assert result.errors == {"other": result.requests - result.ok}
    assert result.ok == pytest.approx(result.requests / 2, abs=2)
    assert result.bytes_received >= 10 * result.ok
    assert result.config["user_class"] == "Shopper"


def test_import_failure_names_the_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("from locust import HttpUser\nimport module_that_does_not_exist_xyz\n")
    driver = LocustDriver(locustfile=broken)
    with pytest.raises(
        DriverError,
        match=r"broken.py:2: ModuleNotFoundError: No module named 'module_that_does_not_exist_xyz'",
    ):
        driver.run("http://127.0.0.1:9/", LoadShape(**SHORT))
    _assert_no_leftovers(driver)


def test_unknown_user_class_lists_the_classes(tmp_path: Path) -> None:
    flows = tmp_path / "flows.py"
    flows.write_text(
        "from locust import HttpUser, task\n"
        "class Alpha(HttpUser):\n    @task\n    def a(self): pass\n"
        "class Beta(HttpUser):\n    @task\n    def b(self): pass\n"
    )
    driver = LocustDriver(locustfile=flows, user_class="Gamma")
    with pytest.raises(DriverError, match=r"user class Gamma not found in .*flows.py; classes found: Alpha, Beta"):
        driver.run("http://127.0.0.1:9/", LoadShape(**SHORT))
    _assert_no_leftovers(driver)


def test_worker_that_never_connects(echo_url: str) -> None:
    driver = LocustDriver(workers=1, remote_workers=1, expect_workers_timeout_s=2.0)
    started = time.monotonic()
    with pytest.raises(DriverError, match=r"only 1 of 2 Locust workers connected to the master at 127.0.0.1 within 2s"):
        driver.run(f"{echo_url}/", LoadShape(**SHORT))
    assert time.monotonic() - started < 20
    _assert_no_leftovers(driver)


def test_load_shape_classes_are_refused(tmp_path: Path) -> None:
    shaped = tmp_path / "shaped.py"
    shaped.write_text(
        "from locust import HttpUser, LoadTestShape, task\n"
        "class A(HttpUser):\n    @task\n    def a(self): pass\n"
        "class Ramp(LoadTestShape):\n    def tick(self):\n        return (1, 1)\n"
    )
    driver = LocustDriver(locustfile=shaped)
    with pytest.raises(DriverError, match="LoadTestShape classes are not supported"):
        driver.run("http://127.0.0.1:9/", LoadShape(**SHORT))
    _assert_no_leftovers(driver)


def test_locust_not_installed(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    bare_python = str(tmp_path / "venv" / "bin" / "python")
    with pytest.raises(LocustNotInstalled, match="Locust is not installed") as raised:
        LocustDriver(python=bare_python).run("http://127.0.0.1:9/", LoadShape(**SHORT))
    assert isinstance(raised.value, DriverError)


def test_process_groups_kill_forked_children_when_the_block_fails(tmp_path: Path) -> None:
    child_pid_file = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {child_pid_file}; wait"
    with pytest.raises(RuntimeError), ProcessGroups(tmp_path, grace_s=1.0) as groups:
        leader = groups.start("forker", ["sh", "-c", script])
        deadline = time.monotonic() + 5
        while not child_pid_file.exists() or not child_pid_file.read_text().strip():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        raise RuntimeError("the round failed halfway")
    child_pid = int(child_pid_file.read_text())
    assert leader.poll() is not None
    time.sleep(0.1)  # the orphaned child is reaped by init
    assert not psutil.pid_exists(child_pid) or psutil.Process(child_pid).status() == psutil.STATUS_ZOMBIE


ROUND_IN_A_CHILD = """
import sys
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust.driver import LocustDriver
# one remote worker that never comes: the master waits up to 60 s
LocustDriver(workers=1, remote_workers=1, expect_workers_timeout_s=60).run(sys.argv[1], LoadShape(duration_s=1))
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_no_locust_process_survives_an_interrupted_test_run(echo_url: str, signum: int) -> None:
    """SIGINT runs the driver's finally blocks; SIGTERM kills Python without them, and the
    kernel's parent-death signal must take the Locust processes down."""
    child = subprocess.Popen([sys.executable, "-c", ROUND_IN_A_CHILD, f"{echo_url}/"], preexec_fn=interruptible)
    locusts: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 20
        while len(locusts) < 2:  # master and the local worker
            assert time.monotonic() < deadline, "Locust processes did not start"
            time.sleep(0.2)
            locusts = [p for p in psutil.Process(child.pid).children() if "locust" in _cmdline(p)]
        workdirs = {Path(arg).parent for p in locusts for arg in _cmdline(p).split() if arg.endswith("result.json")}
        time.sleep(1.0)  # let them get past start-up
        child.send_signal(signum)
        child.wait(timeout=20)
        _gone, alive = psutil.wait_procs(locusts, timeout=10)
        assert alive == [], f"left behind: {[p.pid for p in alive]}"
        for workdir in workdirs:  # SIGTERM skips the driver's temporary-directory cleanup
            shutil.rmtree(workdir, ignore_errors=True)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)
        for process in locusts:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_worker_that_dies_mid_round_makes_the_round_invalid_with_the_reason(echo_url: str) -> None:
    """A session master with two local workers; one is killed during the window: no silent smaller load."""
    from pytest_netperf.drivers.locust.session import LocustSession

    driver = LocustDriver(workers=2)
    with LocustSession(driver.session_spec()) as session:
        driver.session = session
        first = driver.run(echo_url, LoadShape(connections=2, rate=40, **SHORT))
        assert len(first.config["workers_served"]) == 2
        assert all(w["requests"] > 0 for w in first.config["workers_served"])
        victim = session.pids()[-1]
        killer = threading.Timer(1.0, os.kill, (victim, signal.SIGKILL))
        killer.start()
        started = time.monotonic()
        with pytest.raises(DriverError) as failure:
            driver.run(echo_url, LoadShape(connections=2, rate=40, warmup_s=0.3, duration_s=3.0, interval_s=0.5))
        killer.join()
        pids = session.pids()
    message = str(failure.value)
    assert "1 of 2 Locust workers sent no measurement" in message, message
    assert "heartbeats" in message or "disconnected" in message, message
    assert time.monotonic() - started < 20
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
