"""Pull-request gates end to end: a small git repository holding a team's Compose stack (nginx in
front of the echo app), its base committed on ``main``, and the working tree changed as a pull
request would change it. ``--netperf-base main`` stands the stack up twice (head from the
working tree, base from main's files) and judges ``rps >= 0.7x base`` on interleaved pairs.

Real containers through Compose; each run is 3 to 10 rounds of 1 s per side.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docker_helpers import git, skip_without_compose_stack_parts
from docker_helpers import team_repo as team_repo_at
from pytester_helpers import caught, json_report, netperf_args, undecided_for

pytestmark = pytest.mark.docker

GATE = """
import pytest


@pytest.mark.netperf("rps >= 0.7x base", "errors == 0")
def test_edge_against_base(netperf, netperf_compose):
    stack = netperf_compose("team_gateway/docker-compose.yml")
    netperf.measure(stack.endpoint("edge", path="/api/orders", host="api.example.com"), connections=32)
"""
RUN = netperf_args(3, 10, "1", "0.5", "-m", "netperf", "--netperf-base=main", "--netperf-json=results.json")


@pytest.fixture(scope="module", autouse=True)
def needs_docker_compose_and_images() -> None:
    skip_without_compose_stack_parts()


def team_repo(pytester: pytest.Pytester) -> Path:
    """The base on ``main``: the example's Compose file and nginx config plus the gate; returns the config."""
    return team_repo_at(pytester.path, GATE)


def rows(pytester: pytest.Pytester) -> dict[str, dict]:
    results = json_report(pytester)
    return {row["budget"]: row for row in results["rows"]}


def test_a_comment_passes_and_dropping_keepalive_fails_against_the_base(pytester: pytest.Pytester) -> None:
    config = team_repo(pytester)
    config.write_text(config.read_text() + "\n# tuned by the pull request: nothing but this comment\n")
    commented = pytester.runpytest_subprocess(*RUN)
    assert commented.ret == 0, commented.stdout.str()
    row = rows(pytester)["rps >= 0.7x base"]
    assert row["reference"] == "base" and (row["verdict"] == "PASS" or undecided_for(row)), row
    assert "nginx/edge.conf +2 -0" in row["facts"]["candidate"]["vs base"]
    commented.stdout.fnmatch_lines(
        ['netperf: base revision main (* "base"); head: the working tree with * uncommitted change(s)']
    )

    text = config.read_text()
    assert "keepalive 32;" in text
    config.write_text(text.replace("keepalive 32;", "# upstream keep-alive pool dropped"))
    dropped = pytester.runpytest_subprocess(*RUN)
    row = rows(pytester)["rps >= 0.7x base"]
    assert row["reference"] == "base"
    if caught(dropped, row):
        dropped.stdout.fnmatch_lines(["*FAIL: 'rps >= 0.7x base': 0.*x*"])


def test_a_stack_that_is_not_at_the_base_is_new_and_an_unknown_ref_is_named(pytester: pytest.Pytester) -> None:
    team_repo(pytester)
    git(pytester.path, "mv", "team_gateway", "edge_stack")
    git(pytester.path, "commit", "-q", "-m", "rename")
    git(pytester.path, "mv", "edge_stack", "team_gateway")  # the working tree has it where the test looks
    new = pytester.runpytest_subprocess(*[arg.replace("=main", "=HEAD") for arg in RUN])
    assert new.ret == 0, new.stdout.str()
    row = rows(pytester)["rps >= 0.7x base"]
    assert row["verdict"] == "NEW"
    assert any("does not exist at the base revision HEAD" in note for note in row["notes"])

    unknown = pytester.runpytest_subprocess(*[arg.replace("=main", "=origin/nope") for arg in RUN])
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR  # said when pytest starts, before any stack
    unknown.stderr.fnmatch_lines(["*--netperf-base: unknown revision 'origin/nope'*git fetch origin nope*"])
    assert "netperf docker topology startup" not in unknown.stdout.str()


def test_skip_unchanged_skips_without_standing_anything_up_even_when_strict(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    team_repo(pytester)
    (pytester.path / "README.md").write_text("a change elsewhere in the repository\n")
    monkeypatch.setenv("CI", "true")  # strict: a missing part would fail; this skip is asked for
    result = pytester.runpytest_subprocess(*RUN, "--netperf-base-skip-unchanged", "-rs")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*team_gateway/docker-compose.yml and the files it uses are the same at the base*"])
    assert "netperf docker topology startup" not in result.stdout.str()


TOPOLOGY_GATE = """
import pytest
from pytest_netperf import Node, Target, Topology

APP = Node("app", "container", 8080, image="pytest-netperf/echo:local",
           command=("netperf-driver", "echo", "--listen", "0.0.0.0:8080"))
EDGE = Node("edge", "nginx", 80, upstreams=("app",), image="nginx:1.27", config="team_gateway/nginx/edge.conf",
            config_path="/etc/nginx/conf.d/default.conf")


@pytest.mark.netperf("rps >= 0.7x base")
def test_file_backed_edge_against_base(netperf, netperf_topology):
    running = netperf_topology(Topology("team-edge", (APP, EDGE), (Target("api", "edge", 80, "/api/orders"),)))
    netperf.measure(running.endpoint("api"), connections=32)
"""


def test_a_file_backed_topology_is_stood_up_from_the_base_too(pytester: pytest.Pytester) -> None:
    config = team_repo(pytester)
    (pytester.path / "test_gate.py").write_text(TOPOLOGY_GATE)
    config.write_text(config.read_text().replace("keepalive 32;", "# upstream keep-alive pool dropped"))
    result = pytester.runpytest_subprocess(*RUN)
    row = rows(pytester)["rps >= 0.7x base"]
    assert row["reference"] == "base"
    caught(result, row)
    assert "nginx/edge.conf +1 -1" in row["facts"]["candidate"]["vs base"]
    result.stdout.fnmatch_lines(["*team-edge*team-edge-base*"])  # both started (startup times line)


def test_a_base_whose_stack_fails_to_start_is_invalid_with_its_log_never_a_pass(pytester: pytest.Pytester) -> None:
    config = team_repo(pytester)
    good = config.read_text()
    config.write_text(good.replace("keepalive 32;", "keepalive_pool 32;"))  # not an nginx directive
    git(pytester.path, "commit", "-q", "-am", "base with a broken edge config")
    config.write_text(good)  # the pull request fixes it
    result = pytester.runpytest_subprocess(*RUN)
    assert result.ret == 1, result.stdout.str()
    by_budget = rows(pytester)
    assert by_budget["rps >= 0.7x base"]["verdict"] == "INVALID"
    assert by_budget["errors == 0"]["verdict"] == "PASS"  # the head itself was measured and judged
    notes = " ".join(by_budget["rps >= 0.7x base"]["notes"])
    assert "base side INVALID" in notes and "did not come up" in notes
    assert "keepalive_pool" in notes  # nginx's own complaint, from the base side's log
