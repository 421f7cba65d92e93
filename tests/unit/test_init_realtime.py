"""``netperf init`` turns the real-time driver on where the gates run on shared runners (#41): the
CI jobs grant the driver SCHED_FIFO (CAP_SYS_NICE, or root) and pass ``--netperf-realtime`` when
that worked; pytest.ini says why it is not on for local runs (the driver needs the right)."""

from __future__ import annotations

from pathlib import Path

import yaml

from pytest_netperf.starter import render
from pytest_netperf.starter.survey import classify

CONFIG = {"services": {"edge": {"image": "nginx:1.27", "expose": ["80"]}}}


def _plan() -> render.StarterPlan:
    return render.StarterPlan(survey=classify(CONFIG, Path("compose.yml")), compose_path="compose.yml")


def test_the_github_job_turns_realtime_on_where_the_driver_may_use_it() -> None:
    job = yaml.safe_load(render.github_workflow(_plan()))["jobs"]["netperf"]
    steps = {step.get("name"): step for step in job["steps"]}
    install = steps["install pytest-netperf"]["run"]
    assert "setcap cap_sys_nice+ep" in install
    assert "chrt -f 1 true" in install
    assert 'echo "PYTEST_ADDOPTS=$PYTEST_ADDOPTS --netperf-realtime" >> "$GITHUB_ENV"' in install


def test_the_gitlab_job_turns_realtime_on_too() -> None:
    script = "\n".join(yaml.safe_load(render.gitlab_job(_plan()))["netperf"]["script"])
    assert 'export PYTEST_ADDOPTS="$PYTEST_ADDOPTS --netperf-realtime"' in script
    assert script.index("--netperf-realtime") < script.index("python -m pytest -m netperf")


def test_pytest_ini_explains_the_realtime_setting() -> None:
    text = render.ini_file(render.ini_settings())
    assert "netperf_realtime" in text and "CAP_SYS_NICE" in text
