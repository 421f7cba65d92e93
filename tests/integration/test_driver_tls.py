"""The real `netperf-driver` over TLS: the Python driver against the TLS echo server, with
certificates of the per-session test CA (trustme)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.errors import DriverError, DriverNotFoundError
from pytest_netperf.measure.load_options import LoadOptionError, check_load_option
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer
from pytest_netperf.runtime.test_ca import SessionCA
from pytest_netperf.tls_options import TlsOptions

SCHEMA = json.loads((Path(__file__).parents[2] / "driver" / "schema.json").read_text())

try:
    BINARY = find_driver_binary()
except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(f"netperf-driver binary not available: {exc}", allow_module_level=True)

SHAPE = LoadShape(connections=2, threads=1, duration_s=0.5, warmup_s=0.1, timeout_s=2.0)


@pytest.fixture(scope="module")
def ca() -> Iterator[SessionCA]:
    with SessionCA() as authority:
        yield authority


def _echo(ca: SessionCA, mutual: bool = False) -> Iterator[str]:
    """A TLS echo server on loopback; yields its https:// base URL."""
    with LocalEchoServer(binary=BINARY, threads=1, tls=ca, mutual=mutual) as server:
        yield server.url + "/"


@pytest.fixture
def tls_echo(ca: SessionCA) -> Iterator[str]:
    yield from _echo(ca)


@pytest.fixture
def mtls_echo(ca: SessionCA) -> Iterator[str]:
    yield from _echo(ca, mutual=True)


def test_session_ca_writes_and_removes_its_files() -> None:
    with SessionCA(server_names=("shop.example",)) as authority:
        files = authority.files
        for path in (files.ca, files.server_cert, files.server_key, files.client_cert, files.client_key):
            assert path.read_text().startswith("-----BEGIN"), path
        assert files.server_key.stat().st_mode & 0o077 == 0
        folder = authority.folder
    assert not folder.exists()
    with pytest.raises(ValueError):
        SessionCA(key_type="dsa")


def test_keep_alive_and_handshake_per_request_over_tls(tls_echo: str, ca: SessionCA) -> None:
    driver = RustDriver(binary=BINARY)
    shape = replace(SHAPE, tls=TlsOptions(ca=str(ca.files.ca), version="1.3"))
    argv = driver.argv(tls_echo, shape)
    assert argv[argv.index("--ca") + 1] == str(ca.files.ca)
    assert "--tls-version" in argv
    result = driver.run(tls_echo, shape)
    assert result.ok > 0 and not result.errors
    assert result.config["protocol"] == "https"
    per_request = driver.run(tls_echo, replace(shape, new_connection_per_request=True))
    assert per_request.ok > 0 and not per_request.errors
    assert per_request.sockets_opened >= per_request.ok


def test_json_document_reports_the_handshakes(tls_echo: str, ca: SessionCA) -> None:
    argv = [BINARY, "http", tls_echo, "--ca", str(ca.files.ca), "--tls-resumption", "off"]
    argv += ["--new-connection-per-request", "-n", "20", "-t", "1", "--json"]
    doc = json.loads(subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout)
    jsonschema.validate(doc, SCHEMA)
    tls = doc["tls"]
    assert (tls["version"], tls["alpn"], tls["resumed"]) == ("TLSv1.3", "http/1.1", 0)
    assert tls["handshakes"] == doc["summary"]["sockets_opened"] == 21  # the probe and 20 requests


def test_mutual_tls(mtls_echo: str, ca: SessionCA) -> None:
    driver = RustDriver(binary=BINARY)
    files = ca.files
    tls = TlsOptions(ca=str(files.ca), cert=str(files.client_cert), key=str(files.client_key))
    assert driver.run(mtls_echo, replace(SHAPE, tls=tls)).ok > 0
    with pytest.raises(DriverError, match=r"exit 6.*requires a client certificate"):
        driver.run(mtls_echo, replace(SHAPE, tls=TlsOptions(ca=str(files.ca))))


def test_untrusted_certificate_is_a_clear_error(tls_echo: str) -> None:
    with SessionCA() as other:
        shape = replace(SHAPE, tls=TlsOptions(ca=str(other.files.ca)))
        with pytest.raises(DriverError, match=r"failed the TLS handshake \(exit 6\).*unknown CA"):
            RustDriver(binary=BINARY).run(tls_echo, shape)


def test_tls_load_option_is_checked() -> None:
    assert check_load_option("tls", "tls", {"ca": Path("ca.pem"), "version": "1.2"}) == TlsOptions(
        ca="ca.pem", version="1.2"
    )
    for bad in ({"versions": "1.2"}, {"version": "1.1"}, {"cert": "c.pem"}, "ca.pem"):
        with pytest.raises(LoadOptionError, match="load option tls="):
            check_load_option("tls", "tls", bad)
    assert TlsOptions(insecure=True, resumption=False).argv() == ["--insecure", "--tls-resumption", "off"]
    shape = replace(SHAPE, tls=TlsOptions(insecure=True))
    assert "--insecure" not in RustDriver(binary=BINARY).argv("http://127.0.0.1:9/", shape)
