"""The own-stack example as a pull request would meet it: examples/team_gateway copied into a
fresh repository, its throughput gate run unchanged (PASS), then with the upstream keep-alive
pool removed from the team's nginx config (FAIL naming ``rps_loss``).

Real containers through the team's Compose file (nginx under the example's image mapping,
the echo app); each run is 3 to 8 rounds of 1 s per side.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from docker_helpers import skip_without_compose_stack_parts
from pytester_helpers import caught, json_report, netperf_args

pytestmark = pytest.mark.docker

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KEEPALIVE_LINE = "keepalive 32;"
# up to 8 rounds: with 5, a quiet AMD VM left the dropped pool undecided at 98.1% [90.4%, 99.6%]
# loss (p=0.023 above the last look's 0.019 after Holm)
RUN = netperf_args(3, 8, "1", "0.5", "-m", "netperf", "-k", "throughput", "--netperf-json=results.json")


@pytest.fixture(scope="module", autouse=True)
def needs_docker_compose_and_images() -> None:
    skip_without_compose_stack_parts()


def _team_repo(pytester: pytest.Pytester) -> Path:
    """The example's files as a team's repository: pytest.ini, the Compose file, nginx config, gates."""
    shutil.copy(EXAMPLES / "pytest.ini", pytester.path / "pytest.ini")
    shutil.copytree(EXAMPLES / "team_gateway", pytester.path / "team_gateway")
    return pytester.path / "team_gateway" / "nginx" / "edge.conf"


def _verdicts(pytester: pytest.Pytester) -> dict[str, str]:
    results = json_report(pytester)
    return {row["budget"]: row["verdict"] for row in results["rows"]}


def test_the_unchanged_team_config_passes(pytester: pytest.Pytester) -> None:
    _team_repo(pytester)
    result = pytester.runpytest_subprocess(*RUN)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1)  # the example's other tests are deselected by -k
    verdicts = _verdicts(pytester)
    # no base revision and no stored baseline on this machine: the base budget is NEW, the rest PASS
    assert verdicts.pop("rps >= 0.8x base") == "NEW"
    assert set(verdicts.values()) == {"PASS"}, verdicts


def test_dropping_the_upstream_keepalive_pool_fails_the_gate(pytester: pytest.Pytester) -> None:
    config = _team_repo(pytester)
    text = config.read_text()
    assert KEEPALIVE_LINE in text, f"{config} no longer has {KEEPALIVE_LINE!r}; update this test"
    config.write_text(text.replace(KEEPALIVE_LINE, "# keep-alive pool removed by the pull request"))
    result = pytester.runpytest_subprocess(*RUN)
    (row,) = [row for row in json_report(pytester)["rows"] if row["budget"] == "rps_loss <= 85%"]
    if caught(result, row):
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*FAIL*rps_loss <= 85%*"])
