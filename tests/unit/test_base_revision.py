"""The base revision of a pull request, the parts that run no git: fetch hints, ``unchanged``
and a stack's inputs from a normalised Compose config.

What runs git (resolving REF, the checkout, what changed) is in
tests/integration/test_base_revision_git.py.
"""

from __future__ import annotations

from pathlib import Path

from pytest_netperf.revision import (
    FileChange,
    stack_inputs,
    unchanged,
)
from pytest_netperf.revision.git import fetch_hint

# ----------------------------------------------------------------------------- resolving REF


def test_fetch_hints() -> None:
    assert fetch_hint("upstream/main~2", ["origin", "upstream"]) == "run `git fetch upstream main`"
    assert fetch_hint("HEAD^", ["origin"]) is None
    assert fetch_hint("a" * 40, []) == f"run `git fetch origin {'a' * 40}`"
    assert fetch_hint("v2.0", ["fork"]) == (
        "run `git fetch fork v2.0` and use --netperf-base fork/v2.0 (for a tag: `git fetch fork tag v2.0`)"
    )


def test_unchanged() -> None:
    assert unchanged([])
    assert unchanged(iter(()))
    assert not unchanged([FileChange("a.conf", "modified", 1, 1)])


# ----------------------------------------------------------------------------- a stack's inputs


def test_stack_inputs_from_a_normalised_config(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    compose = root / "docker-compose.yml"
    config = {
        "name": "team",
        "services": {
            "edge": {
                "image": "nginx:1.27",
                "volumes": [
                    {"type": "bind", "source": f"{root}/nginx/edge.conf", "target": "/etc/nginx/nginx.conf"},
                    {"type": "volume", "source": "cache", "target": "/var/cache/nginx"},
                    {"type": "bind", "source": "/etc/ssl/certs", "target": "/etc/ssl/certs", "read_only": True},
                    {"type": "tmpfs", "target": "/run"},
                    "./nginx/conf.d:/etc/nginx/conf.d:ro",
                    "logs:/var/log/nginx:rw",
                    "/data",
                    "../shared/tls:/etc/tls:ro",
                ],
                "env_file": [f"{root}/deploy/edge.env"],
            },
            "app": {
                "build": {"context": f"{root}/app", "dockerfile": "Dockerfile.perf"},
                "env_file": [{"path": f"{root}/deploy/app.env", "required": True}],
                "volumes": [f"{root}/app/static:/srv/static:ro"],
            },
            "sidecar": {"build": {"context": "https://github.com/team/sidecar.git#main"}},
            "tools": {"image": "busybox", "env_file": "tools.env"},
            "empty": None,
        },
        "volumes": {"cache": {}, "logs": {}},
        "configs": {"limits": {"file": f"{root}/nginx/limits.conf"}, "remote": {"external": True}},
    }
    expected = [
        compose,
        root / "nginx/edge.conf",
        root / "nginx/conf.d",
        root / "deploy/edge.env",
        root / "app/static",
        root / "app",
        root / "app/Dockerfile.perf",
        root / "deploy/app.env",
        root / "tools.env",
        root / "nginx/limits.conf",
    ]
    assert stack_inputs(compose, config) == expected  # the root found by its .git folder
    assert stack_inputs(compose, config, root=root) == expected
    names = {path.name for path in stack_inputs(compose, config)}
    assert not names & {"cache", "logs", "data", "certs", "tls"}
