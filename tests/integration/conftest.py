"""Fixtures shared by integration tests: the installed package's (test_package.py,
test_adoption_path.py: the wheel is built and installed into a fresh venv once per session)
and a Docker session of the tests that start containers themselves (``docker_session``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient
from docker_helpers import session_leftovers
from package_build import build_wheel, built, fresh_venv, index_unreachable, outside_checkout

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.runtime.cleanup import clean_session


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout, outside it."""
    return built(build_wheel, outside_checkout(tmp_path_factory.mktemp("wheel")))


@pytest.fixture(scope="session")
def venv_bin(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    """The bin/ of a fresh venv (no system site packages) with the wheel installed."""
    reason = index_unreachable()
    if reason:
        pytest.skip(reason)
    return fresh_venv(outside_checkout(tmp_path_factory.mktemp("venv")) / "venv", wheel)


@pytest.fixture
def docker_session() -> Iterator[tuple[DockerClient, str, str]]:
    """A Docker client, a session id and a network of that session (``netperf-<session id>``);
    everything labelled with the session is removed after, and the test fails if any remains."""
    client = docker_client()
    session_id = f"itsession{uuid.uuid4().hex[:8]}"
    network = f"netperf-{session_id}"
    client.networks.create(network, labels={L.SESSION: session_id})
    try:
        yield client, session_id, network
    finally:
        clean_session(session_id, client)
        assert session_leftovers(client, session_id) == []
