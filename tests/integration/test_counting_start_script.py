"""The counting pass of a service started by a wrapper script (issue #41), and of an image no
counter can be added to, with real containers.

``command: /app/start.sh`` (``envsubst … && nginx -g 'daemon off;'``, without ``exec``) is a
common pattern: the shell is the container's main process and the server its child. On stop
the shell dies at once; the counting wrapper must still wait for the server to write its
counts. A FROM-scratch image has no shell and no package manager: a clear error, and no
image of a failed build left behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docker_helpers import skip_without_counting_image, skip_without_images

from pytest_netperf.drivers import make_driver
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.engine import labels as L
from pytest_netperf.images.counting_image import LABEL_COST_OF
from pytest_netperf.images.layers import build_layer
from pytest_netperf.images.roles import LOCAL_IMAGES
from pytest_netperf.images.rootfs import ImageBuildError
from pytest_netperf.measure.counting_pass import CountingPlan, run_counting_pass
from pytest_netperf.runtime.counting_clone import NodeCounter

pytestmark = pytest.mark.docker
ECHO = LOCAL_IMAGES["echo"]
#: A start script as users write them: configure, then run the server as a child (no exec).
#: The server takes a while to stop, as nginx's master does while its workers finish: here it
#: ignores TERM, and a shell that runs it stops it (HUP) 2 s after its own TERM.
START_SCRIPT = (
    "echo configured >&2 && sh -c '"
    '(trap "" TERM; exec netperf-driver echo --listen 0.0.0.0:8080) & server=$!; '
    'trap "sleep 2; kill -HUP $server" TERM; wait $server; wait $server'
    "'; echo server stopped >&2"
)


@pytest.fixture(scope="module", autouse=True)
def _needs_a_traceable_echo() -> None:
    skip_without_images("echo")
    skip_without_counting_image(ECHO)


def test_a_server_started_by_a_script_without_exec_is_counted_by_both_tools(docker_session) -> None:
    client, session_id, network = docker_session
    source = client.containers.run(
        ECHO,
        ["sh", "-c", START_SCRIPT],
        detach=True,
        network=network,
        labels={L.SESSION: session_id},
        name=f"{network}-edge",
    )
    counter = NodeCounter(client, source, "edge", network, 8080, ready_timeout_s=60)
    driver = make_driver("rust")
    plan = CountingPlan(low=40, high=200, repetitions=2, time_limit_s=120.0)
    costs = run_counting_pass(counter, ["instructions", "syscalls"], driver.run, "http://edge:8080/", LoadShape(), plan)
    instructions, syscalls = costs["instructions"], costs["syscalls"]
    # the echo server answers a request in thousands of instructions and a few system calls,
    # counted in every repetition (a server killed mid-write counts 0 or leaves no summary)
    assert all(1_000 < v < 1_000_000 for v in instructions.per_request), instructions
    assert all(1.0 <= v < 50 for v in syscalls.per_request), syscalls
    assert instructions.spread < 0.05 and syscalls.spread < 0.05, (instructions, syscalls)


def test_a_from_scratch_image_is_a_clear_error_and_leaves_no_image(docker_session, tmp_path: Path) -> None:
    client, session_id, network = docker_session
    tag = f"pytest-netperf/test-scratch:{session_id}"
    (tmp_path / "server").write_bytes(b"not a shell\n")
    build_layer(
        client, tag, "FROM scratch\nCOPY server /server\n", {"server": tmp_path / "server"}, {L.SESSION: session_id}
    )
    source_id = str(client.images.get(tag).id)
    dangling_before = {i.id for i in client.images.list(all=True, filters={"dangling": True})}
    source = client.containers.create(tag, ["/server"], labels={L.SESSION: session_id}, name=f"{network}-scratch")
    counter = NodeCounter(client, source, "edge", network, 8080)
    with pytest.raises(ImageBuildError) as caught:
        counter.prepare()
    text = str(caught.value)
    assert "node 'edge'" in text and tag in text, text
    assert "no shell (/bin/sh)" in text and "no package manager" in text and "Ways out" in text
    error = caught.value  # no docker-py traceback chained to it
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)
    dangling_after = {i.id for i in client.images.list(all=True, filters={"dangling": True})}
    assert dangling_after - dangling_before == set()
    assert client.images.list(all=True, filters={"label": f"{LABEL_COST_OF}={source_id}"}) == []
    assert client.containers.list(all=True, filters={"label": f"{LABEL_COST_OF}={source_id}"}) == []


def test_a_failed_counting_build_removes_its_layers(docker_session) -> None:
    """An image with a shell but no package manager: the build fails at its install step, and
    the layers it committed before (labelled with the image they extend) are removed."""
    client, session_id, _ = docker_session
    tag = f"pytest-netperf/test-no-package-manager:{session_id}"
    build_layer(
        client,
        tag,
        f"FROM {ECHO}\nUSER root\nRUN rm -f /usr/bin/apt-get /usr/bin/apt /usr/bin/dpkg\n",
        {},
        {L.SESSION: session_id},
    )
    source_id = str(client.images.get(tag).id)
    counter_source = client.containers.create(tag, ["sleep", "60"], labels={L.SESSION: session_id})
    with pytest.raises(ImageBuildError, match="no package manager"):
        NodeCounter(client, counter_source, "edge", "none", 8080).prepare()
    assert client.images.list(all=True, filters={"dangling": True, "label": f"{LABEL_COST_OF}={source_id}"}) == []
