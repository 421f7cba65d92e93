"""The scripts inside the CI jobs ``netperf init`` writes, run by the programs that run them in
CI, with everything they call stood in for. No Docker, no network.

- The GitHub comment workflow's ``actions/github-script`` script under ``node``, with a fake
  ``github`` client: it adds one comment, edits it on the next run (found by the marker),
  posts nothing for a pull request whose head moved on, says so when the run left no report,
  and cuts a report too long for a comment.
- The GitLab job's script items in one shell, in order, as GitLab runs them: stubs on PATH log
  every command, so the test sees what ran, in which order, with which exported variables
  (both image branches; the accept label).
- The GitHub gate workflow's ``run:`` steps parse (``bash -n``), and the step that keeps the
  pull request's number writes it where the comment workflow reads it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from github_script import HEAD_SHA, node_or_none, posted, run_comment_step

from pytest_netperf.report.markdown import COMMENT_MARKER, markdown
from pytest_netperf.report.rows import ReportRow
from pytest_netperf.starter import render
from pytest_netperf.starter.survey import classify

CONFIG = {"services": {"edge": {"image": "nginx:1.27", "ports": ["8088:80"]}, "app": {"image": "app:1"}}}


def _plan() -> render.StarterPlan:
    return render.StarterPlan(survey=classify(CONFIG, Path("compose.yml")), compose_path="compose.yml")


# ------------------------------------------------------------------ the comment script
@pytest.fixture
def comment(tmp_path: Path) -> Any:
    """``post(report, number, comments, head_sha)``: run the comment step in a folder holding the
    downloaded artifact; the calls the script made."""
    if node_or_none() is None:
        pytest.skip("node is not on PATH: the comment workflow's script (actions/github-script) runs under node")
    workflow = render.github_comment_workflow(_plan())

    def post(
        report: str | None, number: str | None = "7\n", comments: list | None = None, head_sha: str = HEAD_SHA
    ) -> list:
        return run_comment_step(workflow, tmp_path, report, number, comments, head_sha)

    return post


def _report() -> str:
    row = ReportRow("tests/netperf/test_gates.py::test_edge_latency", "p90 <= 1.1x base", "base", "", "", "FAIL", 9)
    return markdown([row], run_url="")


def test_the_first_run_adds_the_comment_and_later_ones_edit_it(comment: Any) -> None:
    report = _report()
    calls = comment(report)
    assert calls[0] == ["pulls.get", {"owner": "team", "repo": "gateway", "pull_number": 7}]
    assert posted(calls) == [["createComment", {"owner": "team", "repo": "gateway", "issue_number": 7, "body": report}]]
    previous = [
        {"id": 1, "user": {"type": "User"}, "body": f"quoting: {COMMENT_MARKER}"},  # a person's: never edited
        {"id": 2, "user": {"type": "Bot"}, "body": "another bot"},
        {"id": 3, "user": {"type": "Bot"}, "body": f"old report\n{COMMENT_MARKER}\n"},
    ]
    calls = comment(report, comments=previous)
    assert posted(calls) == [["updateComment", {"owner": "team", "repo": "gateway", "comment_id": 3, "body": report}]]


def test_a_report_of_an_older_head_or_without_a_number_is_not_posted(comment: Any) -> None:
    calls = comment(_report(), head_sha="f" * 40)
    assert not posted(calls) and calls[-1][0] == "notice" and "not posted" in calls[-1][1]
    calls = comment(_report(), number=None)
    assert not posted(calls) and calls[-1][0] == "setFailed"
    calls = comment(_report(), number="7; rm -rf /\n")
    assert not posted(calls) and calls[-1][0] == "setFailed"


def test_a_run_without_a_report_says_so_and_a_long_one_is_cut(comment: Any) -> None:
    (call,) = posted(comment(None))
    body = call[1]["body"]
    assert body.startswith("### netperf: no report\n") and "ended (failure)" in body
    assert body.rstrip().endswith(COMMENT_MARKER)
    long = "### ❌ netperf: 1 FAIL\n" + "| a | b |\n" * 20_000 + COMMENT_MARKER + "\n"
    (call,) = posted(comment(long))
    body = call[1]["body"]
    assert len(body) <= 65_536 and body.startswith("### ❌ netperf: 1 FAIL\n")
    assert "cut to fit a comment" in body and body.rstrip().endswith(COMMENT_MARKER)


# ------------------------------------------------------------------ the GitLab script
STUB = """#!/bin/sh
echo "$(basename "$0") $* | ADDOPTS=${PYTEST_ADDOPTS-} PULL=${NETPERF_PULL-} ACCEPT=${NETPERF_ACCEPT-}" >> "$STUB_LOG"
case "$(basename "$0") $1 $2" in
  "python3 -m venv") mkdir -p "$3/bin" && echo "PATH=\\"$STUB_BIN:\\$PATH\\"" > "$3/bin/activate" ;;
  "docker compose version") exit 0 ;;
  docker*) exit "$STUB_PULL_EXIT" ;;
  chrt*) exit "$STUB_CHRT_EXIT" ;;
  sudo*) shift; [ "$1" = -n ] && shift; exec "$@" ;;
esac
exit 0
"""
STUBS = ("git", "python3", "python", "docker", "docker-compose", "chrt", "setcap", "sudo", "netperf", "debootstrap")


def _gitlab(tmp_path: Path, shell: str, pull_exit: int, chrt_exit: int, labels: str) -> list[str]:
    """Run the GitLab job's script items in one ``shell -e`` as GitLab does; the logged commands."""
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not on PATH")
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    for name in (*STUBS, "netperf-driver"):
        (stubs / name).write_text(STUB)
        (stubs / name).chmod(0o755)
    log = tmp_path / f"{shell}-{pull_exit}-{chrt_exit}.log"
    script = yaml.safe_load(render.gitlab_job(_plan()))["netperf"]["script"]
    env = {
        "PATH": f"{stubs}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(tmp_path),
        "STUB_BIN": str(stubs),
        "STUB_LOG": str(log),
        "STUB_PULL_EXIT": str(pull_exit),
        "STUB_CHRT_EXIT": str(chrt_exit),
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
        "CI_MERGE_REQUEST_LABELS": labels,
        "NETPERF_PACKAGE": "pytest-netperf",
    }
    done = subprocess.run(
        [shell, "-e", "-c", "\n".join(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return log.read_text().splitlines()


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_the_gitlab_script_runs_in_order_with_a_registry(tmp_path: Path, shell: str) -> None:
    ran = _gitlab(tmp_path, shell, pull_exit=0, chrt_exit=0, labels="perf,netperf:accept-regression")
    commands = [line.split(" | ")[0] for line in ran]
    assert commands[:3] == [
        "git fetch origin main",
        "python3 -m venv .netperf-venv",
        "python -m pip install pytest-netperf",
    ]
    assert commands[-1] == (
        "python -m pytest -m netperf tests/netperf --netperf-base origin/main "
        "--netperf-machine-class gitlab-runner --junitxml netperf-report/netperf.xml"
    )
    assert "docker compose -f compose.yml pull --quiet" in commands
    assert not [c for c in commands if c.startswith("netperf images")]  # the registry answered
    # what earlier items exported reaches the gates (as root: SCHED_FIFO allowed, no sudo)
    assert ran[-1].endswith("ADDOPTS= --netperf-realtime PULL=1 ACCEPT=label netperf:accept-regression")


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_the_gitlab_script_runs_in_order_offline(tmp_path: Path, shell: str) -> None:
    ran = _gitlab(tmp_path, shell, pull_exit=1, chrt_exit=1, labels="netperf:accept-regression-not,perf")
    commands = [line.split(" | ")[0] for line in ran]
    build = commands.index("netperf images build --only nginx")
    assert commands.index("python -m pip install pytest-netperf") < build < len(commands) - 1
    assert commands[-1].startswith("python -m pytest -m netperf tests/netperf --netperf-base origin/main ")
    # no registry: the official image mapped to the offline build; no SCHED_FIFO; no accept label
    assert ran[-1].endswith("ADDOPTS= --netperf-image nginx:1.27=pytest-netperf/nginx:local PULL= ACCEPT=")


# ------------------------------------------------------------------ the GitHub gate workflow's steps
def test_the_github_steps_parse_and_keep_the_pull_request_number(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is not on PATH")
    steps = yaml.safe_load(render.github_workflow(_plan()))["jobs"]["netperf"]["steps"]
    for step in steps:
        if "run" in step:
            done = subprocess.run(["bash", "-n", "-c", step["run"]], capture_output=True, text=True, check=False)
            assert done.returncode == 0, f"{step.get('name')}: {done.stderr}"
    number = next(step for step in steps if step.get("name") == "the pull request's number, for the comment")
    env = {"PATH": os.environ["PATH"], "PR_NUMBER": "42"}
    subprocess.run(["bash", "-e", "-c", number["run"]], cwd=tmp_path, env=env, check=True, timeout=30)
    assert (tmp_path / render.REPORT_DIR / render.PR_NUMBER_FILE).read_text() == "42\n"
