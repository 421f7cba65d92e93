"""Fixtures shared by the integration tests of the installed package (test_package.py,
test_adoption_path.py): the wheel is built and installed into a fresh venv once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from package_build import build_wheel, built, fresh_venv, index_unreachable, outside_checkout


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
