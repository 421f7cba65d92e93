"""pytest fixtures that stand topologies up in Docker (the plugin loads this as a plugin module).

Layers, like pytest-httpserver: ``netperf_image_overrides`` (override it to pin images) →
``netperf_docker`` (session: the runtime, stale cleanup, signal handlers) → topology
fixtures (module scope, parametrizable with ``indirect=True``) and the per-test
``netperf_topology`` factory for your own topologies.

The terminal summary gets one line with each topology's startup time and, when the
session removed leftovers of crashed sessions, one line saying what it removed. Under
pytest-xdist each worker sends both to the controller (``config.workeroutput``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from docker import errors as docker_errors

from pytest_netperf import defaults
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import ImageMissingError, RuntimeUnavailable
from pytest_netperf.images.resolve import NodeImageMissingError, resolve_image
from pytest_netperf.plugin.base_fixtures import BaseRevision
from pytest_netperf.plugin.session import maybe_session_of
from pytest_netperf.revision import BaseCheckout, changed_files
from pytest_netperf.revision.diff import UNCHANGED
from pytest_netperf.runtime.cleanup import clean_session, remove_stale
from pytest_netperf.runtime.cpu_priority import CpuPriority, PriorityUnavailable, raise_priority, remove_stale_groups
from pytest_netperf.runtime.docker import DockerRuntime
from pytest_netperf.runtime.host_ports import free_host_ports
from pytest_netperf.runtime.l4_paths import L4Paths, core_pair
from pytest_netperf.runtime.l4_paths import l4_paths as l4_paths_over
from pytest_netperf.runtime.resources import containers_split
from pytest_netperf.runtime.running import RunningTopology, TopologyStartError
from pytest_netperf.topology import builders
from pytest_netperf.topology.model import Topology
from pytest_netperf.topology.render.files import config_source

STARTUP_TIMES = pytest.StashKey[dict[str, float]]()
#: One line per crashed session whose leftovers this run removed.
LEFTOVERS_REMOVED = pytest.StashKey[list[str]]()
#: Key of this module's data in an xdist worker's ``workeroutput``.
WORKEROUTPUT_KEY = "netperf_docker"
_HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@pytest.fixture(scope="session")
def netperf_image_overrides(pytestconfig: pytest.Config) -> Mapping[str, str]:
    """Role -> image to force: ``--netperf-image ROLE=IMAGE`` / the ``netperf_images`` ini key
    (beyond NETPERF_IMAGE_<ROLE>). Override this fixture to pin images in code."""
    session = maybe_session_of(pytestconfig)
    return dict(session.images) if session is not None else {}


@pytest.fixture(scope="session")
def netperf_docker(
    request: pytest.FixtureRequest, netperf_image_overrides: Mapping[str, str]
) -> Iterator[DockerRuntime]:
    """The session's DockerRuntime. Skips (with the reason) when Docker or the echo image is absent.

    Removes leftovers of crashed sessions first; on SIGTERM/SIGINT and at exit it removes
    this session's containers and networks before the signal takes its usual course.
    """
    try:
        client = docker_client()
        echo_image = resolve_image("echo", netperf_image_overrides, client)
    except (RuntimeUnavailable, ImageMissingError) as exc:
        pytest.skip(str(exc))
    session_id = uuid.uuid4().hex[:8]
    stale = remove_stale(client)
    if stale.removed:
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        where = f" [{worker}]" if worker else ""
        _record(request.config, leftovers=[f"{stale.summary()} (their processes were gone){where}"])
    session = maybe_session_of(request.config)
    priority = _weighted_cgroup(request.config, client, session_id, session.settings.cpu_weight if session else None)
    runtime = DockerRuntime(
        session_id,
        {"echo": echo_image},
        client,
        overrides=netperf_image_overrides,
        base_dir=request.config.rootpath,  # relative config= paths of file-backed nodes
        # the nodes (and Compose services: netperf_compose) keep off a pinned driver's cores, on any machine
        core_split=containers_split(session.driver_cpus if session is not None else "auto"),
        priority=priority,
    )

    def release() -> None:
        """What a killed session must not leave behind beyond its containers and networks: the
        test CA's key files in the temporary folder and the weighted cgroup's folders."""
        runtime.close_test_ca()
        if priority is not None:
            priority.close(attempts=5)

    restore_signals = _install_signal_cleanup(session_id, release)
    last_resort = _register_atexit(session_id, release)
    try:
        yield runtime
    finally:
        runtime.down_all()
        clean_session(session_id, client)
        if priority is not None:
            _record(request.config, leftovers=priority.close())
        restore_signals()
        atexit.unregister(last_resort)
        _record(request.config, startup=runtime.startup_times)


def _weighted_cgroup(config: pytest.Config, client: Any, session_id: str, factor: float | None) -> CpuPriority | None:
    """This session's weighted cgroup (:mod:`~pytest_netperf.runtime.cpu_priority`), or None
    with a note saying why the stack runs at the default weight; stale groups removed first."""
    remove_stale_groups()
    factor = defaults.CPU_WEIGHT if factor is None else factor
    if factor <= 1:
        return None
    try:
        priority = raise_priority(session_id, client.info(), factor)
    except PriorityUnavailable as exc:
        _record(config, leftovers=[str(exc)])
        return None
    except docker_errors.DockerException as exc:
        _record(config, leftovers=[f"cannot read the Docker daemon's cgroup driver ({exc}): the default CPU weight"])
        return None
    _record(config, leftovers=[priority.describe()])
    return priority


@pytest.fixture(scope="module")
def echo_topology(request: pytest.FixtureRequest, netperf_docker: DockerRuntime) -> Iterator[RunningTopology]:
    """Echo servers; param: replicas (int, default 1) or a dict of ``builders.echo_topology`` args."""
    yield from _bring_up(netperf_docker, builders.echo_topology(**_params(request, "replicas", 1)), request)


@pytest.fixture(scope="module")
def gateway_topology(request: pytest.FixtureRequest, netperf_docker: DockerRuntime) -> Iterator[RunningTopology]:
    """Echo behind a gateway; param: kind ("nginx" default | "kong" | "haproxy") or a dict (kind,
    workers, upstream_keepalive, tls: e.g. ``{"kind": "nginx", "tls": {"key_type": "rsa-2048"}}``
    adds the ``gateway-tls`` target, whose certificate's CA the gate trusts; see docs/tls.md)."""
    yield from _bring_up(netperf_docker, builders.gateway_topology(**_params(request, "kind", "nginx")), request)


@pytest.fixture(scope="module")
def sidecar_chain(request: pytest.FixtureRequest, netperf_docker: DockerRuntime) -> Iterator[RunningTopology]:
    """svc-a <-> svc-b call chain; param: sidecars (bool, default True: Envoy pods)."""
    topology = builders.sidecar_chain_topology(**_params(request, "sidecars", True))
    yield from _bring_up(netperf_docker, topology, request)


@pytest.fixture(scope="module")
def access_modes(request: pytest.FixtureRequest, netperf_docker: DockerRuntime) -> Iterator[RunningTopology]:
    """Echo replicas reached by link, DNS, discovery proxy, L7 and L4; param: replicas (default 3)."""
    topology = builders.access_modes_topology(**_params(request, "replicas", 3))
    yield from _bring_up(netperf_docker, topology, request)


@pytest.fixture(scope="module")
def l4_paths(netperf_docker: DockerRuntime) -> Iterator[L4Paths]:
    """One L4 server (raw TCP echo and iperf3) on a bridge network and one on the host
    network, as three paths: ``container``, ``host_to_container`` and ``host``; each has
    ``.rr`` (``tcp://``) and ``.iperf3`` (``iperf3://``) endpoints. With two cores or more
    the drivers run on the first and the servers on the last."""
    client_cpus, server_cpus = core_pair()
    bridge = _up_or_skip(netperf_docker, builders.l4_topology(server_cpus=server_cpus), None)
    try:
        http_port, echo_port, iperf3_port = free_host_ports(3)
        topology = builders.l4_topology(
            host_network=True, ports=(http_port, echo_port, iperf3_port), server_cpus=server_cpus
        )
        host = _up_or_skip(netperf_docker, topology, None)
    except BaseException:
        _take_down(netperf_docker, bridge)
        raise
    try:
        yield l4_paths_over(bridge, host, client_cpus, server_cpus)
    finally:
        _take_down(netperf_docker, host)
        _take_down(netperf_docker, bridge)


@pytest.fixture
def netperf_topology(
    request: pytest.FixtureRequest, netperf_docker: DockerRuntime
) -> Iterator[Callable[..., RunningTopology]]:
    """A factory ``up(topology, base_dir=None) -> RunningTopology``; whatever it started is
    removed after the test.

    Relative ``config=`` paths of file-backed nodes resolve against ``base_dir``, by default
    the rootdir. A missing role image (no local build) skips the test; a missing ``image=``
    of a node is the test's own input and fails it with the fixes. Under ``--netperf-base``
    a topology with file-backed nodes also comes up from the base revision's files, and its
    endpoints carry that twin.
    """
    started: list[RunningTopology] = []
    netperf_base = _base_revision(request)

    def up(topology: Topology, base_dir: str | os.PathLike[str] | None = None) -> RunningTopology:
        folder = Path(base_dir) if base_dir is not None else _rootdir(request)
        running = _up_or_skip(netperf_docker, topology, folder)
        started.append(running)
        if netperf_base is not None and any(node.config is not None for node in topology.nodes):
            _pair_with_base(running, folder, netperf_base(), lambda at: twin_at(topology, at))
        return running

    def twin_at(topology: Topology, folder: Path) -> RunningTopology:
        twin = _up_or_skip(netperf_docker, replace(topology, name=f"{topology.name}-base"), folder)
        started.append(twin)
        return twin

    try:
        yield up
    finally:
        for running in reversed(started):
            running.down()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The startup time of each topology brought up in this session; leftovers removed."""
    for line in config.stash.get(LEFTOVERS_REMOVED, []):
        terminalreporter.write_line(f"netperf docker: {line}")
    times = config.stash.get(STARTUP_TIMES, {})
    if times:
        text = ", ".join(f"{name} {seconds:.2f}s" for name, seconds in sorted(times.items()))
        terminalreporter.write_line(f"netperf docker topology startup: {text}")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist controller: take over what a finished worker recorded."""
    data = (getattr(node, "workeroutput", None) or {}).get(WORKEROUTPUT_KEY)
    if data:
        _merge(node.config, data.get("startup") or {}, data.get("leftovers") or [])


def _record(
    config: pytest.Config, startup: Mapping[str, float] | None = None, leftovers: list[str] | None = None
) -> None:
    """Keep startup times and leftover notes for the summary; an xdist worker also sends them.

    A worker's ``workeroutput`` holds everything recorded so far (the controller reads it
    once, when the worker finishes), so a later call only adds to the earlier ones.
    """
    _merge(config, startup or {}, leftovers or [])
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # plain types only: execnet serializes them
        times: dict[str, float] = config.stash.get(STARTUP_TIMES, {})
        notes: list[str] = config.stash.get(LEFTOVERS_REMOVED, [])
        workeroutput[WORKEROUTPUT_KEY] = {"startup": dict(times), "leftovers": list(notes)}


def _merge(config: pytest.Config, startup: Mapping[str, float], leftovers: list[str]) -> None:
    times = config.stash.setdefault(STARTUP_TIMES, {})
    for name, seconds in startup.items():  # several workers may start the same topology: the slowest
        times[name] = max(float(seconds), times.get(name, 0.0))
    config.stash.setdefault(LEFTOVERS_REMOVED, []).extend(leftovers)  # each worker's lines arrive once


def _params(request: pytest.FixtureRequest, key: str, default: Any) -> dict[str, Any]:
    value = getattr(request, "param", default)
    return dict(value) if isinstance(value, Mapping) else {key: value}


def _base_revision(request: pytest.FixtureRequest) -> BaseRevision | None:
    """The session's ``--netperf-base`` revision; None without it, or when these fixtures are
    used without the netperf plugin (``-p pytest_netperf.plugin.docker_fixtures`` alone)."""
    try:
        base = request.getfixturevalue("netperf_base")
    except pytest.FixtureLookupError:
        return None
    return base if isinstance(base, BaseRevision) else None


def _pair_with_base(
    running: RunningTopology, folder: Path, checkout: BaseCheckout, twin_at: Callable[[Path], RunningTopology]
) -> None:
    """Stand the topology up again from the base revision's copy of ``folder`` and attach it
    to ``running``; a config file or folder that is not at the base revision leaves a note."""
    sources = [config_source(node, folder) for node in running.topology.nodes if node.config is not None]
    missing = [path for path in sources if not checkout.exists(path)]
    if missing or not folder.is_relative_to(checkout.root):
        shown = ", ".join(str(path.relative_to(checkout.root)) for path in missing) or str(folder)
        where = f"the base revision {checkout.ref} ({checkout.short})"
        running.attach_base(None, note=f"{shown} not at {where}: nothing to compare, recorded as NEW")
        return
    try:
        twin = twin_at(checkout.map_path(folder))
    except (TopologyStartError, docker_errors.DockerException) as exc:
        # the head is still measured; its budgets against the base are INVALID with this reason
        at = f"{checkout.ref} ({checkout.short})"
        running.attach_base(None, error=f"the base revision's topology ({at}) did not come up: {exc}")
        return
    described = "; ".join(change.describe() for change in changed_files(checkout.root, checkout.commit, sources))
    running.attach_base(twin, f"{checkout.ref} ({checkout.short}): {described or UNCHANGED}")


def _rootdir(request: pytest.FixtureRequest) -> Path:
    return Path(request.config.rootpath)


def _up_or_skip(runtime: DockerRuntime, topology: Topology, base_dir: str | os.PathLike[str] | None) -> RunningTopology:
    """``runtime.up``; a missing role image skips, a missing node ``image=`` propagates."""
    try:
        return runtime.up(topology, base_dir=base_dir)
    except NodeImageMissingError:
        raise
    except ImageMissingError as exc:
        pytest.skip(str(exc))


def _bring_up(runtime: DockerRuntime, topology: Topology, request: pytest.FixtureRequest) -> Iterator[RunningTopology]:
    running = _up_or_skip(runtime, topology, _rootdir(request))
    try:
        yield running
    finally:
        _take_down(runtime, running)


def _take_down(runtime: DockerRuntime, running: RunningTopology) -> None:
    running.down()
    if running in runtime.running:
        runtime.running.remove(running)


def _install_signal_cleanup(session_id: str, also: Callable[[], None] = lambda: None) -> Callable[[], None]:
    """Handlers that remove this session's resources (and call ``also``), then let the signal act
    as before."""
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        _quiet_clean(session_id, also)
        before = previous.get(signum, signal.SIG_DFL)
        signal.signal(signum, before)
        if callable(before):
            before(signum, frame)
        else:
            os.kill(os.getpid(), signum)

    for signum in _HANDLED_SIGNALS:
        if signal.getsignal(signum) == signal.SIG_IGN:
            continue  # started with it ignored (a background job of a script): it stops nothing
        with contextlib.suppress(ValueError):  # not the main thread: atexit still cleans
            previous[signum] = signal.signal(signum, handler)

    def restore() -> None:
        for signum, before in previous.items():
            if signal.getsignal(signum) is handler:
                signal.signal(signum, before)

    return restore


def _register_atexit(session_id: str, also: Callable[[], None] = lambda: None) -> Callable[[], None]:
    def last_resort() -> None:
        _quiet_clean(session_id, also)

    atexit.register(last_resort)
    return last_resort


def _quiet_clean(session_id: str, also: Callable[[], None] = lambda: None) -> None:
    with contextlib.suppress(Exception):  # Docker gone: nothing more we can do while exiting
        clean_session(session_id)
    with contextlib.suppress(Exception):
        also()
