"""The real `netperf-driver` over HTTP/2 and gRPC: the Python driver against the echo server
(h2c on its cleartext port, h2 with ALPN on its TLS port with a certificate of the per-session
test CA), a gate that loads it with ``http="2"``, and the bad input that must fail clearly: h2
to a server that offers only HTTP/1.1, and a gRPC method that does not exist."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Optional

import jsonschema
import pytest
from pytester_helpers import json_report, netperf_args

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.errors import DriverError, DriverNotFoundError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer
from pytest_netperf.runtime.test_ca import SessionCA
from pytest_netperf.tls_options import TlsOptions

SCHEMA = json.loads((Path(__file__).parents[2] / "driver" / "schema.json").read_text())

try:
    BINARY = find_driver_binary()
except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"netperf-driver binary not available: {exc}", allow_module_level=True)

SHAPE = LoadShape(connections=2, threads=1, duration_s=0.5, warmup_s=0.1, timeout_s=2.0, http="2")


def _speaks_http2() -> bool:
    """The installed driver knows --http2 (a stale build does not: rebuild with pip install -e .)."""
    done = subprocess.run([BINARY, "http", "--help"], capture_output=True, text=True, timeout=30)
    return "--http2" in done.stdout


if not _speaks_http2():  # pragma: no cover - depends on the installed build
    pytest.skip("the installed netperf-driver predates --http2; run scripts/setup", allow_module_level=True)


@pytest.fixture(scope="module")
def ca() -> Iterator[SessionCA]:
    with SessionCA() as authority:
        yield authority


def _echo(tls: Optional[SessionCA] = None, *extra: str) -> Iterator[str]:
    """An echo server on loopback (TLS with ``tls``'s certificate) with ``extra`` options;
    yields its base URL (no slash)."""
    with LocalEchoServer(binary=BINARY, threads=1, tls=tls, extra=extra) as server:
        yield server.url


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    yield from _echo()


@pytest.fixture(scope="module")
def tls_echo(ca: SessionCA) -> Iterator[str]:
    yield from _echo(ca)


def test_h2c_with_streams_per_connection(echo: str) -> None:
    driver = RustDriver(binary=BINARY)
    shape = replace(SHAPE, streams_per_connection=8)
    assert driver.argv(echo + "/", shape)[-3:] == ["--http2", "--streams-per-connection", "8"]
    result = driver.run(echo + "/", shape)
    assert result.ok > 0 and not result.errors and not result.non_2xx
    assert result.config["protocol"] == "h2c"
    open_loop = driver.run(echo + "/", replace(shape, rate=300.0))
    assert open_loop.requested_rps == 300.0 and open_loop.ok > 0 and not open_loop.errors


def test_h2_over_tls_with_alpn(tls_echo: str, ca: SessionCA) -> None:
    argv = [BINARY, "http", tls_echo + "/?size=2048", "--ca", str(ca.files.ca), "--http2"]
    argv += ["--streams-per-connection", "4", "-c", "2", "-n", "200", "-t", "1", "--json"]
    doc = json.loads(subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["config"]["protocol"] == "h2"
    assert doc["tls"]["alpn"] == "h2"
    assert doc["http2"]["mode"] == "h2" and doc["http2"]["streams_per_connection"] == 4
    assert doc["summary"]["ok"] == 200
    result = RustDriver(binary=BINARY).run(tls_echo + "/", replace(SHAPE, tls=TlsOptions(ca=str(ca.files.ca))))
    assert result.ok > 0 and not result.errors


def test_grpc_echo_method(echo: str, tmp_path: Path) -> None:
    driver = RustDriver(binary=BINARY)
    message = tmp_path / "hello.bin"
    message.write_bytes(b"\x0a\x05hello")
    for given in (b"\x0a\x05hello", str(message)):
        shape = replace(SHAPE, http=None, grpc="/netperf.Echo/Echo", grpc_message=given, streams_per_connection=4)
        result = driver.run(echo + "/ignored", shape)
        assert result.ok > 0 and not result.errors, result.errors
        assert result.target.endswith("/netperf.Echo/Echo")


def test_h2_to_a_server_offering_only_http11_names_it(ca: SessionCA) -> None:
    driver = RustDriver(binary=BINARY)
    for url in _echo(ca, "--no-http2"):
        shape = replace(SHAPE, tls=TlsOptions(ca=str(ca.files.ca)))
        with pytest.raises(DriverError, match=r"exit 7.*ALPN refused: the server offers only http/1\.1"):
            driver.run(url + "/", shape)
        assert driver.run(url + "/", replace(shape, http=None)).ok > 0, "HTTP/1.1 still works"
    for url in _echo(None, "--no-http2"):
        with pytest.raises(DriverError, match=r"does not speak the protocol asked for \(exit 7\).*h2c refused"):
            driver.run(url + "/", SHAPE)


def test_a_grpc_method_that_does_not_exist_names_it(echo: str) -> None:
    shape = replace(SHAPE, http=None, grpc="/netperf.Echo/Missing")
    with pytest.raises(DriverError, match=r"/netperf\.Echo/Missing.*grpc-status 12 \(UNIMPLEMENTED\)"):
        RustDriver(binary=BINARY).run(echo + "/", shape)


GATE = """
import os
import pytest

@pytest.mark.netperf("errors == 0", "p99 < 5s")
def test_h2c_echo(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], connections=2, http="2", streams_per_connection=4)

@pytest.mark.netperf("errors == 0")
def test_grpc_echo(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], grpc="/netperf.Echo/Echo", grpc_message=b"hi")

@pytest.mark.netperf("errors == 0")
def test_grpc_missing_method(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], grpc="/netperf.Echo/Missing")

@pytest.mark.netperf("errors == 0")
def test_bad_option(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], streams_per_connection=4)
"""


def test_gates_over_http2_and_grpc(pytester: pytest.Pytester, echo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETPERF_TEST_URL", echo + "/")
    pytester.makepyfile(test_gate=GATE)
    fast = netperf_args(2, 2, "0.3", "0.1", "--netperf-max-lag=100", "--netperf-json=out.json")
    result = pytester.runpytest_subprocess(*fast)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 2 and outcomes.get("failed") == 2, result.stdout.str()[-3000:]
    rows = json_report(pytester, "out.json")["rows"]
    verdicts = {(row["test_id"].rsplit("::", 1)[-1], row["budget"]): row for row in rows}
    assert verdicts[("test_h2c_echo", "errors == 0")]["verdict"] == "PASS"
    assert verdicts[("test_grpc_echo", "errors == 0")]["verdict"] == "PASS"
    missing = verdicts[("test_grpc_missing_method", "errors == 0")]
    assert missing["verdict"] == "INVALID"
    assert "grpc-status 12 (UNIMPLEMENTED)" in " ".join(missing["notes"]), missing
    result.stdout.fnmatch_lines(["*streams_per_connection=4 needs HTTP/2*"])
