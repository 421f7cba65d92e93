"""The counting pass on bad input, with real containers: an image no counter can be added to, a
server that dies under its counting tool, one that never listens, and fewer responses than requests.
Each is an error naming the node (and the image, the log tail), never a count."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from docker import DockerClient
from docker_helpers import skip_without_counting_image, skip_without_images

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.images.counting_image import counting_image
from pytest_netperf.images.layers import build_layer
from pytest_netperf.images.roles import LOCAL_IMAGES
from pytest_netperf.images.rootfs import ImageBuildError
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.counting_clone import COUNTING_LABEL, CountingError, NodeCounter

pytestmark = pytest.mark.docker
ECHO = LOCAL_IMAGES["echo"]


@pytest.fixture(scope="module", autouse=True)
def _needs_a_traceable_echo() -> None:
    skip_without_images("echo")
    skip_without_counting_image(ECHO)


def _source(client: DockerClient, session_id: str, network: str, command: list[str]):
    return client.containers.run(
        ECHO, command, detach=True, network=network, labels={L.SESSION: session_id}, name=f"{network}-src"
    )


def test_an_image_without_a_package_manager_is_named_with_the_ways_out() -> None:
    client = docker_client()
    session_id = f"costbad{uuid.uuid4().hex[:8]}"
    tag = f"pytest-netperf/test-no-package-manager:{session_id}"
    try:
        build_layer(
            client,
            tag,
            f"FROM {ECHO}\nUSER root\nRUN rm -f /usr/bin/apt-get /usr/bin/apt /usr/bin/dpkg\n",
            {},
            {L.SESSION: session_id},
        )
        with pytest.raises(ImageBuildError) as caught:
            counting_image(client, tag, "node 'edge'")
        text = str(caught.value)
        assert "node 'edge'" in text and tag in text
        assert "no package manager" in text and "Ways out" in text and "distroless" in text
    finally:
        # the failed cost build leaves untagged layers on top of the tag, labelled like it
        clean_session(session_id, client)
    assert client.images.list(all=True, filters={"label": [f"{L.SESSION}={session_id}"]}) == []


def test_a_server_that_dies_under_its_counting_tool_is_an_error_with_its_log(docker_session) -> None:
    client, session_id, network = docker_session
    source = _source(client, session_id, network, ["sh", "-c", "echo starting; sleep 600"])
    dying = NodeCounter(client, source, "edge", network, 8080, ready_timeout_s=20)
    # the clone runs the source's command: replace it by one that fails at once
    source.attrs["Config"]["Cmd"] = ["sh", "-c", "echo config error on line 3 >&2; exit 3"]
    exited = r"(?s)edge: the server exited under its counting tool.*config error on line 3"
    with pytest.raises(CountingError, match=exited), dying.clone("instructions", 60):
        pytest.fail("a clone that exited was handed out")


def test_a_server_that_never_listens_times_out_naming_the_port(docker_session) -> None:
    client, session_id, network = docker_session
    source = _source(client, session_id, network, ["sleep", "600"])
    silent = NodeCounter(client, source, "edge", network, 8080, ready_timeout_s=3)
    never = "did not accept connections on port 8080 under its counting tool within 3s"
    with pytest.raises(CountingError, match=never), silent.clone("syscalls", 60):
        pytest.fail("a clone that never listened was handed out")


def test_a_clone_is_removed_when_its_block_fails(docker_session) -> None:
    client, session_id, network = docker_session
    source = _source(client, session_id, network, ["netperf-driver", "echo", "--listen", "0.0.0.0:8080"])
    counter = NodeCounter(client, source, "edge", network, 8080)
    with pytest.raises(RuntimeError, match="the load failed"), counter.clone("syscalls", 120) as clone:
        assert clone.address.endswith(":8080")
        raise RuntimeError("the load failed")
    assert client.containers.list(all=True, filters={"label": COUNTING_LABEL}) == []
    assert not Path("/tmp/netperf-cost").exists()  # the counts live in the clone, never on the host
