"""Local images: the build is cached, each role resolves to a present image, absences are explained."""

from __future__ import annotations

import pytest
from docker import DockerClient

from pytest_netperf.errors import ImageMissingError, RuntimeUnavailable
from pytest_netperf.images.layers import LABEL_INPUTS, image_id
from pytest_netperf.images.resolve import (
    BASE_IMAGE,
    LOCAL_IMAGES,
    OFFICIAL_IMAGES,
    ROLES,
    build_images,
    image_report,
    resolve_image,
)
from pytest_netperf.runtime.client import docker_client

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
