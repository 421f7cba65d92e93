"""Fixtures the pytester tests share: strict mode off, and one local echo server to gate."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_netperf.errors import DriverNotFoundError
from pytest_netperf.runtime.commands import find_driver_binary
from pytest_netperf.runtime.local import LocalEchoServer


@pytest.fixture
def no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strict mode off by default in the pytester runs (the suite itself may run under CI)."""
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture(scope="module")
def echo_server() -> Iterator[LocalEchoServer]:
    """The Rust driver's echo server on loopback, for a module's tests (skips without the driver)."""
    try:
        find_driver_binary()
    except DriverNotFoundError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"netperf-driver is not installed: {exc}")
    with LocalEchoServer() as server:
        yield server


@pytest.fixture
def echo(echo_server: LocalEchoServer, monkeypatch: pytest.MonkeyPatch, no_ci: None) -> LocalEchoServer:
    """The echo server, named to the pytester runs by ``NETPERF_TEST_URL``, strict mode off."""
    monkeypatch.setenv("NETPERF_TEST_URL", echo_server.url)
    return echo_server
