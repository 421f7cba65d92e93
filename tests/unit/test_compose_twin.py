"""The base twin of a stack whose services differ from the base revision's (#41): a pull request
that renames a service still measures the head; the renamed service's base budgets are NEW with
a note naming the rename, and the twin starts what the base revision has."""

from __future__ import annotations

from pathlib import Path

from pytest_netperf.runtime.compose import twin
from pytest_netperf.topology.resources import Resources


def test_the_twin_starts_the_head_services_the_base_revision_has() -> None:
    base = ["app", "edge"]
    assert twin.twin_services(None, ["backend", "edge"], base) == (None, ["backend"])
    assert twin.twin_services(("backend", "edge"), ["backend", "edge"], base) == (("edge",), ["backend"])
    assert twin.twin_services(("backend",), ["backend"], base) == ((), ["backend"])
    # the head's edge depends on the renamed backend: the base's edge brings its own app
    assert twin.twin_services(("edge",), ["backend", "edge"], base) == (("edge",), ["backend"])


def test_the_twin_gets_the_limits_of_the_services_it_has() -> None:
    given = (("backend", Resources(cpus=1.0)), ("edge", Resources(memory="64m")))
    assert twin.twin_resources(given, ["app", "edge"]) == (("edge", Resources(memory="64m")),)


def test_the_note_of_a_renamed_service_names_the_rename_and_the_revision() -> None:
    note = twin.missing_note("backend", ["backend", "edge"], ["app", "edge"], "main (3f2a1c9)", Path("compose.yml"))
    assert note.startswith("service 'backend' is not in compose.yml at the base revision main (3f2a1c9)")
    assert "renamed from 'app'?" in note and "(its services: app, edge)" in note
    assert note.endswith("nothing to compare with, recorded as NEW")
    added = twin.missing_note("cache", ["cache", "edge"], ["edge"], "main (3f2a1c9)", Path("compose.yml"))
    assert "new in this change" in added and "renamed" not in added
