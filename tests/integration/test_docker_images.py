"""Local images: the build is cached, each role resolves to a present image, absences are explained."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from docker import DockerClient
from docker_helpers import get

from pytest_netperf import Node, Target, Topology
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import ImageMissingError, RuntimeUnavailable
from pytest_netperf.images.build import build_images
from pytest_netperf.images.counting_image import counting_image_tag
from pytest_netperf.images.layers import LABEL_INPUTS, image_id
from pytest_netperf.images.resolve import image_report, resolve_image
from pytest_netperf.images.roles import BASE_IMAGE, LOCAL_IMAGES, OFFICIAL_IMAGES, ROLES
from pytest_netperf.runtime.running import RunningTopology

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def client() -> DockerClient:
    try:
        return docker_client()
    except RuntimeUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def local_images(client: DockerClient) -> dict[str, str]:
    absent = [tag for tag in (BASE_IMAGE, *LOCAL_IMAGES.values()) if image_id(client, tag) is None]
    if absent:
        pytest.skip(f"local images {', '.join(absent)} missing; build them with `netperf images build`")
    return dict(LOCAL_IMAGES)


def test_second_build_reuses_every_image(client: DockerClient, local_images: dict[str, str]) -> None:
    before = {role: image_id(client, tag) for role, tag in local_images.items()}
    lines: list[str] = []
    built = build_images(only=["nginx", "haproxy", "envoy", "kong"], progress=lines.append)
    assert built == {role: local_images[role] for role in ("nginx", "haproxy", "envoy")}
    assert any("kong: skipped" in line for line in lines)
    for role in ("base", "nginx", "haproxy", "envoy"):
        assert any(f"{role}: up to date" in line for line in lines), lines
    assert not any("building" in line for line in lines), lines
    assert {role: image_id(client, tag) for role, tag in local_images.items()} == before


def test_cost_build_adds_the_proxies_cost_variants(client: DockerClient, local_images: dict[str, str]) -> None:
    lines: list[str] = []
    built = build_images(only=["nginx", "echo"], progress=lines.append, cost=True)
    assert set(built) == {"nginx", "echo", "nginx-cost"}  # echo is no proxy: no counting variant
    assert built["nginx-cost"] == counting_image_tag(str(client.images.get(local_images["nginx"]).id))
    output = client.containers.run(built["nginx-cost"], ["valgrind", "--version"], remove=True, stdout=True)
    assert output.decode().startswith("valgrind-")


def test_local_images_carry_their_input_hash(client: DockerClient, local_images: dict[str, str]) -> None:
    hashes = {role: client.images.get(tag).labels.get(LABEL_INPUTS) for role, tag in local_images.items()}
    assert all(hashes.values()) and len(set(hashes.values())) == len(hashes)


@pytest.mark.parametrize(
    "role, argv, expected",
    [
        ("nginx", ["nginx", "-v"], "nginx version"),
        ("haproxy", ["haproxy", "-v"], "HAProxy version"),
        ("envoy", ["envoy", "--version"], "envoy  version"),
        ("echo", ["netperf-driver", "echo", "--help"], "x-netperf-echo"),
    ],
)
def test_each_role_image_has_its_tool_on_path(
    client: DockerClient, local_images: dict[str, str], role: str, argv: list[str], expected: str
) -> None:
    output = client.containers.run(local_images[role], argv, remove=True, stdout=True, stderr=True)
    assert expected in output.decode()


def test_report_names_an_image_for_every_role(client: DockerClient, local_images: dict[str, str]) -> None:
    report = image_report(client=client)
    assert set(report) == set(ROLES)
    assert report["echo"] == f"{LOCAL_IMAGES['echo']} (local build)"
    assert report["nginx"] == f"{LOCAL_IMAGES['nginx']} (local build)"
    if image_id(client, OFFICIAL_IMAGES["kong"]) is None:
        assert report["kong"].startswith("missing: Kong image kong:3.8 is not present")


def test_kong_is_never_substituted(client: DockerClient, monkeypatch: pytest.MonkeyPatch) -> None:
    if image_id(client, OFFICIAL_IMAGES["kong"]) is not None:
        pytest.skip("an official kong image is present here; the absence path cannot be shown")
    monkeypatch.delenv("NETPERF_IMAGE_KONG", raising=False)
    monkeypatch.delenv("NETPERF_PULL", raising=False)
    with pytest.raises(ImageMissingError, match="Kong ships only as official container images"):
        resolve_image("kong", client=client)


def test_absent_override_is_named_and_not_pulled(client: DockerClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NETPERF_PULL", raising=False)
    monkeypatch.setenv("NETPERF_IMAGE_HAPROXY", "pytest-netperf/absent:never")
    with pytest.raises(
        ImageMissingError,
        match=r"pytest-netperf/absent:never \(set for role 'haproxy' "
        r"by NETPERF_IMAGE_HAPROXY\) is not present",
    ):
        resolve_image("haproxy", client=client)
    with pytest.raises(ImageMissingError, match="by option/ini"):
        resolve_image("nginx", {"nginx": "pytest-netperf/absent:never"}, client=client)


# ----------------------------------------------------------------------------- like the official images


def test_each_image_runs_its_default_command_and_config(
    local_images: dict[str, str], netperf_topology: Callable[..., RunningTopology]
) -> None:
    """No command, no config: each image starts the way the official one does and answers."""
    nodes = (
        Node("web", "container", 80, image=local_images["nginx"]),
        Node("lb", "container", 80, image=local_images["haproxy"]),
        Node("mesh", "container", 10000, image=local_images["envoy"], extra_ports=(9901,)),
        Node("app", "container", 8080, image=local_images["echo"]),
    )
    targets = (Target("web", "web", 80), Target("lb", "lb", 80), Target("mesh", "mesh", 10000))
    running = netperf_topology(Topology("image-defaults", nodes, (*targets, Target("admin", "mesh", 9901, "/ready"))))
    status, headers, body = get(running.endpoint("web").url)
    assert status == 200 and headers["server"].startswith("nginx") and b"Welcome to nginx" in body
    assert get(running.endpoint("lb").url)[2] == b"haproxy default config\n"
    assert get(running.endpoint("mesh").url)[2] == b"envoy default config\n"
    assert get(running.endpoint("admin").url)[0] == 200
    assert get(f"http://{running.ip('app')}:8080/")[0] == 200  # the echo server is the echo image's default
    web = running.container("web")
    logs = web.logs(stdout=True, stderr=False).decode()
    assert '"GET / HTTP/1.1" 200' in logs  # access log on stdout, as the official image does
    users = web.exec_run(["bash", "-c", "grep -h '^Uid' /proc/[0-9]*/status | sort -u"]).output.decode()
    nginx_uid = web.exec_run(["id", "-u", "nginx"]).output.decode().strip()
    assert nginx_uid.isdigit() and any(line.split()[1] == nginx_uid for line in users.splitlines())  # workers


@pytest.mark.parametrize(
    "target, text",
    [
        ("/etc/nginx/conf.d/default.conf", "server { listen 80; return 200 'team server block\\n'; }\n"),
        (
            "/etc/nginx/nginx.conf",
            "user nginx; events {} http { server { listen 80; return 200 'team nginx.conf\\n'; } }\n",
        ),
    ],
    ids=["conf.d", "nginx.conf"],
)
def test_nginx_reads_a_config_mounted_where_compose_files_put_it(
    local_images: dict[str, str],
    netperf_topology: Callable[..., RunningTopology],
    tmp_path: Path,
    target: str,
    text: str,
) -> None:
    """``./nginx/edge.conf:/etc/nginx/conf.d/default.conf:ro`` or a whole nginx.conf, as for nginx:1.27."""
    (tmp_path / "team.conf").write_text(text)
    node = Node("web", "nginx", 80, image=local_images["nginx"], config=str(tmp_path / "team.conf"), config_path=target)
    running = netperf_topology(Topology("nginx-official-paths", (node,), (Target("web", "web", 80),)))
    expected = text.split("'")[1].replace("\\n", "\n").encode()
    assert get(running.endpoint("web").url)[2] == expected
