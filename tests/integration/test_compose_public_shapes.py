"""Shapes of public Compose stacks that a new user met (#41), through the real Compose:

- a ``build:`` service whose Dockerfile starts ``FROM nginx:1.27``: ``--netperf-image`` maps it
  (no registry here), and a mapping to an absent image is named before any build;
- a service under a ``profiles:`` entry is not started unless its profile is active, as Compose
  does, and the rest of the stack is gated;
- an unset ``${VAR}`` is a warning naming the variable;
- a service on ``network_mode: host`` gets an error saying how to measure it;
- a port published through a variable (``"${HTTP_PORT:-80}:80"``) does not stop the stack.

Real containers through Compose; nothing of a test's session is left afterwards.
"""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker_helpers import get, skip_without_compose_stack_parts

from pytest_netperf.engine import labels as L
from pytest_netperf.errors import ComposeStartError, ComposeUsageError, ImageMissingError
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.compose.cli import find_compose
from pytest_netperf.runtime.compose.commands import ComposeVariableWarning
from pytest_netperf.runtime.compose.launcher import ComposeLauncher, StackSpec
from pytest_netperf.runtime.docker import DockerRuntime

pytestmark = pytest.mark.docker

ECHO = "pytest-netperf/echo:local"
MAPPING = {"nginx:1.27": "pytest-netperf/nginx:local"}
SITE = "server { listen 80; access_log off; location / { return 200 'built from nginx\\n'; } }\n"
APP = f"""\
  app:
    image: {ECHO}
    command: ["netperf-driver", "echo", "--listen", "0.0.0.0:8080", "--id", "app"]
    expose: ["8080"]
"""


@pytest.fixture(scope="module", autouse=True)
def needs_docker_compose_and_images() -> None:
    skip_without_compose_stack_parts()


def write_stack(folder: Path, compose: str, files: dict[str, str] | None = None) -> Path:
    for relative, text in (files or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    compose_file = folder / "docker-compose.yml"
    compose_file.write_text(textwrap.dedent(compose))
    return compose_file


@pytest.fixture
def launcher(netperf_docker: DockerRuntime) -> Iterator[ComposeLauncher]:
    """A launcher with a session of its own: after the test nothing of that session may remain."""
    session = f"pub{uuid.uuid4().hex[:6]}"
    yield ComposeLauncher(find_compose(), netperf_docker.client, session, image_overrides=MAPPING, driver_image=ECHO)
    client = netperf_docker.client
    filters = {"label": [f"{L.SESSION}={session}"]}
    left = [c.name for c in client.containers.list(all=True, filters=filters, ignore_removed=True)]
    left += [n.name for n in client.networks.list(filters=filters)]
    left += [str(i.tags) for i in client.images.list(filters=filters)]
    clean_session(session, client)
    assert not left, f"left behind by session {session}: {left}"


def test_the_image_mapping_reaches_the_from_line_of_a_built_service(launcher: ComposeLauncher, tmp_path: Path) -> None:
    compose_file = write_stack(
        tmp_path,
        "services:\n  edge:\n    build: ./edge\n    expose: ['80']\n",
        {
            "edge/Dockerfile": "FROM nginx:1.27\nCOPY site.conf /etc/nginx/conf.d/default.conf\n",
            "edge/site.conf": SITE,
        },
    )
    with launcher.up(StackSpec.build(compose_file)) as stack:
        endpoint = stack.endpoint("edge", port=80)
        status, _, body = get(endpoint.url)
        assert (status, body) == (200, b"built from nginx\n")
        assert "(built, FROM pytest-netperf/nginx:local for nginx:1.27)" in endpoint.facts["images"]
    assert (tmp_path / "edge" / "Dockerfile").read_text().startswith("FROM nginx:1.27\n"), "the team's file is kept"


def test_a_from_line_mapped_to_an_absent_image_is_named_before_the_build(
    launcher: ComposeLauncher, tmp_path: Path
) -> None:
    compose_file = write_stack(
        tmp_path,
        "services:\n  edge:\n    build: ./edge\n",
        {"edge/Dockerfile": "# the edge\nFROM nginx:1.27\n"},
    )
    launcher.image_overrides = {"nginx:1.27": "pytest-netperf/absent:local"}
    with pytest.raises(ImageMissingError) as caught:
        launcher.up(StackSpec.build(compose_file))
    text = str(caught.value)
    assert f"service 'edge': {tmp_path / 'edge' / 'Dockerfile'} line 2: FROM nginx:1.27 is mapped to" in text
    assert "pytest-netperf/absent:local (--netperf-image), which is not present locally" in text


def test_an_unmapped_from_image_that_cannot_be_pulled_leads_the_build_error_with_the_fix(
    launcher: ComposeLauncher, tmp_path: Path
) -> None:
    compose_file = write_stack(
        tmp_path,
        "services:\n  edge:\n    build: ./edge\n",
        {"edge/Dockerfile": "FROM nginx:1.19.404-netperf-absent\n"},
    )
    with pytest.raises(ComposeStartError) as caught:
        launcher.up(StackSpec.build(compose_file))
    text = str(caught.value)
    lead = text.split("Compose said:")[0]
    assert "FROM nginx:1.19.404-netperf-absent is not present locally and could not be pulled" in lead
    assert "--netperf-image nginx:1.19.404-netperf-absent=pytest-netperf/nginx:local" in lead


def test_a_service_under_an_inactive_profile_is_not_started_and_the_rest_is(
    launcher: ComposeLauncher, tmp_path: Path
) -> None:
    compose_file = write_stack(
        tmp_path,
        "services:\n"
        + APP
        + "  debug:\n"
        + f"    image: {ECHO}\n"
        + '    command: ["netperf-driver", "echo", "--listen", "0.0.0.0:9090", "--id", "debug"]\n'
        + "    profiles: [debug]\n",
    )
    with launcher.up(StackSpec.build(compose_file)) as stack:
        assert stack.services == ("app",)
        assert get(stack.endpoint("app", port=8080).url)[0] == 200
        with pytest.raises(ComposeUsageError, match=r"service 'debug' is in profile\(s\) debug.*COMPOSE_PROFILES"):
            stack.endpoint("debug", port=9090)
    with launcher.up(StackSpec.build(compose_file, env={"COMPOSE_PROFILES": "debug"})) as stack:
        assert stack.services == ("app", "debug")
        assert get(stack.endpoint("debug", port=9090).url)[0] == 200


def test_an_unset_variable_is_a_warning_naming_it(launcher: ComposeLauncher, tmp_path: Path) -> None:
    compose_file = write_stack(
        tmp_path,
        "services:\n" + APP.replace('"--id", "app"', '"--id", "app${NETPERF_UNSET_SUFFIX}"'),
    )
    with pytest.warns(ComposeVariableWarning, match="variable\\(s\\) NETPERF_UNSET_SUFFIX not set"):
        stack = launcher.up(StackSpec.build(compose_file))
    stack.down()


def test_a_service_on_the_host_network_says_how_to_measure_it(launcher: ComposeLauncher, tmp_path: Path) -> None:
    compose_file = write_stack(
        tmp_path,
        f"""\
        services:
          edge:
            image: {ECHO}
            command: ["netperf-driver", "echo", "--listen", "127.0.0.1:18099", "--id", "edge"]
            network_mode: host
        """,
    )
    with launcher.up(StackSpec.build(compose_file)) as stack, pytest.raises(ComposeUsageError) as caught:
        stack.endpoint("edge", port=18099)
    text = str(caught.value)
    assert "runs with network_mode: host" in text and "netperf.measure('http://127.0.0.1:18099/')" in text


def test_a_port_published_through_a_variable_does_not_stop_the_stack(
    launcher: ComposeLauncher, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``"${HTTP_PORT:-18097}:8080"``: Compose v1 cannot print such a file without interpolating it,
    which the copy without host ports used to need."""
    monkeypatch.delenv("HTTP_PORT", raising=False)
    compose_file = write_stack(tmp_path, "services:\n" + APP + '    ports: ["${HTTP_PORT:-18097}:8080"]\n')
    with launcher.up(StackSpec.build(compose_file)) as stack:
        assert get(stack.endpoint("app", port=8080).url)[0] == 200
        (container,) = stack.service("app")
        assert not container.attrs["HostConfig"]["PortBindings"], "no host port is bound"
