"""A team adopts the gate in its own repository, with none of this repository's scripts.

The wheel is built from this checkout and installed into a fresh virtual environment outside
it. A new git repository (with an ``origin`` to clone from, as on a CI runner) holds a Compose
stack: an nginx edge in front of an application. ``netperf init`` from that environment writes
the gates and the GitHub Actions job; the job's own ``run:`` steps are then executed in order
as Actions would (``$GITHUB_ENV`` carried between steps, ``GITHUB_BASE_REF=main``), on a pull
request that changes nothing (green) and on one that drops nginx's upstream keep-alive pool
(red, naming the system calls it added). With the label ``netperf:accept-regression`` on the
pull request the same change is ACCEPTED, the label named as the reason in the report that the
comment workflow posts (its github-script run under node); without the label it is red, and
the comment says so without naming the label. Real containers throughout; no registry here,
so the job's image step takes its offline branch.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from docker_helpers import git, skip_without_compose_stack_parts
from github_script import node_or_none, posted, run_comment_step

from pytest_netperf.starter import render

pytestmark = pytest.mark.docker

COMPOSE = """\
services:
  app:
    # the team's application (here the echo server that ships with pytest-netperf)
    image: pytest-netperf/echo:local
    command: ["netperf-driver", "echo", "--listen", "0.0.0.0:8080", "--id", "app"]
    expose: ["8080"]
  edge:
    image: nginx:1.27
    volumes:
      - ./edge/default.conf:/etc/nginx/conf.d/default.conf:ro
    depends_on: [app]
    ports: ["8088:80"]
"""
EDGE_CONF = """\
upstream app_pool {
    server app:8080;
    keepalive 32;
}
server {
    listen 80 default_server;
    access_log off;
    location / {
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_pass http://app_pool;
    }
}
"""
#: The steps of the generated job that run here; the others need GitHub (checkout, Python
#: setup, the artifact upload; the comment is another workflow, test_starter_ci_scripts.py).
STEPS = (
    "install pytest-netperf",
    "container images",
    "base against head",
    "the pull request's number, for the comment",
)
#: The pull request's number, and what the steps' ``${{ }}`` expressions are on it (no label).
PR_NUMBER = "1"
EXPRESSIONS = {
    "${{ github.event.pull_request.number }}": PR_NUMBER,
    render.ACCEPT_EXPRESSION: "",
}
#: What the accept expression is on a pull request labelled netperf:accept-regression.
LABELLED = {**EXPRESSIONS, render.ACCEPT_EXPRESSION: f"label {render.ACCEPT_LABEL}"}
#: The budget the harmful change fails: nginx's system calls per request, counted.
SYSCALLS_BUDGET = ("test_edge_cost_per_request", "syscalls_per_request[edge] <= 1.0x base")
#: Seconds one run of the job's steps may take.
JOB_TIMEOUT_S = 900


@pytest.fixture(scope="module")
def installed(wheel: Path, venv_bin: Path) -> tuple[Path, Path]:
    """(the wheel, the bin/ of a fresh venv it is installed in), outside the checkout."""
    skip_without_compose_stack_parts()
    return wheel, venv_bin


@pytest.fixture(scope="module")
def team(installed: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A clone of the team's repository after ``netperf init`` was committed on main, and
    what init printed."""
    wheel, bin_dir = installed
    folder = tmp_path_factory.mktemp("team")
    upstream = folder / "upstream"
    (upstream / "edge").mkdir(parents=True)
    (upstream / "docker-compose.yml").write_text(COMPOSE)
    (upstream / "edge" / "default.conf").write_text(EDGE_CONF)
    (upstream / ".gitignore").write_text("netperf-report/\n__pycache__/\n")
    git(upstream, "init", "-q", "-b", "main")
    began = time.monotonic()
    init = _run([str(bin_dir / "netperf"), "init", "--package", str(wheel)], upstream, _env(bin_dir), 120)
    init_s = time.monotonic() - began
    assert init.returncode == 0, init.stdout + init.stderr
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "netperf init")
    clone = folder / "clone"
    git(folder, "clone", "-q", str(upstream), str(clone))
    return clone, f"{init.stdout}(took {init_s:.1f}s)"


def _env(bin_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment with the venv first on PATH and nothing of the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(bin_dir.parent), **extra)
    for name in ("NETPERF_DRIVER", "NETPERF_DRIVER_BINARY", "NETPERF_PULL", "CI"):
        env.pop(name, None)
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def run_job(
    repo: Path, bin_dir: Path, wheel: Path, expressions: dict[str, str] = EXPRESSIONS
) -> tuple[int, str, float, dict[str, str]]:
    """Run the generated workflow's steps in ``repo`` as GitHub Actions would, its ``${{ }}``
    expressions evaluated as ``expressions`` says; (exit status of the gates, or of the first
    step before them that failed, everything the steps printed, seconds, what the steps handed
    to later ones through ``$GITHUB_ENV``)."""
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "netperf.yml").read_text())
    steps = {step.get("name"): step for step in workflow["jobs"]["netperf"]["steps"]}
    github_env = repo.parent / f"{repo.name}.github_env"
    summary = repo.parent / f"{repo.name}.step_summary"
    github_env.write_text("")
    carried: dict[str, str] = {}
    said: list[str] = []
    gates_status = 0
    began = time.monotonic()
    for name in STEPS:
        env = _env(
            bin_dir,
            GITHUB_ENV=str(github_env),
            GITHUB_STEP_SUMMARY=str(summary),
            GITHUB_BASE_REF="main",
            NETPERF_PACKAGE=str(wheel),
            **carried,
            **{key: expressions[value] for key, value in steps[name].get("env", {}).items()},
        )
        done = _run(["bash", "-e", "-c", steps[name]["run"]], repo, env, JOB_TIMEOUT_S)
        if name == "base against head":  # the next step runs `if: always()`: go on, keep the status
            gates_status = done.returncode
        said.append(f"--- {name} (exit {done.returncode})\n{done.stdout}{done.stderr}")
        for line in github_env.read_text().splitlines():
            key, _, value = line.partition("=")
            carried[key] = value
        if done.returncode != 0 and name != "base against head":
            return done.returncode, "\n".join(said), time.monotonic() - began, carried
    return gates_status, "\n".join(said), time.monotonic() - began, carried


def _verdicts(rows: list[dict], verdict: str) -> set[tuple[str, str]]:
    """(test name, budget) of the rows with ``verdict``."""
    return {(r["test_id"].rsplit("::", 1)[-1], r["budget"]) for r in rows if r["verdict"] == verdict}


def test_init_names_what_it_wrote(team: tuple[Path, str]) -> None:
    repo, printed = team
    for path in (
        "tests/netperf/test_netperf_gates.py",
        ".github/workflows/netperf.yml",
        ".github/workflows/netperf-comment.yml",
        "ci/netperf.gitlab-ci.yml",
        "pytest.ini",
    ):
        assert f"create  {path}" in printed
        assert (repo / path).is_file()
    assert "gating edge (nginx:1.27), HTTP on port 80" in printed


def test_an_unchanged_pull_request_is_green_and_a_harmful_one_red(
    installed: tuple[Path, Path], team: tuple[Path, str], record_property: pytest.RecordProperty, tmp_path: Path
) -> None:
    wheel, bin_dir = installed
    repo, _ = team
    git(repo, "checkout", "-q", "-b", "unchanged")
    status, said, green_s, carried = run_job(repo, bin_dir, wheel)
    assert status == 0, said[-6000:]
    # no registry here: the offline branch, with the official image mapped to the local build
    assert "--netperf-image nginx:1.27=pytest-netperf/nginx:local" in carried.get("PYTEST_ADDOPTS", ""), carried
    rows = json.loads((repo / "netperf-report" / "netperf.json").read_text())["rows"]
    assert len(rows) == 7 and not [r for r in rows if r["verdict"] in ("FAIL", "INVALID")], said[-6000:]
    assert (repo.parent / f"{repo.name}.step_summary").read_text().strip(), "no job summary written"
    comment = (repo / "netperf-report" / "netperf.md").read_text()  # what the comment workflow posts
    assert comment.startswith("### ✅ netperf: 7 PASS against ") or comment.startswith("### ❔ netperf: "), comment
    assert (repo / "netperf-report" / "pr-number").read_text() == f"{PR_NUMBER}\n"

    git(repo, "checkout", "-q", "-b", "drop-keepalive", "main")
    conf = repo / "edge" / "default.conf"
    conf.write_text(conf.read_text().replace("    keepalive 32;\n", "").replace('proxy_set_header Connection "";', ""))
    git(repo, "commit", "-q", "-am", "edge: no upstream keep-alive")
    status, said, red_s, _ = run_job(repo, bin_dir, wheel)
    assert status == 1, said[-6000:]
    rows = json.loads((repo / "netperf-report" / "netperf.json").read_text())["rows"]
    assert SYSCALLS_BUDGET in _verdicts(rows, "FAIL"), said[-6000:]
    assert "connect +1.00" in said, said[-6000:]
    red_comment = (repo / "netperf-report" / "netperf.md").read_text()
    assert red_comment.startswith("### ❌ netperf: ")
    # the system-call diff of the counted budget, folded under the budgets to look at
    assert "<summary>Where the system calls went: <code>edge</code>" in red_comment, red_comment[:4000]
    assert "| `connect` | 0.00 | 1.00 | +1.00 |" in red_comment, red_comment[:4000]
    assert (repo / "netperf-report" / "pr-number").read_text() == f"{PR_NUMBER}\n"  # kept on a red run too
    if node_or_none() is not None:  # what the comment workflow posts for it: red, no label named
        comment_workflow = (repo / ".github" / "workflows" / "netperf-comment.yml").read_text()
        (call,) = posted(run_comment_step(comment_workflow, tmp_path, red_comment, f"{PR_NUMBER}\n"))
        assert call[1]["body"].startswith("### ❌ netperf: "), call[1]["body"][:2000]
        assert f"label {render.ACCEPT_LABEL}" not in call[1]["body"]
    record_property("green_s", round(green_s, 1))
    record_property("red_s", round(red_s, 1))
    print(f"adoption path: green pull request {green_s:.0f}s, red pull request {red_s:.0f}s")


def test_the_accept_label_accepts_the_regression_in_the_comment(
    installed: tuple[Path, Path], team: tuple[Path, str], tmp_path: Path
) -> None:
    if node_or_none() is None:
        pytest.skip("node is not on PATH: the comment workflow's script (actions/github-script) runs under node")
    wheel, bin_dir = installed
    repo, _ = team
    git(repo, "checkout", "-q", "-b", "intended-regression", "main")
    conf = repo / "edge" / "default.conf"
    conf.write_text(conf.read_text().replace("    keepalive 32;\n", "").replace('proxy_set_header Connection "";', ""))
    git(repo, "commit", "-q", "-am", "edge: no upstream keep-alive (intended)")
    report_path = repo / render.REPORT_DIR / render.REPORT_MARKDOWN
    comment_workflow = (repo / ".github" / "workflows" / "netperf-comment.yml").read_text()

    status, said, _, _ = run_job(repo, bin_dir, wheel, LABELLED)
    assert status == 0, said[-6000:]
    rows = json.loads((repo / render.REPORT_DIR / "netperf.json").read_text())["rows"]
    assert SYSCALLS_BUDGET in _verdicts(rows, "ACCEPTED"), said[-6000:]
    assert not _verdicts(rows, "FAIL") and not _verdicts(rows, "INVALID"), said[-6000:]
    (call,) = posted(run_comment_step(comment_workflow, tmp_path, report_path.read_text(), f"{PR_NUMBER}\n"))
    body = call[1]["body"]
    assert call[0] == "createComment" and call[1]["issue_number"] == int(PR_NUMBER), call
    first_line = body.splitlines()[0]
    assert "ACCEPTED" in first_line and "FAIL" not in first_line.replace("ACCEPTED", ""), body[:2000]
    assert f"label {render.ACCEPT_LABEL}" in body, body[:4000]
    # without the label the same change is red: the job above on the unlabelled pull request
