"""The HTTP/2 and gRPC load options (``http=``, ``streams_per_connection=``, ``grpc=``,
``grpc_message=``): their checks, how they fit together, and the driver flags they become."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust.driver import _check_shape
from pytest_netperf.drivers.rust import RustDriver, grpc_url, http2_argv
from pytest_netperf.errors import DriverError
from pytest_netperf.measure.load_options import LoadOptionError, check_load_option


def test_http_version_values() -> None:
    assert check_load_option("http", "http", "2") == "2"
    assert check_load_option("http", "http", 2) == "2"
    assert check_load_option("http", "http", "1.1") == "1.1"
    assert check_load_option("http", "http", None) is None
    for bad in ("h3", "3", 1, True, "HTTP/2"):
        with pytest.raises(LoadOptionError, match=r"load option http=.*'1\.1' or '2'"):
            check_load_option("http", "http", bad)


def test_streams_per_connection_values() -> None:
    assert check_load_option("streams_per_connection", "streams_per_connection", 8) == 8
    for bad in (0, -1, 1.5, "8", True, 10_001):
        with pytest.raises(LoadOptionError, match="load option streams_per_connection="):
            check_load_option("streams_per_connection", "streams_per_connection", bad)


def test_grpc_method_and_message_values(tmp_path: Path) -> None:
    assert check_load_option("grpc", "grpc", "/netperf.Echo/Echo") == "/netperf.Echo/Echo"
    assert check_load_option("grpc", "grpc", True) is True
    assert check_load_option("grpc", "grpc", False) is None
    for bad in ("netperf.Echo/Echo", "/Echo", "/a/b/c", "/a/b?x=1", 3):
        with pytest.raises(LoadOptionError, match=r"load option grpc=.*/package\.Service/Method"):
            check_load_option("grpc", "grpc", bad)
    assert check_load_option("grpc_message", "grpc_message", bytearray(b"\x0a\x01")) == b"\x0a\x01"
    message = tmp_path / "message.bin"
    message.write_bytes(b"\x0a\x05hello")
    assert check_load_option("grpc_message", "grpc_message", message) == str(message)
    with pytest.raises(LoadOptionError, match="no file"):
        check_load_option("grpc_message", "grpc_message", str(tmp_path / "missing.bin"))
    with pytest.raises(LoadOptionError, match="at most 4 MiB"):
        check_load_option("grpc_message", "grpc_message", b"x" * (4 * 1024 * 1024 + 1))
    with pytest.raises(LoadOptionError, match="load option grpc_message="):
        check_load_option("grpc_message", "grpc_message", 42)


def test_options_that_do_not_fit_together_are_named() -> None:
    with pytest.raises(LoadOptionError, match="streams_per_connection=8 needs HTTP/2"):
        LoadShape(streams_per_connection=8)
    with pytest.raises(LoadOptionError, match="grpc_message= needs grpc="):
        LoadShape(grpc_message=b"\x00")
    with pytest.raises(LoadOptionError, match="grpc= runs over HTTP/2"):
        LoadShape(grpc=True, http="1.1")
    with pytest.raises(LoadOptionError, match=r"new_connection_per_request=True is HTTP/1\.1 only"):
        LoadShape(http="2", new_connection_per_request=True)
    with pytest.raises(LoadOptionError, match="drop method= and body_size="):
        LoadShape(grpc=True, body_size=10)
    assert LoadShape(grpc=True, streams_per_connection=4).http2
    assert not LoadShape().http2


def test_driver_flags() -> None:
    driver = RustDriver(binary="/bin/true")
    shape = LoadShape(http="2", streams_per_connection=8)
    argv = driver.argv("http://127.0.0.1:8080/x", shape)
    assert argv[2] == "http://127.0.0.1:8080/x"
    assert argv[-3:] == ["--http2", "--streams-per-connection", "8"]
    assert http2_argv(LoadShape(http="2")) == ["--http2"]
    assert http2_argv(LoadShape()) == []
    assert http2_argv(LoadShape(http="1.1")) == []
    grpc = LoadShape(grpc="/netperf.Echo/Echo", grpc_message=b"\x0a\x01hi")
    argv = driver.argv("https://10.0.0.2:443/old/path?delay=1ms", grpc)
    assert argv[2] == "https://10.0.0.2:443/netperf.Echo/Echo"
    assert argv[-3:] == ["--grpc", "--grpc-message-hex", "0a016869"]
    assert "--http2" not in argv, "--grpc implies HTTP/2"
    from_url = driver.argv("http://h:1/pkg.S/M", replace(grpc, grpc=True, grpc_message="m.bin"))
    assert from_url[2] == "http://h:1/pkg.S/M"
    assert from_url[-3:] == ["--grpc", "--grpc-message-file", "m.bin"]
    assert grpc_url("http://[::1]:80/a?b=1", "/p.S/M") == "http://[::1]:80/p.S/M"
    assert "HTTP/2, 8 streams per connection" in shape.describe_request("http://h/")


def test_locust_refuses_http2_and_grpc() -> None:
    for shape in (LoadShape(http="2"), LoadShape(grpc=True)):
        with pytest.raises(DriverError, match=r"HTTP/1\.1 only"):
            _check_shape(shape)
    _check_shape(LoadShape())
