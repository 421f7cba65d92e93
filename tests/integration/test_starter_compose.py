"""``netperf init`` through the real Compose ``config``: the command's messages on bad input,
gates that collect (a real pytest run), and the CI recipes in examples/ci/, which are the ones
``netperf init`` writes for examples/team_gateway; ``python tests/integration/test_starter_compose.py``
writes them again after a change to the templates.

The survey of a given config and the rendered files are tested in tests/unit/test_starter.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_netperf.cli.main import main
from pytest_netperf.errors import NetperfError
from pytest_netperf.runtime.compose.cli import find_compose
from pytest_netperf.starter import render
from pytest_netperf.starter.survey import survey

REPO = Path(__file__).resolve().parents[2]
TEAM_GATEWAY = REPO / "examples" / "team_gateway"


def _compose_or_skip() -> None:
    try:
        find_compose()
    except NetperfError as exc:
        pytest.skip(f"no Compose implementation to run `config`: {exc}")


def _init(root: Path, *args: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(root)
    code = main(["init", *args])
    said = capsys.readouterr()
    return f"{code}\n{said.out}{said.err}"


@pytest.mark.parametrize(
    ("compose", "expected"),
    [
        (None, "no Compose file in .* \\(looked for compose.yaml, compose.yml"),
        ("services: [oops\n", "invalid Compose file .*compose.yml: .* config` said"),
        (
            "services:\n  db:\n    image: postgres:16\n",
            "has no service that serves HTTP .* its services: db \\(postgres:16\\)",
        ),
        (
            "services:\n  edge:\n    image: nginx:1.27\n",
            "service 'edge' neither publishes nor exposes a port",
        ),
    ],
)
def test_init_on_bad_input_names_the_file_and_service_and_writes_nothing(
    tmp_path: Path,
    compose: str | None,
    expected: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _compose_or_skip()
    if compose is not None:
        (tmp_path / "compose.yml").write_text(compose)
    out = _init(tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert out.startswith("1\n"), out
    assert re.search(expected, out), out
    assert sorted(p.name for p in tmp_path.iterdir()) == (["compose.yml"] if compose else [])


def test_init_writes_gates_that_collect_and_refuses_to_overwrite_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _compose_or_skip()
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "edge.conf").write_text("server { listen 80; }\n")
    (tmp_path / "docker-compose.yml").write_text(
        "services:\n  edge:\n    image: nginx:1.27\n    ports: ['8080:80']\n"
        "    volumes: ['./conf/edge.conf:/etc/nginx/conf.d/default.conf:ro']\n"
    )
    out = _init(tmp_path, "--ci", "github", capsys=capsys, monkeypatch=monkeypatch)
    assert out.startswith("0\n"), out
    assert "gating edge (nginx:1.27), HTTP on port 80" in out
    assert "service edge (nginx:1.27): ports 80; nginx proxy" in out
    workflow = yaml.safe_load((tmp_path / ".github/workflows/netperf.yml").read_text())
    assert workflow[True]["pull_request"]["paths"] == ["docker-compose.yml", "conf/**", "tests/netperf/**"]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "netperf", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "3 tests collected" in collected.stdout, collected.stdout + collected.stderr
    before = (tmp_path / "pytest.ini").read_text()
    again = _init(tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert again.startswith("1\n") and "would overwrite tests/netperf/test_netperf_gates.py" in again, again
    assert (tmp_path / "pytest.ini").read_text() == before


def team_gateway_plan() -> render.StarterPlan:
    """The plan ``netperf init`` makes for examples/team_gateway as a repository's root."""
    stack = survey(TEAM_GATEWAY / "docker-compose.yml")
    return render.StarterPlan(survey=stack, compose_path="docker-compose.yml", watched=("nginx",))


EXAMPLES = {
    "github-actions.yml": render.github_workflow,
    "github-actions-comment.yml": render.github_comment_workflow,
    "gitlab-ci.yml": render.gitlab_job,
}


def test_the_ci_recipes_in_examples_are_what_init_writes() -> None:
    _compose_or_skip()
    plan = team_gateway_plan()
    for name, renderer in EXAMPLES.items():
        assert (REPO / "examples" / "ci" / name).read_text() == renderer(plan), (
            f"examples/ci/{name} differs from what netperf init writes: "
            "run python tests/integration/test_starter_compose.py"
        )


if __name__ == "__main__":
    for name, renderer in EXAMPLES.items():
        (REPO / "examples" / "ci" / name).write_text(renderer(team_gateway_plan()))
        print(f"wrote examples/ci/{name}")
