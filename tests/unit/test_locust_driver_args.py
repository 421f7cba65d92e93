"""LocustDriver's validation and command lines (no Locust process is started here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust import DEFAULT_USER_FILE, LISTENER_FILE, commands
from pytest_netperf.drivers.locust.driver import LocustDriver
from pytest_netperf.errors import DriverError
from pytest_netperf.tls_options import TlsOptions


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_single_process_default_user(tmp_path: Path) -> None:
    driver = LocustDriver()
    shape = LoadShape(connections=3, duration_s=2.0, warmup_s=0.5, headers=(("Host", "api"),))
    argv = driver._main_argv(driver._topology(), "http://127.0.0.1:9/a/b?x=1", shape, tmp_path / "o.json", 5557)
    assert _option(argv, "-f") == f"{DEFAULT_USER_FILE},{LISTENER_FILE}"
    assert _option(argv, "--host") == "http://127.0.0.1:9"
    assert _option(argv, "--netperf-path") == "/a/b?x=1"
    assert _option(argv, "--netperf-headers") == '{"Host": "api"}'
    assert _option(argv, "-u") == "3" and _option(argv, "--netperf-users") == "3"
    assert _option(argv, "--netperf-rate") == "0.0"
    assert _option(argv, "--run-time") == "48s"  # 0.5 + 2 + 15 (reports) + 30 (start-up), rounded up
    assert "--master" not in argv


def test_master_with_local_and_remote_workers(tmp_path: Path) -> None:
    flows = tmp_path / "flows.py"
    flows.write_text("")
    driver = LocustDriver(
        locustfile=flows,
        user_class="Shopper",
        workers=2,
        remote_workers=3,
        master_host="0.0.0.0",
        expect_workers_timeout_s=7.5,
    )
    topology = driver._topology()
    argv = driver._main_argv(
        topology, "http://10.0.0.5:8080/", LoadShape(connections=10, rate=500.0), tmp_path / "o", 6000
    )
    assert _option(argv, "--expect-workers") == "5"
    assert _option(argv, "--expect-workers-max-wait") == "8"
    assert _option(argv, "--master-bind-host") == "0.0.0.0"
    assert _option(argv, "--host") == "http://10.0.0.5:8080"
    assert _option(argv, "--netperf-rate") == "500.0"
    assert argv[-1] == "Shopper"
    assert "--netperf-path" not in argv  # the locustfile defines its own requests
    worker = commands.worker_argv(topology, 6000)
    assert _option(worker, "--master-host") == "127.0.0.1" and _option(worker, "--master-port") == "6000"
    remote = driver.worker_command("10.0.0.1", 6000)
    assert _option(remote, "-f") == f"{flows.resolve()},{LISTENER_FILE}"
    assert _option(remote, "--master-host") == "10.0.0.1"


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        (LoadShape(new_connection_per_request=True), "new connection per request"),
        (LoadShape(arrival="burst"), "arrival 'burst'"),
        (LoadShape(connections=0), "at least one user"),
        (LoadShape(duration_s=0), "duration_s must be positive"),
    ],
)
def test_unsupported_shapes(shape: LoadShape, message: str) -> None:
    with pytest.raises(DriverError, match=message):
        LocustDriver().run("http://127.0.0.1:9/", shape)


def test_missing_locustfile_and_foreign_class_without_locustfile(tmp_path: Path) -> None:
    with pytest.raises(DriverError, match="does not exist"):
        LocustDriver(locustfile=tmp_path / "absent.py")._topology()
    with pytest.raises(DriverError, match="only class is NetperfGetUser"):
        LocustDriver(user_class="Shopper")._topology()
    with pytest.raises(DriverError, match=">= 0"):
        LocustDriver(workers=-1)


def test_rejects_non_http_urls() -> None:
    with pytest.raises(DriverError, match="not an http"):
        commands.split_url("tcp://127.0.0.1:9")
    assert commands.split_url("https://h:1") == ("https://h:1", "/")


def test_locust_processes_can_import_this_package() -> None:
    env = commands.locust_env({"PYTHONPATH": "/elsewhere"})
    first = env["PYTHONPATH"].split(":")[0]
    assert (Path(first) / "pytest_netperf" / "drivers" / "locust" / "in_locust" / "netperf_listener.py").is_file()
    assert env["PYTHONPATH"].endswith(":/elsewhere")


def test_tls_settings_travel_to_the_default_user(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    shape = LoadShape(tls=TlsOptions(ca=str(ca), cert="c.pem", key="k.pem", version="1.3"))
    settings = json.loads(commands.tls_settings(shape))
    assert settings == {
        "ca": str(ca),
        "cert": str(Path("c.pem").resolve()),
        "key": str(Path("k.pem").resolve()),
        "insecure": False,
        "version": "1.3",
    }
    assert commands.tls_settings(LoadShape()) == "{}"
    argv = commands.default_user_options("https://h:1/x", shape)
    assert argv[argv.index("--netperf-tls") + 1] == commands.tls_settings(shape)
    assert commands.round_options(shape, "https://h:1/x", default_user=True)["netperf_tls"] == commands.tls_settings(
        shape
    )


def test_resumption_is_refused_by_name() -> None:
    with pytest.raises(DriverError, match="cannot resume TLS sessions"):
        LocustDriver().run("https://127.0.0.1:1/", LoadShape(tls=TlsOptions(resumption=True)))
