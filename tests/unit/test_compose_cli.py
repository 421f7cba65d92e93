"""Finding a Compose implementation: NETPERF_COMPOSE, then the v2 plugin, then docker-compose v1.

``which`` and the version runner are plain functions standing in for PATH lookups and
``version --short`` runs; the integration tests run the real binary.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

import pytest

from pytest_netperf.errors import ComposeUnavailable, RuntimeUnavailable
from pytest_netperf.runtime.compose.cli import ComposeCli, candidates, find_compose, parse_version


def _answers(table: dict[tuple[str, ...], tuple[int, str, str]]):
    calls: list[list[str]] = []

    def run(argv: Sequence[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
        calls.append(list(argv))
        code, out, err = table.get(tuple(argv), (127, "", "unknown command"))
        return subprocess.CompletedProcess(list(argv), code, out, err)

    return run, calls


def on_path(*names: str):
    return lambda name: f"/usr/bin/{name}" if name in names else None


def test_parse_version_reads_v1_v2_and_long_forms() -> None:
    assert parse_version("1.29.2") == (1, 29, 2)
    assert parse_version("v2.27.0") == (2, 27, 0)
    assert parse_version("Docker Compose version v2.24.6-desktop.1") == (2, 24, 6)
    assert parse_version("2.5") == (2, 5, 0)
    assert parse_version("docker: unknown command") is None


def test_candidates_order_and_the_environment_variable() -> None:
    assert [c.argv for c in candidates({})] == [("docker", "compose"), ("docker-compose",)]
    (only,) = candidates({"NETPERF_COMPOSE": "  /opt/bin/docker compose "})
    assert only.argv == ("/opt/bin/docker", "compose") and "NETPERF_COMPOSE" in only.source


def test_the_v2_plugin_wins_when_docker_compose_version_works() -> None:
    run, calls = _answers({("docker", "compose", "version", "--short"): (0, "2.27.0\n", "")})
    cli = find_compose({}, on_path("docker", "docker-compose"), run)
    assert cli == ComposeCli(("docker", "compose"), "2.27.0", "docker compose plugin") and cli.major == 2
    assert calls == [["docker", "compose", "version", "--short"]]


def test_v1_when_docker_has_no_compose_plugin() -> None:
    run, _ = _answers(
        {
            ("docker", "compose", "version", "--short"): (1, "", "docker: 'compose' is not a docker command."),
            ("docker-compose", "version", "--short"): (0, "1.29.2\n", ""),
        }
    )
    cli = find_compose({}, on_path("docker", "docker-compose"), run)
    assert cli.argv == ("docker-compose",) and cli.major == 1 and cli.describe().startswith("docker-compose 1.29.2")


def test_netperf_compose_is_the_only_candidate_when_set() -> None:
    run, calls = _answers({("docker-compose", "version", "--short"): (0, "1.29.2\n", "")})
    with pytest.raises(ComposeUnavailable) as caught:
        find_compose({"NETPERF_COMPOSE": "no-such-compose"}, on_path("docker", "docker-compose"), run)
    assert "NETPERF_COMPOSE='no-such-compose': `no-such-compose` not found on PATH" in str(caught.value)
    assert calls == []  # docker-compose was not tried behind the user's back
    assert isinstance(caught.value, RuntimeUnavailable)


def test_nothing_found_says_what_was_tried_and_how_to_install() -> None:
    run, _ = _answers({("docker", "compose", "version", "--short"): (0, "garbage\n", "")})
    with pytest.raises(ComposeUnavailable) as caught:
        find_compose({}, on_path("docker"), run)
    text = str(caught.value)
    assert "docker compose plugin: `docker compose version --short` did not report a version (garbage)" in text
    assert "docker-compose on PATH: `docker-compose` not found on PATH" in text
    assert "apt-get install docker-compose" in text and "NETPERF_COMPOSE" in text
