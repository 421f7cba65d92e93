"""``netperf init`` on the shapes of public Compose stacks (#41), through the real Compose ``config``:
routes read from the proxy's mounted config become gates, a proxy under an inactive profile is
not gated (and is, with the profile on, when COMPOSE_PROFILES names it), an unset variable is a
warning naming it. The gates are collected by a real pytest run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_netperf.cli.main import main
from pytest_netperf.errors import NetperfError
from pytest_netperf.runtime.compose.cli import find_compose

COMPOSE = """\
services:
  app:
    image: team/app:${APP_TAG}
    expose: ["8080"]
  edge:
    image: nginx:1.27
    ports: ["8080:80"]
    volumes: ["./nginx/edge.conf:/etc/nginx/conf.d/default.conf:ro"]
  debug-proxy:
    image: nginx:1.27
    expose: ["80"]
    profiles: [debug]
"""
EDGE = """\
proxy_cache_path /var/cache/nginx keys_zone=edge:1m;
server {
    listen 80;
    location / { proxy_pass http://app:8080; }
    location /cache-me { proxy_cache edge; proxy_pass http://app:8080; }
    location = /healthz { return 200; }
    location ~ \\.php$ { return 403; }
}
"""


@pytest.fixture(autouse=True)
def needs_compose() -> None:
    try:
        find_compose()
    except NetperfError as exc:
        pytest.skip(f"no Compose implementation to run `config`: {exc}")


def _repo(root: Path) -> Path:
    (root / "nginx").mkdir()
    (root / "nginx" / "edge.conf").write_text(EDGE)
    (root / "compose.yml").write_text(COMPOSE)
    return root


def _init(root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    monkeypatch.chdir(root)
    monkeypatch.delenv("APP_TAG", raising=False)
    code = main(["init", "--ci", "github", *args])
    said = capsys.readouterr()
    return f"{code}\n{said.out}{said.err}"


def _collected(root: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "netperf", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout + done.stderr


def test_init_gates_the_routes_skips_the_profiled_proxy_and_warns_of_the_unset_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COMPOSE_PROFILES", raising=False)
    root = _repo(tmp_path)
    out = _init(root, capsys, monkeypatch)
    assert out.startswith("0\n"), out
    assert "warning: Compose file" in out and "APP_TAG not set" in out
    assert "not gated: service 'debug-proxy' (nginx:1.27) is in profile(s) debug" in out
    assert "edge: routes gated: /, /cache-me" in out
    assert "edge: not gated: location = /healthz (health check)" in out
    module = (root / "tests" / "netperf" / "test_netperf_gates.py").read_text()
    assert "debug_proxy" not in module and "EDGE_ROUTES" in module
    collected = _collected(root)
    assert "5 tests collected" in collected, collected
    assert "test_edge_throughput[/cache-me]" in collected


def test_init_gates_a_profiled_proxy_with_its_profile_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPOSE_PROFILES", "debug")
    root = _repo(tmp_path)
    out = _init(root, capsys, monkeypatch)
    assert out.startswith("0\n"), out
    assert "gating debug-proxy (nginx:1.27), HTTP on port 80" in out
    assert "the gates turn on the Compose profile(s) debug" in out
    module = (root / "tests" / "netperf" / "test_netperf_gates.py").read_text()
    assert 'netperf_compose(COMPOSE_FILE, env={"COMPOSE_PROFILES": "debug"})' in module
    assert "def test_debug_proxy_throughput(netperf, stack):" in module
