"""The pure side of Compose stacks: project names, started services, the override file, ports, images.

Config dicts here have the shape ``docker-compose config`` prints (normalised: build as a
mapping with an absolute context, ports as mappings, depends_on with conditions).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_netperf.engine import labels as L
from pytest_netperf.errors import ComposeFileError, ComposeUsageError
from pytest_netperf.runtime.compose import project as P
from pytest_netperf.runtime.resources import CoreSplit
from pytest_netperf.topology.resources import Resources

LABELS = L.resource_labels("abcd1234", "netperf-abcd1234-main-team-1", "netperf-abcd1234-main-team-1")
PROJECT = "netperf-abcd1234-main-team-1"

CONFIG = {
    "version": "3.8",
    "services": {
        "edge": {
            "image": "nginx:1.27",
            "ports": [{"published": 8080, "target": 80}],
            "volumes": ["/repo/nginx/edge.conf:/etc/nginx/nginx.conf:ro", "cache:/var/cache/nginx:rw"],
            "depends_on": {"app": {"condition": "service_healthy"}},
            "container_name": "team-edge",
        },
        "app": {
            "build": {"context": "/repo/app"},
            "expose": ["8080"],
            "deploy": {"resources": {"limits": {"cpus": 0.5, "memory": "64m"}}},
            "depends_on": ["migrate"],
        },
        "migrate": {"image": "team/migrate:v2", "networks": ["back"]},
        "tools": {"image": "busybox", "network_mode": "none"},
    },
    "networks": {"back": {}, "shared": {"external": True}},
    "volumes": {"cache": {}, "outside": {"external": True}},
}


def test_project_names_are_lower_case_unique_per_bring_up_and_safe() -> None:
    assert P.project_name("abcd1234", "gw0", "team", 1) == "netperf-abcd1234-gw0-team-1"
    assert P.project_name("abcd1234", "main", "team", 2) != P.project_name("abcd1234", "main", "team", 1)
    name = P.project_name("AB", "Main", "My_Stack.v2", 3)
    assert name == "netperf-ab-main-my-stack-v2-3"
    assert set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")


def test_stack_stem_names_generic_files_after_their_folder() -> None:
    assert P.stack_stem(Path("/repo/examples/team_gateway/docker-compose.yml")) == "team-gateway"
    assert P.stack_stem(Path("/repo/infra/compose.yaml")) == "infra"
    assert P.stack_stem(Path("/repo/infra/edge-stack.yml")) == "edge-stack"
    assert len(P.stack_stem(Path("/r/" + "x" * 80 + ".yml"))) <= P.MAX_STEM


def test_started_services_include_what_they_depend_on() -> None:
    assert P.started_services(CONFIG, None) == ["app", "edge", "migrate", "tools"]
    assert P.started_services(CONFIG, ["edge"]) == ["app", "edge", "migrate"]
    assert P.started_services(CONFIG, ["migrate"]) == ["migrate"]
    with pytest.raises(ComposeUsageError, match=r"unknown service\(s\) 'edgy'; known services: app, edge, migrate"):
        P.started_services(CONFIG, ["edgy"])


def test_completed_ok_only_for_services_others_wait_to_finish() -> None:
    config = {
        "services": {
            "init": {"image": "x"},
            "app": {"image": "y", "depends_on": {"init": {"condition": "service_completed_successfully"}}},
        }
    }
    assert P.completed_ok(config, "init") and not P.completed_ok(config, "app")
    assert not P.completed_ok(CONFIG, "migrate")  # list form: only "started"


def test_override_labels_every_service_network_and_volume() -> None:
    document = P.override_document(CONFIG, PROJECT, LABELS)
    assert document["version"] == "3.8"
    for name, entry in document["services"].items():
        assert entry["labels"] == {**LABELS, L.NODE: name}
    assert set(document["networks"]) == {"back", "default"}  # not the external one
    assert all(n["labels"] == LABELS for n in document["networks"].values())
    assert document["volumes"] == {"cache": {"labels": LABELS}}  # not the external one


def test_override_maps_images_and_labels_builds() -> None:
    overrides = {"nginx:1.27": "pytest-netperf/nginx:local", "team/migrate": "team/migrate:local", "nginx": "x"}
    services = P.override_document(CONFIG, PROJECT, LABELS, overrides)["services"]
    assert services["edge"]["image"] == "pytest-netperf/nginx:local"
    assert services["migrate"]["image"] == "team/migrate:local"  # a tagless key maps every tag
    assert services["tools"]["image"] == "busybox"  # unmapped: unchanged
    assert "image" not in services["app"] and services["app"]["build"] == {"labels": LABELS}


def test_an_untagged_image_is_mapped_by_its_role_key() -> None:
    """``image: nginx`` (#27 item 4): the key the missing-image message recommends maps it."""
    config = {
        "services": {"edge": {"image": "nginx"}, "next": {"image": "nginx:latest"}, "old": {"image": "nginx:1.25"}}
    }
    overrides = {"nginx": "pytest-netperf/nginx:local"}
    services = P.override_document(config, PROJECT, LABELS, overrides)["services"]
    assert services["edge"]["image"] == services["next"]["image"] == "pytest-netperf/nginx:local"
    assert services["old"]["image"] == "nginx:1.25"  # a role key is not a repository key
    message = P.missing_image_message("edge", "nginx", "nginx", pull_enabled=False)
    assert "--netperf-image nginx=pytest-netperf/nginx:local" in message
    assert P.image_plan(config, ["edge"], overrides) == {"edge": ("nginx", "pytest-netperf/nginx:local")}


def test_published_host_ports_are_left_out_of_the_stack_netperf_runs() -> None:
    """#27 item 3: ``ports: ["80:80"]`` would clash with the base twin; the services keep
    their container ports, the rest of the configuration stays as it was."""
    config = {
        "version": "3.9",
        "services": {
            "edge": {"image": "nginx", "ports": ["80:80", {"target": 81, "published": 8081}], "expose": ["80"]},
            "app": {"image": "pytest-netperf/echo:local", "environment": {"A": "$${HOME}"}},
        },
        "networks": {"back": {}},
    }
    assert P.publishing_services(config) == ["edge"]
    stripped = P.without_host_ports(config)
    assert P.publishing_services(stripped) == []
    assert stripped["services"]["edge"] == {"image": "nginx", "expose": ["80"]}
    assert stripped["services"]["app"] == config["services"]["app"]
    assert (stripped["version"], stripped["networks"]) == ("3.9", {"back": {}})
    assert config["services"]["edge"]["ports"], "the stack's own configuration is left as it was"
    assert P.known_ports(config["services"]["edge"]) == [80, 81]  # what the endpoints use


def test_override_gives_fixed_container_names_a_project_unique_one() -> None:
    services = P.override_document(CONFIG, PROJECT, LABELS)["services"]
    assert services["edge"]["container_name"] == f"{PROJECT}-edge"
    assert "container_name" not in services["app"]


def test_override_without_default_network_when_nobody_uses_it() -> None:
    config = {"services": {"a": {"image": "x", "networks": {"back": None}}}, "networks": {"back": {}}}
    assert set(P.override_document(config, PROJECT, LABELS)["networks"]) == {"back"}
    assert "version" not in P.override_document(config, PROJECT, LABELS)
    external_default = {"services": {"a": {"image": "x"}}, "networks": {"default": {"external": True}}}
    assert "networks" not in P.override_document(external_default, PROJECT, LABELS)


def test_resources_file_values_then_test_values_then_core_split() -> None:
    split = CoreSplit(driver="0", sut="1-3")
    given = {"edge": Resources(cpus=1.0), "app": Resources(memory="128m", cpuset="2")}
    resources = P.effective_resources(CONFIG, given, split)
    assert resources["app"] == Resources(cpus=0.5, cpuset="2", memory="128m")  # test wins, file cpus kept
    assert resources["edge"] == Resources(cpus=1.0, cpuset="1-3")
    assert resources["migrate"] == Resources(cpuset="1-3")
    assert P.effective_resources(CONFIG)["edge"].empty  # no split given, no limits
    with pytest.raises(ComposeUsageError, match=r"resources=: unknown service\(s\) 'nope'"):
        P.effective_resources(CONFIG, {"nope": Resources(cpus=1.0)})


def test_override_carries_limits_mirrored_into_deploy_where_the_file_set_them() -> None:
    resources = P.effective_resources(CONFIG, {"app": Resources(cpus=1.5)}, CoreSplit("0", "1-3"))
    services = P.override_document(CONFIG, PROJECT, LABELS, resources=resources)["services"]
    assert services["app"]["cpus"] == 1.5 and services["app"]["mem_limit"] == "64m"
    assert services["app"]["cpuset"] == "1-3"
    assert services["app"]["deploy"] == {"resources": {"limits": {"cpus": 1.5, "memory": "64m"}}}
    assert services["edge"]["cpuset"] == "1-3" and "deploy" not in services["edge"]


def test_file_resources_read_service_keys_and_unusual_memory_texts() -> None:
    assert P.file_resources({"cpus": "0.25", "cpuset": "0,1", "mem_limit": "64MB"}) == Resources(
        cpus=0.25, cpuset="0,1", memory="64m"
    )
    assert P.file_resources({"mem_limit": "1.5g"}).memory == str(int(1.5 * 1024**3))
    assert P.file_resources({"mem_limit": 67108864}).memory == "67108864"
    assert P.file_resources({"mem_limit": "lots"}).empty
    assert P.file_resources({"cpuset": "a-b", "cpus": 2}) == Resources(cpus=2.0)


def test_resources_argument_accepts_dicts_and_names_a_bad_one() -> None:
    assert P.resources_from({"edge": {"cpus": 1, "memory": "256m"}}) == {"edge": Resources(cpus=1.0, memory="256m")}
    with pytest.raises(ComposeUsageError, match="resources= for service 'edge': unknown resource key"):
        P.resources_from({"edge": {"cpu": 1}})
    assert P.describe_resources({"edge": Resources(cpus=1.0, cpuset="2-3"), "app": Resources()}) == (
        "edge cpus 1, cpuset 2-3"
    )
    assert P.describe_resources({"app": Resources()}, CoreSplit("0", "1-3")) == (
        "driver cores 0, system under test cores 1-3"
    )
    assert P.describe_resources({}) == "no limits"


def test_override_yaml_round_trips() -> None:
    document = P.override_document(CONFIG, PROJECT, LABELS, {"nginx:1.27": "pytest-netperf/nginx:local"})
    assert yaml.safe_load(P.override_yaml(document)) == document


def test_known_ports_from_ports_expose_and_image() -> None:
    service = {
        "ports": [
            {"published": 8080, "target": 80},
            {"target": 53, "protocol": "udp"},
            "127.0.0.1:9443:443/tcp",
            "9000-9002:9000-9002",
        ],
        "expose": ["8080", "7000/udp", "8125-8126"],
    }
    assert P.known_ports(service, ["9901/tcp", "5353/udp"]) == [80, 443, 8080, 8125, 8126, 9000, 9001, 9002, 9901]
    assert P.known_ports({}) == []
    assert P.known_ports({"expose": ["1-60000"]}) == [1, 60000]  # a huge range is kept as its ends


def test_parse_config_names_the_file_when_it_has_no_services(tmp_path: Path) -> None:
    file = tmp_path / "docker-compose.yml"
    assert P.parse_config("services:\n  a:\n    image: x\n", file)["services"] == {"a": {"image": "x"}}
    with pytest.raises(ComposeFileError, match=f"Compose file {file} defines no services"):
        P.parse_config("version: '3'\n", file)
    with pytest.raises(ComposeFileError, match="does not parse"):
        P.parse_config("services: [\n", file)


def test_image_plan_and_the_missing_image_message() -> None:
    plan = P.image_plan(CONFIG, ["edge", "app", "migrate"], {"nginx:1.27": "pytest-netperf/nginx:local"})
    assert plan == {"edge": ("nginx:1.27", "pytest-netperf/nginx:local"), "migrate": ("team/migrate:v2",) * 2}
    assert P.local_equivalent("nginx:1.27") == "pytest-netperf/nginx:local"
    assert P.local_equivalent("docker.io/library/haproxy:2.8") == "pytest-netperf/haproxy:local"
    assert P.local_equivalent("envoyproxy/envoy:v1.31-latest") == "pytest-netperf/envoy:local"
    assert P.local_equivalent("team/app:v1") is None
    text = P.missing_image_message("edge", "nginx:1.27", "nginx:1.27", pull_enabled=False)
    assert "service 'edge': image nginx:1.27 is not present locally and pulling is off" in text
    assert "--netperf-image nginx:1.27=pytest-netperf/nginx:local" in text
    assert "`build:`" in text and "docker load" in text and "NETPERF_PULL=1" in text
    mapped = P.missing_image_message("edge", "nginx:1.27", "team/nginx:x", pull_enabled=True)
    assert "image team/nginx:x (mapped from nginx:1.27)" in mapped and "--netperf-image" not in mapped
