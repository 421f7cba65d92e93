"""``netperf init``: the survey of a given Compose configuration, the rendered starter files and
writing them all or none.

What goes through the real Compose ``config`` (messages on bad input, gates that collect, the CI
recipes in examples/ci/) is in tests/integration/test_starter_compose.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.starter import files, render
from pytest_netperf.starter.survey import InitError, ServiceSurvey, classify

CONFIG = {
    "services": {
        "edge": {"image": "nginx:1.27", "ports": ["8088:80", "8443:443"], "volumes": ["/repo/nginx/edge.conf:/x:ro"]},
        "mesh": {"image": "envoyproxy/envoy:v1.31-latest", "expose": ["10000", "9901"]},
        "lb": {"image": "haproxy:2.8"},
        "api": {"image": "kong:3.8", "ports": [{"target": 8000, "published": 8000, "protocol": "tcp"}]},
        "tls": {"image": "traefik:v3", "ports": ["443:443"]},
        "app": {"image": "registry.example.com/team/app:1.4", "expose": ["8080"]},
        "worker": {"build": {"context": "."}},
    }
}


def test_classify_finds_the_proxies_their_http_ports_and_offline_stand_ins() -> None:
    stack = classify(CONFIG, Path("compose.yml"))
    by_name = {s.name: s for s in stack.services}
    assert [(s.name, s.proxy, s.scheme, s.gate_port) for s in stack.proxies] == [
        ("api", "kong", "http", 8000),
        ("edge", "nginx", "http", 80),  # 8443 beside 80: plain HTTP is gated
        ("mesh", "envoy", "http", 10000),
        ("tls", "traefik", "https", 443),  # TLS only: gated over HTTPS
    ]
    assert [s.name for s in stack.proxies_without_port] == ["lb"]
    assert by_name["app"].proxy == "" and by_name["worker"].image == ""
    assert stack.image_map() == {
        "nginx:1.27": "pytest-netperf/nginx:local",
        "envoyproxy/envoy:v1.31-latest": "pytest-netperf/envoy:local",
        "haproxy:2.8": "pytest-netperf/haproxy:local",
    }
    assert by_name["edge"].binds == (Path("/repo/nginx/edge.conf"),)


def test_bind_sources_read_both_compose_versions_output() -> None:
    v2 = {"services": {"e": {"image": "nginx", "volumes": [{"type": "bind", "source": "/r/conf", "target": "/c"}]}}}
    v1 = {"services": {"e": {"image": "nginx", "volumes": ["/r/conf:/c:ro", "named:/data"]}}}
    assert classify(v2, Path("c.yml")).services[0].binds == (Path("/r/conf"),)
    assert classify(v1, Path("c.yml")).services[0].binds == (Path("/r/conf"),)


def test_a_service_built_from_a_proxy_image_is_a_proxy(tmp_path: Path) -> None:
    (tmp_path / "edge").mkdir()
    (tmp_path / "edge" / "Dockerfile.edge").write_text(
        "FROM golang:1.22 AS tools\nRUN true\nFROM --platform=linux/amd64 nginx:1.27-alpine AS edge\nCOPY x /\n"
    )
    config = {
        "services": {
            "edge": {"build": {"context": str(tmp_path / "edge"), "dockerfile": "Dockerfile.edge"}, "expose": ["80"]},
            "gone": {"build": {"context": str(tmp_path / "missing")}, "expose": ["80"]},
        }
    }
    edge, gone = classify(config, Path("c.yml")).services
    assert (edge.proxy, edge.image, edge.local_image, edge.http_port) == (
        "nginx",
        "built FROM nginx:1.27-alpine",
        "",
        80,
    )
    assert (gone.proxy, gone.image) == ("", "")


def _plan(config: dict = CONFIG, **kwargs: object) -> render.StarterPlan:
    return render.StarterPlan(survey=classify(config, Path("compose.yml")), compose_path="compose.yml", **kwargs)


def _marks(module_text: str) -> dict[str, list[str]]:
    """test name -> the budget texts of its netperf marker."""
    found = {}
    for node in ast.parse(module_text).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            (mark,) = [d for d in node.decorator_list if "netperf" in ast.unparse(d)]
            assert isinstance(mark, ast.Call)
            found[node.name] = [arg.value for arg in mark.args if isinstance(arg, ast.Constant)]
    return found


def test_the_test_module_gates_each_proxy_with_budgets_the_grammar_accepts() -> None:
    text = render.test_module(_plan())
    marks = _marks(text)
    assert sorted(marks) == sorted(
        [
            "test_api_throughput",
            "test_api_latency",  # Kong: no cost gate (LuaJIT under valgrind)
            "test_edge_throughput",
            "test_edge_latency",
            "test_edge_cost_per_request",
            "test_mesh_throughput",
            "test_mesh_latency",
            "test_mesh_cost_per_request",
            "test_tls_throughput",  # TLS only: over HTTPS, with a handshake-per-request test
            "test_tls_latency",
            "test_tls_handshake_throughput",  # Traefik: not counted
        ]
    )
    for budgets in marks.values():
        for budget in budgets:
            parse_budget(budget)
    assert marks["test_edge_cost_per_request"][:2] == [
        "instructions_per_request[edge] <= 1.01x base",
        "syscalls_per_request[edge] <= 1.0x base",
    ]
    assert 'stack.endpoint("mesh", port=10000, path="/")' in text
    assert "Services not gated here (not a known proxy): app (registry.example.com/team/app:1.4)" in text


def test_service_names_become_identifiers() -> None:
    assert render.identifier("api-gw.v2") == "api_gw_v2"
    assert render.identifier("3scale") == "s_3scale"
    config = {"services": {"edge-1": {"image": "nginx:1.27", "expose": ["80"]}}}
    assert classify(config, Path("c.yml")).proxies == [
        ServiceSurvey("edge-1", "nginx:1.27", (80,), "nginx", "pytest-netperf/nginx:local")
    ]
    assert "def test_edge_1_throughput(netperf, stack):" in render.test_module(_plan(config))


def test_the_ci_jobs_parse_and_choose_pulled_or_offline_images() -> None:
    plan = _plan(package="/wheels/pytest_netperf-0.1.0-py3-none-manylinux_2_28_x86_64.whl", watched=("nginx",))
    github = yaml.safe_load(render.github_workflow(plan))  # YAML 1.1: the key `on` reads as True
    job = github["jobs"]["netperf"]
    assert github[True]["pull_request"]["paths"] == ["compose.yml", "nginx/**", "tests/netperf/**"]
    assert job["env"]["NETPERF_PACKAGE"] == plan.package
    steps = {step.get("name"): step for step in job["steps"]}
    assert job["steps"][0]["with"]["fetch-depth"] == 0
    images = steps["container images"]["run"]
    assert 'echo "NETPERF_PULL=1" >> "$GITHUB_ENV"' in images
    for role in ("envoy", "haproxy", "nginx"):
        assert f"netperf images build --only {role}" in images
    assert "--netperf-image nginx:1.27=pytest-netperf/nginx:local" in images
    assert '--netperf-base "origin/${GITHUB_BASE_REF}"' in steps["base against head"]["run"]
    gitlab = yaml.safe_load(render.gitlab_job(plan))["netperf"]
    assert gitlab["variables"]["GIT_DEPTH"] == "0"
    script = "\n".join(gitlab["script"])
    assert 'export PYTEST_ADDOPTS="$PYTEST_ADDOPTS --netperf-image' in script
    assert '--netperf-base "origin/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME"' in script


def test_a_stack_without_official_proxy_images_has_no_offline_branch() -> None:
    config = {"services": {"gw": {"image": "traefik:v3", "ports": ["80:80"]}}}
    images = render.github_workflow(_plan(config))
    assert "netperf images build" not in images and "NETPERF_PULL=1" in images
    assert "air-gapped" not in images


def test_merged_ini_adds_only_missing_keys_and_keeps_every_line() -> None:
    existing = "[pytest]\n# ours\naddopts = -ra\nnetperf_round_duration = 5\n\n[coverage:run]\nbranch = true\n"
    merged = render.merged_ini(existing, render.ini_settings())
    assert merged.startswith("[pytest]\nnetperf_baseline_dir = .netperf\n")
    assert "netperf_round_duration = 5" in merged and "netperf_round_duration = 2" not in merged
    for line in existing.splitlines():
        assert line in merged.splitlines()
    assert render.merged_ini(merged, render.ini_settings()) == merged
    assert render.merged_ini("", {"a": "1"}).endswith("[pytest]\na = 1\n")


def test_plan_files_refuses_every_existing_file_at_once_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "netperf.yml").write_text("ours\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -ra\n")
    with pytest.raises(
        InitError, match=r"overwrite \.github/workflows/netperf\.yml, pytest\.ini .*nothing was written"
    ):
        files.plan_files(tmp_path, _plan(), ["github", "gitlab"], force=False)
    written = files.plan_files(tmp_path, _plan(), ["github"], force=True)
    assert [(f.path, f.action) for f in written.files] == [
        ("tests/netperf/test_netperf_gates.py", "create"),
        (".github/workflows/netperf.yml", "replace"),
        (".github/workflows/netperf-comment.yml", "create"),
        ("pytest.ini", "merge"),
    ]
    files.write_files(tmp_path, written)
    assert "addopts = -ra" in (tmp_path / "pytest.ini").read_text()
    assert (tmp_path / "tests" / "netperf" / "test_netperf_gates.py").is_file()
    assert not (tmp_path / "ci").exists()


def test_settings_kept_in_pyproject_get_a_note_not_a_pytest_ini(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-ra"\n')
    planned = files.plan_files(tmp_path, _plan(), [], force=False)
    assert [f.path for f in planned.files] == ["tests/netperf/test_netperf_gates.py"]
    assert planned.notes[0].startswith("pytest reads its settings from pyproject.toml: add these")
    assert "netperf_baseline_dir = .netperf" in planned.notes[0]
