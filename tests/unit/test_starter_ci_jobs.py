"""The CI jobs ``netperf init`` writes, read as YAML: GitHub's two workflows (the gates with a
read-only token; the comment from ``workflow_run`` with write access) and the order of the
GitLab job's script, whose every command is one the package has.

What runs them (actionlint over the workflows, the comment script under node, the GitLab
script under a shell) is in tests/integration/test_starter_ci_lint.py.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from pytest_netperf.cli.main import build_parser
from pytest_netperf.plugin.options import IMAGE_OPTION, OPTIONS
from pytest_netperf.report.markdown import COMMENT_MARKER
from pytest_netperf.starter import files, render
from pytest_netperf.starter.survey import classify

REPO = Path(__file__).resolve().parents[2]
CONFIG = {
    "services": {"edge": {"image": "nginx:1.27", "expose": ["80"]}, "app": {"image": "app:1", "expose": ["8080"]}}
}
#: The actions the workflows may use, each pinned to a major version.
KNOWN_ACTIONS = {
    "actions/checkout",
    "actions/setup-python",
    "actions/upload-artifact",
    "actions/download-artifact",
    "actions/github-script",
}


def _plan() -> render.StarterPlan:
    return render.StarterPlan(survey=classify(CONFIG, Path("compose.yml")), compose_path="compose.yml")


def _on(workflow: dict) -> dict:
    return workflow[True]  # YAML 1.1: the key `on` reads as True


def _uses(workflow: dict) -> list[str]:
    return [step["uses"] for job in workflow["jobs"].values() for step in job["steps"] if "uses" in step]


def test_the_gate_workflow_needs_no_write_permission_and_keeps_the_comment_as_an_artifact() -> None:
    workflow = yaml.safe_load(render.github_workflow(_plan()))
    assert workflow["name"] == render.GITHUB_WORKFLOW_NAME
    assert workflow["permissions"] == {"contents": "read"}
    trigger = _on(workflow)["pull_request"]
    assert trigger["types"] == ["opened", "synchronize", "reopened", "labeled", "unlabeled"]
    steps = workflow["jobs"]["netperf"]["steps"]
    names = [step.get("name", step.get("uses")) for step in steps]
    assert names.index("base against head") < names.index("the pull request's number, for the comment")
    gate = next(step for step in steps if step.get("name") == "base against head")
    assert gate["env"]["NETPERF_ACCEPT"] == (
        "${{ contains(github.event.pull_request.labels.*.name, 'netperf:accept-regression') "
        "&& 'label netperf:accept-regression' || '' }}"
    )
    number = next(step for step in steps if step.get("name") == "the pull request's number, for the comment")
    assert number["if"] == "always()" and number["env"]["PR_NUMBER"] == "${{ github.event.pull_request.number }}"
    assert f"> {render.REPORT_DIR}/{render.PR_NUMBER_FILE}" in number["run"]
    upload = steps[-1]
    assert upload["uses"] == "actions/upload-artifact@v6" and upload["if"] == "always()"
    assert upload["with"]["name"] == render.ARTIFACT and upload["with"]["path"] == f"{render.REPORT_DIR}/"
    # the report the artifact carries is the one the pytest settings write
    assert render.ini_settings()["netperf_markdown"] == f"{render.REPORT_DIR}/{render.REPORT_MARKDOWN}"
    assert "gh pr comment" not in render.github_workflow(_plan())


def test_the_comment_workflow_runs_on_the_gates_and_alone_may_write() -> None:
    text = render.github_comment_workflow(_plan())
    workflow = yaml.safe_load(text)
    assert _on(workflow) == {"workflow_run": {"workflows": [render.GITHUB_WORKFLOW_NAME], "types": ["completed"]}}
    assert workflow["permissions"] == {"actions": "read", "pull-requests": "write"}
    (job,) = workflow["jobs"].values()
    assert "github.event.workflow_run.event == 'pull_request'" in job["if"]
    download, post = job["steps"]
    assert download["uses"] == "actions/download-artifact@v7"
    assert download["with"] == {
        "name": render.ARTIFACT,
        "path": render.REPORT_DIR,
        "run-id": "${{ github.event.workflow_run.id }}",
        "github-token": "${{ github.token }}",
    }
    assert post["uses"] == "actions/github-script@v8"
    assert post["env"]["NETPERF_MARKER"] == COMMENT_MARKER
    script = post["with"]["script"]
    for call in ("pulls.get", "issues.listComments", "issues.updateComment", "issues.createComment"):
        assert f"github.rest.{call}" in script
    assert "pull.head.sha !== run.head_sha" in script  # the number in the artifact is checked
    assert f"{render.REPORT_DIR}/{render.REPORT_MARKDOWN}" in script.replace("${folder}", render.REPORT_DIR)
    assert "${{" not in script  # nothing of the event is pasted into the script


def test_the_workflows_use_only_well_known_actions_pinned_to_a_major_version() -> None:
    for renderer in (render.github_workflow, render.github_comment_workflow):
        for uses in _uses(yaml.safe_load(renderer(_plan()))):
            action, _, version = uses.partition("@")
            assert action in KNOWN_ACTIONS and re.fullmatch(r"v\d+", version), uses


def test_init_plans_both_github_workflows_and_says_what_the_second_does(tmp_path: Path) -> None:
    planned = files.plan_files(tmp_path, _plan(), ["github", "gitlab"], force=False)
    assert [f.path for f in planned.files] == [
        "tests/netperf/test_netperf_gates.py",
        ".github/workflows/netperf.yml",
        ".github/workflows/netperf-comment.yml",
        "ci/netperf.gitlab-ci.yml",
        "pytest.ini",
    ]
    github = next(note for note in planned.notes if note.startswith("GitHub: "))
    assert ".github/workflows/netperf-comment.yml posts them as one pull-request comment" in github
    assert "merge both there first" in github
    assert any(note.startswith("GitLab: add `include: [{local: ci/netperf.gitlab-ci.yml}]`") for note in planned.notes)
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "netperf-comment.yml").write_text("ours\n")
    with pytest.raises(files.InitError, match=r"overwrite \.github/workflows/netperf-comment\.yml"):
        files.plan_files(tmp_path, _plan(), ["github"], force=False)


def test_the_examples_are_split_the_same_way() -> None:
    gates = yaml.safe_load((REPO / "examples" / "ci" / "github-actions.yml").read_text())
    comment = yaml.safe_load((REPO / "examples" / "ci" / "github-actions-comment.yml").read_text())
    assert gates["permissions"] == {"contents": "read"}
    assert _on(comment)["workflow_run"]["workflows"] == [gates["name"]]
    assert comment == yaml.safe_load(render.github_comment_workflow(_plan()))  # the same for every stack


# ------------------------------------------------------------------ GitLab
def _gitlab_script() -> list[str]:
    return yaml.safe_load(render.gitlab_job(_plan()))["netperf"]["script"]


def _commands(script: list[str]) -> list[list[str]]:
    """The simple commands of the script's items, split as a shell would (lines of a block, ``&&``
    and ``||`` chains; control words such as ``if`` and ``then`` left out)."""
    commands = []
    for item in script:
        for line in item.splitlines():
            line = line.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            for part in re.split(r"&&|\|\||;|\bthen\b|\belse\b", line):
                words = shlex.split(part.strip(" {}()"), comments=True) if part.strip(" {}()") else []
                while words and words[0] in ("if", "fi", "!", "command", "case", "esac", "in", "-v"):
                    words = words[1:]
                if words:
                    commands.append(words)
    return commands


def test_the_gitlab_script_runs_its_steps_in_order() -> None:
    script = _gitlab_script()

    def first(pattern: str) -> int:
        return next(i for i, item in enumerate(script) if re.search(pattern, item))

    fetch, venv, install = first(r"^git fetch origin"), first(r"python3 -m venv"), first(r"pip install")
    realtime, images = first(r"netperf-driver"), first(r"\bnetperf images build\b")
    accept, gates = first(r"NETPERF_ACCEPT="), first(r"python -m pytest")
    # the base branch and the package before anything uses them; the gates last
    assert fetch < venv < install < realtime < gates
    assert install < images < gates and accept < gates == len(script) - 1
    assert '--netperf-base "origin/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME"' in script[gates]
    # GitLab runs a job's script items in one shell: what an item exports reaches the gates
    assert 'export PYTEST_ADDOPTS="$PYTEST_ADDOPTS --netperf-realtime"' in script[realtime]
    assert 'export PYTEST_ADDOPTS="$PYTEST_ADDOPTS --netperf-image' in script[images]
    assert '*,netperf:accept-regression,*) export NETPERF_ACCEPT="label netperf:accept-regression"' in script[accept]
    assert ". .netperf-venv/bin/activate" in script[venv]  # the later items' python is the venv's
    assert all("exit" not in shlex.split(item, comments=True) for item in script)


def test_every_command_of_the_gitlab_script_is_one_the_package_has() -> None:
    commands = _commands(_gitlab_script())
    netperf = [words for words in commands if words[0] == "netperf"]
    assert netperf == [["netperf", "images", "build", "--only", "nginx"]]
    parser = build_parser()
    for words in netperf:
        parsed = parser.parse_args(words[1:])  # SystemExit (a failed test) for a command it lacks
        assert parsed.command == words[1]
    options = {f"--netperf-{o.suffix}" for o in OPTIONS} | {IMAGE_OPTION}
    pytest_runs = [words for words in commands if words[:3] == ["python", "-m", "pytest"]]
    assert len(pytest_runs) == 1
    used = [w for words in commands for w in words if w.startswith("--netperf-")]
    used += re.findall(r"--netperf-[a-z-]+", " ".join(_gitlab_script()))
    assert used and set(used) <= options, set(used) - options
    assert {"--netperf-base", "--netperf-machine-class", "--netperf-realtime", "--netperf-image"} <= set(used)
