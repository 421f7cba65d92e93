"""The GitHub comment workflow's ``actions/github-script`` step run under ``node``, with the
``github``, ``context`` and ``core`` globals it uses faked: the calls it made come back as a list.

Shared by the tests of the comment script alone (test_starter_ci_scripts.py) and of the whole
pull-request path with a real gate's report (test_adoption_path.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Optional

import yaml

from pytest_netperf.starter import render

HEAD_SHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
#: The github-script globals the script uses, faked; prints the calls it made as JSON.
HARNESS = r"""
const fs = require('fs');
const [scriptFile, stateFile] = process.argv.slice(2);
const state = JSON.parse(fs.readFileSync(stateFile, 'utf8'));
const calls = [];
const github = {
  rest: {
    pulls: { get: async (a) => { calls.push(['pulls.get', a]); return { data: { head: { sha: state.head_sha } } }; } },
    issues: {
      listComments: async () => { throw new Error('called without paginate'); },
      updateComment: async (a) => { calls.push(['updateComment', a]); return { data: {} }; },
      createComment: async (a) => { calls.push(['createComment', a]); return { data: { html_url: 'u' } }; },
    },
  },
  paginate: async (fn, a) => {
    if (fn !== github.rest.issues.listComments) throw new Error('paginate of another call');
    calls.push(['listComments', a]);
    return state.comments;
  },
};
const context = { repo: { owner: 'team', repo: 'gateway' }, payload: { workflow_run: state.run } };
const core = {
  setFailed: (m) => calls.push(['setFailed', m]),
  notice: (m) => calls.push(['notice', m]),
  info: (m) => calls.push(['info', m]),
};
const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
new AsyncFunction('require', 'github', 'context', 'core', fs.readFileSync(scriptFile, 'utf8'))(
  require, github, context, core,
).then(() => console.log(JSON.stringify(calls)), (e) => { console.error(e); process.exit(1); });
"""


def node_or_none() -> Optional[str]:
    """The ``node`` binary, or None where it is not installed."""
    return shutil.which("node")


def run_comment_step(
    workflow_text: str,
    workdir: Path,
    report: Optional[str],
    number: Optional[str] = "7\n",
    comments: Optional[list] = None,
    head_sha: str = HEAD_SHA,
    conclusion: str = "failure",
) -> list:
    """Run the comment workflow ``workflow_text``'s script in ``workdir`` as after downloading an
    artifact holding ``report`` and the pull request's ``number`` (either may be missing); the
    pull request's head is ``head_sha``, its earlier comments ``comments``. The calls it made."""
    node = node_or_none()
    assert node is not None, "node is not on PATH"
    step = yaml.safe_load(workflow_text)["jobs"]["comment"]["steps"][1]
    (workdir / "script.js").write_text(step["with"]["script"])
    (workdir / "harness.js").write_text(HARNESS)
    folder = workdir / "run"
    shutil.rmtree(folder, ignore_errors=True)
    artifact = folder / render.REPORT_DIR
    artifact.mkdir(parents=True)
    if report is not None:
        (artifact / render.REPORT_MARKDOWN).write_text(report)
    if number is not None:
        (artifact / render.PR_NUMBER_FILE).write_text(number)
    run = {"head_sha": HEAD_SHA, "html_url": "https://github.com/team/gateway/actions/runs/9", "conclusion": conclusion}
    (workdir / "state.json").write_text(json.dumps({"head_sha": head_sha, "run": run, "comments": comments or []}))
    done = subprocess.run(
        [node, str(workdir / "harness.js"), str(workdir / "script.js"), str(workdir / "state.json")],
        cwd=folder,
        env={**os.environ, **{k: str(v) for k, v in step["env"].items()}},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def posted(calls: list) -> list:
    """The calls that wrote a comment (added or edited)."""
    return [call for call in calls if call[0] in ("createComment", "updateComment")]
