"""``--netperf-image`` reaches the FROM lines of a ``build:`` service's Dockerfile (#41): the
Dockerfile is rewritten into the session's folder with the mapped images, the build context stays
the team's, and what cannot be mapped (a FROM built from an unknown build argument) is named."""

from __future__ import annotations

from pathlib import Path

import yaml

from pytest_netperf.engine import labels as L
from pytest_netperf.runtime.compose import dockerfile as D
from pytest_netperf.runtime.compose import project as P
from pytest_netperf.starter import render
from pytest_netperf.starter.survey import classify

MAPPING = {"nginx:1.27": "pytest-netperf/nginx:local", "envoyproxy/envoy": "pytest-netperf/envoy:local"}
DOCKERFILE = """\
# syntax=docker/dockerfile:1
ARG ENVOY_TAG=v1.31-latest
FROM golang:1.22 AS tools
RUN go build ./...
FROM --platform=linux/amd64 nginx:1.27 AS edge
COPY --from=tools /out/x /usr/bin/x
COPY --from=envoyproxy/envoy:${ENVOY_TAG} /usr/local/bin/envoy /usr/bin/envoy
COPY nginx.conf /etc/nginx/nginx.conf
from edge
"""


def test_from_lines_name_stages_and_external_images() -> None:
    lines = D.from_lines(DOCKERFILE)
    assert [(f.line, f.image, f.stage) for f in lines] == [
        (3, "golang:1.22", "tools"),
        (5, "nginx:1.27", "edge"),
        (9, "edge", None),
    ]
    assert D.base_images(DOCKERFILE) == ["golang:1.22", "nginx:1.27", "envoyproxy/envoy:v1.31-latest"]


def test_the_mapping_rewrites_from_and_copy_from_and_keeps_everything_else() -> None:
    rewritten = D.map_dockerfile(DOCKERFILE, MAPPING)
    assert rewritten.changed == [
        ("nginx:1.27", "pytest-netperf/nginx:local", 5),
        ("envoyproxy/envoy:v1.31-latest", "pytest-netperf/envoy:local", 7),
    ]
    lines = rewritten.text.splitlines()
    assert lines[4] == "FROM --platform=linux/amd64 pytest-netperf/nginx:local AS edge"
    assert lines[6] == "COPY --from=pytest-netperf/envoy:local /usr/local/bin/envoy /usr/bin/envoy"
    assert lines[2] == "FROM golang:1.22 AS tools" and lines[8] == "from edge"
    assert D.map_dockerfile(DOCKERFILE, {}).changed == []


def test_build_args_and_arg_defaults_resolve_from_lines_and_unknown_ones_are_named() -> None:
    text = "ARG BASE=nginx\nARG TAG\nFROM ${BASE}:${TAG:-1.27}\nFROM $UNKNOWN\n"
    rewritten = D.map_dockerfile(text, MAPPING)
    assert rewritten.changed == [("nginx:1.27", "pytest-netperf/nginx:local", 3)]
    assert rewritten.unresolved == [("$UNKNOWN", 4)]
    assert D.map_dockerfile(text, MAPPING, {"TAG": "1.25"}).changed == []


def test_the_override_points_a_mapped_build_at_the_rewritten_dockerfile(tmp_path: Path) -> None:
    context = tmp_path / "edge"
    context.mkdir()
    (context / "Dockerfile.edge").write_text("FROM nginx:1.27\nCOPY edge.conf /etc/nginx/conf.d/default.conf\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "Dockerfile").write_text("FROM python:3.12-slim\n")
    config = {
        "services": {
            "edge": {"build": {"context": str(context), "dockerfile": "Dockerfile.edge"}, "expose": ["80"]},
            "app": {"build": {"context": str(tmp_path / "app")}},
        }
    }
    session = tmp_path / "session"
    session.mkdir()
    builds = D.mapped_builds(config, ["app", "edge"], MAPPING, session)
    assert list(builds) == ["edge"]
    edge = builds["edge"]
    assert edge.dockerfile == session / "edge.Dockerfile"
    assert edge.dockerfile.read_text().startswith("FROM pytest-netperf/nginx:local\n")
    assert edge.source == context / "Dockerfile.edge"
    labels = L.resource_labels("abcd1234", "p", "p")
    document = P.override_document(config, "p", labels, MAPPING, dockerfiles={"edge": edge.dockerfile})
    assert document["services"]["edge"]["build"] == {"labels": labels, "dockerfile": str(edge.dockerfile)}
    assert document["services"]["app"]["build"] == {"labels": labels}
    yaml.safe_load(P.override_yaml(document))


def test_a_missing_base_image_message_names_the_dockerfile_line_and_the_mapping() -> None:
    message = D.missing_base_message(
        "edge", Path("/repo/edge/Dockerfile"), "nginx:1.27", "pytest-netperf/nginx:local", 1
    )
    assert message.startswith("service 'edge': /repo/edge/Dockerfile line 1: FROM nginx:1.27 is mapped to ")
    assert "pytest-netperf/nginx:local (--netperf-image), which is not present locally" in message
    assert "netperf images build --only nginx" in message
    unmapped = D.missing_base_message("edge", Path("/repo/edge/Dockerfile"), "nginx:1.27", "nginx:1.27", 1)
    assert "--netperf-image nginx:1.27=pytest-netperf/nginx:local" in unmapped


def test_init_maps_the_images_only_a_from_line_uses_in_the_ci_jobs_offline_branch(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM nginx:1.27-alpine\nCOPY default.conf /etc/nginx/conf.d/\n")
    config = {"services": {"edge": {"build": {"context": str(tmp_path)}, "image": "team/edge:dev", "expose": ["80"]}}}
    stack = classify(config, Path("compose.yml"))
    assert stack.image_map() == {"nginx:1.27-alpine": "pytest-netperf/nginx:local"}
    plan = render.StarterPlan(survey=stack, compose_path="compose.yml")
    images = render.github_workflow(plan)
    assert "netperf images build --only nginx" in images
    assert "--netperf-image nginx:1.27-alpine=pytest-netperf/nginx:local" in images
