"""File-backed topology nodes: the team's image, config files, command, env and resources."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_netperf import ConfigPathError, Node, Resources, Target, Topology, gateway_topology
from pytest_netperf.runtime.docker import node_limits
from pytest_netperf.runtime.isolation import DOCKER_DEFAULT_CAPABILITIES, ROLE_CAPABILITIES, hardening_options
from pytest_netperf.runtime.resources import CoreSplit
from pytest_netperf.runtime.running import images_fact, resources_fact
from pytest_netperf.topology.render.containers import container_spec, container_specs
from pytest_netperf.topology.render.files import (
    DEFAULT_CONFIG_PATHS,
    Mount,
    check_configs,
    config_mounts,
    missing_configs,
)


def _topo(*nodes: Node, targets: tuple[Target, ...] = ()) -> Topology:
    return Topology("team", nodes, targets)


def _edge(config: str | Path, **kwargs: object) -> Node:
    return Node("edge", "nginx", 80, upstreams=("app",), config=config, **kwargs)  # type: ignore[arg-type]


APP = Node("app", "container", 8080, image="pytest-netperf/echo:local", command=("netperf-driver", "echo"))


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "node, message",
    [
        (Node("app", "container", 80), "of kind 'container' needs image="),
        (Node("app", "container", 80, image="team/app:1", command=("run", 3)), "3 is not one"),  # type: ignore[arg-type]
        (Node("app", "container", 80, image="team/app:1", command="run app"), "list of strings"),  # type: ignore[arg-type]
        (Node("app", "container", 80, image="team/app:1", command=()), "command is empty"),
        (Node("app", "echo", 80, image="bad image"), "image reference"),
        (Node("app", "echo", 80, config="echo.conf"), "echo server reads no config"),
        (Node("app", "container", 80, image="team/app:1", config="app.ini"), "set config_path="),
        (Node("app", "nginx", 80, config="x.conf", config_path="etc/nginx.conf"), "absolute path"),
        (Node("app", "nginx", 80, config_path="/etc/nginx/nginx.conf"), "config_path= is set without config="),
        (Node("app", "nginx", 80, config="x.conf", env={"A": 1}), "env 'A' must map a name to a string"),  # type: ignore[dict-item]
        (Node("app", "nginx", 80, config="x.conf", params={"health_path": "ping"}), "must start with '/'"),
    ],
)
def test_validation_names_the_node_and_the_field(node: Node, message: str) -> None:
    with pytest.raises(ValueError, match=message) as raised:
        _topo(node).validate()
    assert "'app'" in str(raised.value)


def test_container_without_image_is_refused_before_any_spec() -> None:
    with pytest.raises(ValueError, match="needs image="):
        container_specs(_topo(Node("app", "container", 80)))


def test_convenient_spellings_are_normalized(tmp_path: Path) -> None:
    node = Node(
        "app",
        "container",
        80,
        image="team/app:1",
        command=["serve", "--port", "80"],  # type: ignore[arg-type]
        config=tmp_path / "app.ini",
        config_path="/etc/app.ini",
        resources={"cpus": 0.5, "memory": "64m"},  # type: ignore[arg-type]
    )
    assert node.command == ("serve", "--port", "80")
    assert node.config == str(tmp_path / "app.ini")
    assert node.resources == Resources(cpus=0.5, memory="64m")
    assert hash(node) == hash(node)  # still usable as a set member
    with pytest.raises(ValueError, match=r"node 'app': .*cpus"):
        Node("app", "echo", 80, resources={"cpus": -1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown resource key"):
        Node("app", "echo", 80, resources={"cores": 2})  # type: ignore[arg-type]


def test_builders_are_untouched_by_the_new_fields() -> None:
    topo = gateway_topology("nginx")
    assert all(not n.file_backed and n.image is None and n.resources is None for n in topo.nodes)
    gw = {s.node: s for s in container_specs(topo)}["gw"]
    assert gw.command == ["nginx", "-e", "stderr", "-c", "/netperf/nginx.conf"]
    assert list(gw.files) == ["/netperf/nginx.conf"] and gw.mounts == () and gw.image is None


# ----------------------------------------------------------------------------- specs


def test_a_config_file_is_mounted_read_only_at_the_images_path(tmp_path: Path) -> None:
    (tmp_path / "nginx").mkdir()
    (tmp_path / "nginx" / "edge.conf").write_text("events {}\n")
    topo = _topo(APP, _edge("nginx/edge.conf", image="nginx:1.27", env={"TZ": "UTC"}))
    specs = {s.node: s for s in container_specs(topo, base_dir=tmp_path)}
    edge = specs["edge"]
    assert edge.command is None and edge.files == {}
    assert edge.mounts == (Mount(str(tmp_path / "nginx" / "edge.conf"), "/etc/nginx/nginx.conf", True),)
    assert edge.image == "nginx:1.27" and edge.environment == {"TZ": "UTC"}
    assert (edge.port, edge.health_path, edge.tcp_ports) == (80, None, ())  # TCP readiness
    assert specs["app"].command == ["netperf-driver", "echo"] and specs["app"].role == "container"
    assert [s.node for s in container_specs(topo, base_dir=tmp_path)] == ["app", "edge"]  # upstreams first


def test_config_path_and_health_path_and_extra_ports(tmp_path: Path) -> None:
    (tmp_path / "edge.conf").write_text("server {}\n")
    node = _edge(
        str(tmp_path / "edge.conf"),  # absolute: no base dir needed
        config_path="/etc/nginx/conf.d/default.conf",
        extra_ports=(8443,),
        params={"health_path": "/healthz"},
        command=("nginx", "-g", "daemon off;"),
    )
    spec = container_spec(_topo(APP, node), node)
    assert spec.mounts == (Mount(str(tmp_path / "edge.conf"), "/etc/nginx/conf.d/default.conf"),)
    assert (spec.health_path, spec.tcp_ports) == ("/healthz", (8443,))
    assert spec.command == ["nginx", "-g", "daemon off;"]


def test_a_folder_overlays_the_config_directory_entry_by_entry(tmp_path: Path) -> None:
    folder = tmp_path / "nginx"
    (folder / "conf.d").mkdir(parents=True)
    (folder / "nginx.conf").write_text("events {}\n")
    (folder / "conf.d" / "edge.conf").write_text("server {}\n")
    mounts = config_mounts(_edge("nginx"), tmp_path)
    assert mounts == (
        Mount(str(folder / "conf.d"), "/etc/nginx/conf.d"),
        Mount(str(folder / "nginx.conf"), "/etc/nginx/nginx.conf"),
    )
    whole = config_mounts(_edge("nginx/conf.d", config_path="/etc/nginx/conf.d"), tmp_path)
    assert whole == (Mount(str(folder / "conf.d"), "/etc/nginx/conf.d"),)


@pytest.mark.parametrize("kind", ["haproxy", "envoy", "kong"])
def test_each_kind_mounts_a_file_at_the_official_path(tmp_path: Path, kind: str) -> None:
    (tmp_path / "cfg").write_text("x\n")
    node = Node("gw", kind, 8000, upstreams=("app",), config="cfg")  # type: ignore[arg-type]
    spec = container_spec(_topo(APP, node), node, tmp_path)
    assert spec.mounts == (Mount(str(tmp_path / "cfg"), DEFAULT_CONFIG_PATHS[kind]),)
    assert spec.command is None and spec.files == {}
    if kind == "kong":  # DB-less Kong reading the team's declarative file
        assert spec.environment == {"KONG_DATABASE": "off", "KONG_DECLARATIVE_CONFIG": "/kong/declarative/kong.yml"}


def test_missing_config_names_the_path_and_the_base_dir(tmp_path: Path) -> None:
    topo = _topo(APP, _edge("nginx/edge.conf"))
    problems = missing_configs(topo, tmp_path)
    assert problems == [
        f"node 'edge': config 'nginx/edge.conf' does not exist: {tmp_path / 'nginx' / 'edge.conf'} "
        f"(resolved against {tmp_path})"
    ]
    with pytest.raises(ConfigPathError, match=r"nginx/edge\.conf"):
        check_configs(topo, tmp_path)
    (tmp_path / "empty").mkdir()
    assert "is empty" in missing_configs(_topo(APP, _edge("empty")), tmp_path)[0]


# ----------------------------------------------------------------------------- capabilities, resources, facts


def test_a_generic_container_gets_dockers_default_capabilities_and_known_kinds_keep_theirs() -> None:
    assert ROLE_CAPABILITIES["container"] == DOCKER_DEFAULT_CAPABILITIES
    assert hardening_options("container")["cap_add"] == list(DOCKER_DEFAULT_CAPABILITIES)
    assert hardening_options("container")["security_opt"] == ["no-new-privileges"]
    assert hardening_options("nginx")["cap_add"] == ["CHOWN", "SETGID", "SETUID"]
    assert "SYS_ADMIN" not in DOCKER_DEFAULT_CAPABILITIES and "NET_ADMIN" not in DOCKER_DEFAULT_CAPABILITIES


def test_node_limits_follow_resources_and_the_core_split() -> None:
    split = CoreSplit(driver="0", sut="1-3")
    plain = Node("a", "echo", 80)
    limited = Node("b", "echo", 80, resources=Resources(cpus=1.5, memory="256m"))
    pinned = Node("c", "echo", 80, resources=Resources(cpuset="2"))
    assert node_limits(plain, None) is None
    assert node_limits(plain, split) == Resources(cpuset="1-3")
    assert node_limits(limited, split) == Resources(cpus=1.5, cpuset="1-3", memory="256m")
    assert node_limits(pinned, split) == Resources(cpuset="2")  # the test's own cpuset wins
    options = node_limits(limited, split).docker_options()  # type: ignore[union-attr]
    assert options == {"nano_cpus": 1_500_000_000, "cpuset_cpus": "1-3", "mem_limit": 256 * 1024**2}


def test_facts_name_each_image_and_the_limits() -> None:
    topo = _topo(APP, Node("edge", "nginx", 80, upstreams=("app",), image="nginx:1.27"), Node("x", "echo", 81))
    images = {"app": "pytest-netperf/echo:local", "edge": "pytest-netperf/nginx:local", "x": "e:1"}
    requested = {"app": "pytest-netperf/echo:local", "edge": "nginx:1.27", "x": None}
    assert images_fact(topo, images, requested) == (
        "app=pytest-netperf/echo:local, edge=pytest-netperf/nginx:local (for nginx:1.27), x=e:1"
    )
    limits = {"edge": Resources(cpus=1, cpuset="2-3")}
    assert resources_fact(topo, limits) == "edge cpus 1, cpuset 2-3"
    assert resources_fact(topo, {}) == ""
    split = CoreSplit("0", "1-3")
    assert resources_fact(topo, limits, split) == (
        "edge cpus 1, cpuset 2-3; driver cores 0, system under test cores 1-3"
    )
