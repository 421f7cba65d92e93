"""The ``netperf_compose`` fixture: a team's own Compose stack as a gate target.

Layered on ``netperf_docker`` (session id, Docker client, cleanup on signals, at exit and of
crashed sessions, the cores split around the load driver) and ``netperf_image_overrides`` (the
image mapping). The core lives in :mod:`pytest_netperf.runtime.compose`; this module is the
pytest glue.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, Protocol

import pytest

from pytest_netperf.errors import ComposeUnavailable, StackUnchanged
from pytest_netperf.plugin.base_fixtures import BaseRevision
from pytest_netperf.plugin.session import session_of
from pytest_netperf.plugin.skips import UnchangedSkip
from pytest_netperf.runtime.compose.session import ComposeStacks
from pytest_netperf.runtime.compose.stack import ComposeStack
from pytest_netperf.runtime.docker import DockerRuntime


class ComposeFactory(Protocol):
    """The type of the ``netperf_compose`` fixture's value."""

    def __call__(
        self,
        path: str | Path,
        services: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        project_dir: str | Path | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> ComposeStack: ...


@pytest.fixture(scope="session")
def netperf_compose(
    request: pytest.FixtureRequest,
    netperf_docker: DockerRuntime,
    netperf_image_overrides: Mapping[str, str],
    netperf_base: Optional[BaseRevision],
) -> Iterator[ComposeFactory]:
    """A factory ``netperf_compose(path, services=None, env=None, project_dir=None, resources=None)``
    that stands a Compose project up as the team wrote it and returns the running
    :class:`~pytest_netperf.runtime.compose.stack.ComposeStack`.

    Paths are relative to the rootdir; ``env`` feeds Compose's variable substitution;
    ``resources`` maps a service to ``Resources`` or a dict (cpus, cpuset, memory). The same
    arguments give the same stack within the session; every stack goes down at session end.
    Skips with the reason when no Compose implementation is installed. Under
    ``--netperf-base REF`` each stack also comes up from REF's files, and its endpoints carry
    that twin (budgets against ``base`` judge the pairs).
    """

    def started(name: str, seconds: float) -> None:
        netperf_docker.startup_times[name] = seconds

    stacks = ComposeStacks(
        netperf_docker.client,
        netperf_docker.session_id,
        request.config.rootpath,
        image_overrides=netperf_image_overrides,
        driver_image=netperf_docker.images.get("echo"),
        on_started=started,
        base=netperf_base,
        skip_unchanged=session_of(request.config).settings.base_skip_unchanged,
        split=netperf_docker.core_split,  # the topologies' split: services keep off a pinned driver's cores
        # the services join the session's weighted cgroup, as the topologies' containers do
        service_keys=netperf_docker.priority.compose_keys() if netperf_docker.priority is not None else None,
    )

    def factory(
        path: str | Path,
        services: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        project_dir: str | Path | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> ComposeStack:
        try:
            return stacks(path, services, env, project_dir, resources)
        except ComposeUnavailable as exc:
            pytest.skip(str(exc))
        except StackUnchanged as exc:
            raise UnchangedSkip(str(exc)) from None

    try:
        yield factory
    finally:
        stacks.down_all()
