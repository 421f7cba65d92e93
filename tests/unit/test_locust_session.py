"""Pure parts of the session master: its command lines, round options, the pool, the worker
service's command and restart loop, address parsing, and who served a round."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_netperf import defaults
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust import DEFAULT_USER_FILE, LISTENER_FILE, commands
from pytest_netperf.drivers.locust.driver import LocustDriver
from pytest_netperf.drivers.locust.result_builder import worker_records
from pytest_netperf.drivers.locust.session import LocustSession, SessionPool, SessionSpec
from pytest_netperf.drivers.locust.worker_service import WorkerConfig, WorkerService, parse_master
from pytest_netperf.errors import DriverError
from pytest_netperf.settings import Settings


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_session_master_is_not_headless_and_serves_a_control_socket(tmp_path: Path) -> None:
    argv = commands.session_master_argv(
        "py", (DEFAULT_USER_FILE, LISTENER_FILE), "0.0.0.0", 5557, tmp_path / "c.sock", 40000, None
    )
    assert "--master" in argv and "--headless" not in argv
    assert _option(argv, "--master-bind-host") == "0.0.0.0"
    assert _option(argv, "--master-bind-port") == "5557"
    assert _option(argv, "--web-host") == "127.0.0.1"  # never exposed
    assert _option(argv, "--netperf-control") == str(tmp_path / "c.sock")
    assert "--expect-workers" not in argv  # the driver waits, with its own error


def test_round_options_carry_the_shape_and_the_default_users_request() -> None:
    shape = LoadShape(connections=4, rate=100, duration_s=2, warmup_s=0.5, headers=(("Host", "api"),))
    options = commands.round_options(shape, "http://10.0.0.5:80/p?q=1", default_user=True)
    assert options["netperf_rate"] == 100 and options["netperf_users"] == 4
    assert options["netperf_path"] == "/p?q=1" and options["netperf_headers"] == '{"Host": "api"}'
    assert "netperf_path" not in commands.round_options(shape, "http://h/", default_user=False)
    assert commands.target_host("http://h:8/x", default_user=True) == "http://h:8"
    assert commands.target_host("http://h:8/x/", default_user=False) == "http://h:8/x"


def test_session_spec_follows_the_driver() -> None:
    spec = LocustDriver(workers=1, remote_workers=2, master_host="0.0.0.0", master_port=5557).session_spec("0")
    assert spec.expected_workers == 3 and spec.bind_host == "0.0.0.0" and spec.port == 5557
    assert spec.files == (DEFAULT_USER_FILE, LISTENER_FILE) and spec.cpus == "0"


def test_a_session_needs_a_worker_and_every_worker_needs_a_user() -> None:
    with pytest.raises(DriverError, match="at least one worker"):
        LocustSession(SessionSpec(files=(DEFAULT_USER_FILE,)))
    driver = LocustDriver(workers=2)
    driver.session = LocustSession(driver.session_spec())  # never started: the check comes first
    with pytest.raises(DriverError, match=r"1 Locust user.*2 workers busy"):
        driver._run_in_session(driver.session, "http://127.0.0.1:9/", LoadShape(connections=1))


def test_pool_keeps_one_session_and_replaces_it_for_another_spec() -> None:
    pool = SessionPool()
    spec = SessionSpec(files=(DEFAULT_USER_FILE,), local_workers=1)
    first = pool.session_for(spec)
    assert pool.session_for(spec) is first
    second = pool.session_for(SessionSpec(files=(DEFAULT_USER_FILE,), local_workers=2))
    assert second is not first and pool.current is second
    pool.close()
    assert pool.current is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10.0.0.10:5557", ("10.0.0.10", 5557)), ("[::1]:80", ("::1", 80)), ("gw.local:1", ("gw.local", 1))],
)
def test_master_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_master(text) == expected


@pytest.mark.parametrize("text", ["10.0.0.10", ":5557", "h:0", "h:70000", "h:x"])
def test_bad_master_addresses_are_explained(text: str) -> None:
    with pytest.raises(ValueError, match=r"HOST:PORT|BIND:PORT"):
        parse_master(text)


def test_settings_pick_the_masters_address() -> None:
    assert Settings().locust_master_address() == ("127.0.0.1", 0)
    remote = Settings.from_mapping({"locust_remote_workers": "2"})
    assert remote.locust_master_address() == (defaults.LOCUST_MASTER_BIND, defaults.LOCUST_MASTER_PORT)
    assert Settings.from_mapping({"locust_master": "10.1.2.3:6000"}).locust_master_address() == ("10.1.2.3", 6000)
    with pytest.raises(ValueError, match="locust_master"):
        Settings.from_mapping({"locust_master": "nowhere"})
    with pytest.raises(ValueError, match="locust_remote_workers must be >= 0"):
        Settings.from_mapping({"locust_remote_workers": "-1"})


def test_worker_command_loads_the_listener_next_to_the_locustfile(tmp_path: Path) -> None:
    argv = WorkerConfig("10.0.0.10", 5557, tmp_path / "flows.py", python="py").argv()
    assert argv[:3] == ["py", "-m", "locust"] and "--worker" in argv
    assert _option(argv, "-f") == f"{tmp_path / 'flows.py'},{LISTENER_FILE}"
    assert _option(argv, "--master-host") == "10.0.0.10" and _option(argv, "--master-port") == "5557"


def test_worker_service_starts_the_worker_again_until_stopped() -> None:
    """A worker that exits (master gone) is started again; ``max_runs`` bounds the test."""
    lines: list[str] = []

    class Quick(WorkerConfig):
        def argv(self) -> list[str]:
            return [sys.executable, "-c", "raise SystemExit(3)"]

    service = WorkerService(Quick("h", 1, restart_delay_s=0.01, max_runs=3), say=lines.append)
    assert service.run() == 0
    assert service.runs == 3
    assert sum("exited with code 3" in line for line in lines) == 2
    assert lines[-1].endswith("stopped")


def test_worker_records_name_who_served_the_round() -> None:
    document = {
        "processes": [
            {"role": "master", "node_id": "master", "host": "h", "cpu_user_s": 0.1, "cpu_sys_s": 0, "wall_s": 2},
            {
                "role": "worker",
                "node_id": "w1",
                "host": "c1",
                "address": "172.18.0.3",
                "requests": 200,
                "errors": 1,
                "cpu_user_s": 0.3,
                "cpu_sys_s": 0.1,
                "wall_s": 2.0,
            },
        ]
    }
    [record] = worker_records(document)
    assert record == {
        "id": "w1",
        "host": "c1",
        "address": "172.18.0.3",
        "requests": 200,
        "errors": 1,
        "cpu_s": pytest.approx(0.4),
        "cpu_share": pytest.approx(0.2),
    }


def test_the_report_names_every_worker_and_the_rounds_it_served() -> None:
    from types import SimpleNamespace

    from pytest_netperf.report.load_workers import workers_fact

    def round_(*workers: tuple[str, str, int]) -> SimpleNamespace:
        served = [
            {"id": i, "host": f"c-{i}", "address": a, "requests": n, "errors": 0, "cpu_share": 0.25}
            for i, a, n in workers
        ]
        return SimpleNamespace(config={"workers_served": served})

    rounds = [round_(("w1", "172.18.0.3", 100), ("w2", "172.18.0.4", 90)), round_(("w1", "172.18.0.3", 110))]
    assert workers_fact(rounds) == (
        "172.18.0.3 (c-w1): 2/2 rounds, 105 req/round, 0 errors, CPU 25%; "
        "172.18.0.4 (c-w2): 1/2 rounds, 90 req/round, 0 errors, CPU 25%"
    )
    assert workers_fact([SimpleNamespace(config={})]) == ""
