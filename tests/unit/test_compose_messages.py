"""What Compose's output and a stack's shape tell the user (#41): an unset ``${VAR}`` named in a
warning instead of swallowed, and a service on the host network with a way forward."""

from __future__ import annotations

from pathlib import Path

from pytest_netperf.runtime.compose import commands, diagnostics

V1_STDERR = """\
WARNING: The EDGE_TAG variable is not set. Defaulting to a blank string.
WARNING: The UPSTREAM variable is not set. Defaulting to a blank string.
WARNING: The EDGE_TAG variable is not set. Defaulting to a blank string.
"""
V2_STDERR = (
    'time="2026-11-27T10:00:00Z" level=warning '
    'msg="The \\"API_KEY\\" variable is not set. Defaulting to a blank string."\n'
)


def test_unset_variables_are_read_from_both_compose_versions_output() -> None:
    assert commands.unset_variables(V1_STDERR) == ["EDGE_TAG", "UPSTREAM"]
    assert commands.unset_variables(V2_STDERR) == ["API_KEY"]
    assert commands.unset_variables("Creating network x\n") == []


def test_the_unset_variable_warning_names_the_variables_and_the_ways_to_set_them() -> None:
    text = commands.unset_variables_message(Path("/repo/docker-compose.yml"), ["EDGE_TAG", "UPSTREAM"])
    assert text.startswith("Compose file /repo/docker-compose.yml: variable(s) EDGE_TAG, UPSTREAM not set")
    assert "blank string" in text and "env={'EDGE_TAG': ...}" in text and ".env" in text


def test_a_service_on_the_host_network_is_told_how_to_be_measured() -> None:
    text = diagnostics.host_network_message("edge", 8080, Path("/repo/compose.yml"))
    assert "service 'edge' of /repo/compose.yml runs with network_mode: host" in text
    assert "netperf.measure('http://127.0.0.1:8080/')" in text
    assert "remove network_mode: host" in text
