"""A pull request that renames a service, under ``--netperf-base`` (#41): the head is measured and
judged; the renamed service has no base side, so its budgets against ``base`` are NEW with a
note naming the rename, and the services both revisions have are judged against their twins.

A git repository holding the team_gateway stack on ``main``; the working tree renames its ``app``
service to ``backend`` (Compose file and nginx upstream). Real containers through Compose.
"""

from __future__ import annotations

import pytest
from docker_helpers import skip_without_compose_stack_parts, team_repo
from pytester_helpers import json_report, netperf_args, undecided_for

pytestmark = pytest.mark.docker

GATE = """
import pytest


@pytest.fixture(scope="module")
def stack(netperf_compose):
    return netperf_compose("team_gateway/docker-compose.yml", services=SERVICES)


@pytest.mark.netperf("rps >= 0.5x base", "errors == 0")
def test_backend(netperf, stack):
    netperf.measure(stack.endpoint("backend", port=8080, path="/"), connections=4)


@pytest.mark.netperf("rps >= 0.5x base", "errors == 0")
def test_edge(netperf, stack):
    netperf.measure(stack.endpoint("edge", path="/api/orders", host="api.example.com"), connections=4)
"""
RUN = netperf_args(3, 6, "0.5", "0.2", "-m", "netperf", "--netperf-base=main", "--netperf-json=results.json")


@pytest.fixture(scope="module", autouse=True)
def needs_docker_compose_and_images() -> None:
    skip_without_compose_stack_parts()


@pytest.mark.parametrize("services", [None, ["edge", "backend"]], ids=["all-services", "services="])
def test_a_renamed_service_is_measured_at_head_and_new_against_the_base(
    pytester: pytest.Pytester, services: list[str] | None
) -> None:
    edge_conf = team_repo(pytester.path, f"SERVICES = {services!r}\n" + GATE)
    compose = pytester.path / "team_gateway" / "docker-compose.yml"
    compose.write_text(compose.read_text().replace("  app:\n", "  backend:\n").replace("[app]", "[backend]"))
    edge_conf.write_text(edge_conf.read_text().replace("server app:8080;", "server backend:8080;"))
    result = pytester.runpytest_subprocess(*RUN)
    assert result.ret == 0, result.stdout.str()
    doc = json_report(pytester)
    by_test = {(row["test_id"].rsplit("::", 1)[-1], row["budget"]): row for row in doc["rows"]}
    backend = by_test[("test_backend", "rps >= 0.5x base")]
    assert backend["verdict"] == "NEW", backend
    (note,) = [n for n in backend["notes"] if "renamed" in n]
    assert "service 'backend' is not in docker-compose.yml at the base revision main (" in note
    assert "renamed from 'app'?" in note
    assert by_test[("test_backend", "errors == 0")]["verdict"] == "PASS"  # the head is measured
    (measured,) = doc["results"]["test_gate.py::test_backend"]
    assert measured["series"]["candidate"]["rounds"], "the head's backend was measured"
    # the service both revisions have is judged against its twin: PASS, or on a runner too busy
    # for its rounds (hypervisor steal 27-40% in a CI rehearsal) undecided with that reason
    edge = by_test[("test_edge", "rps >= 0.5x base")]
    assert edge["reference"] == "base" and (edge["verdict"] == "PASS" or undecided_for(edge)), edge
