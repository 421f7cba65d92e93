"""Finding this machine's real Compose implementation and running it (the lookup's rules are
tested with stand-in functions in tests/unit/test_compose_cli.py)."""

from __future__ import annotations

import pytest

from pytest_netperf.errors import ComposeUnavailable
from pytest_netperf.runtime.compose.cli import find_compose, parse_version


def test_the_real_lookup_finds_a_working_compose_or_says_why() -> None:
    try:
        cli = find_compose()
    except ComposeUnavailable as exc:
        pytest.skip(f"no Compose here: {exc}")
    assert cli.major in (1, 2) and parse_version(cli.version) is not None
    assert cli.run(["version", "--short"], timeout_s=30).stdout.strip() == cli.version
