"""Clones of a running node with its process under valgrind or strace (the counting pass's runs).

A clone runs the node's own image (its counting variant, see images/counting_image.py), command,
environment, user, mounts (bind mounts, named volumes, tmpfs: a TLS proxy's certificates come
with them) and config files on the node's network, without the node's
aliases, so upstream names resolve to the real upstreams and nothing routes to the clone
but the counting pass's own requests. A clone runs on one core (:func:`counting_core`): a server
that sizes its threads by the cores it may use starts one, whose count does not depend on how
another thread was scheduled. Each counted run starts a fresh clone, waits until its
port accepts a connection and its processes are idle (start-up finished), and is held as a
context manager (``with counter.clone(tool, limit) as clone:``) while the caller sends an
exact number of requests to ``clone.address``. ``clone.counts(requests)`` then stops every
server process with TERM (a fast shutdown; what it costs cancels between the two counts, and
a graceful stop such as HAProxy's SIGUSR1 can wait on idle connections) and reads the tool's
counts; the clone is removed when the block ends, whatever happened in it.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import tarfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from docker import DockerClient
from docker.errors import APIError, NotFound
from docker.models.containers import Container

from pytest_netperf.cpusets import parse_cpuset
from pytest_netperf.engine import labels as L
from pytest_netperf.errors import NetperfError
from pytest_netperf.images.counting_image import TRACE_WRAPPER, counting_image
from pytest_netperf.results.counted import INSTRUCTIONS, PROFILE_TOOLS, STACKS, CountedRun
from pytest_netperf.runtime.callgrind_output import by_leaf, merge_callgrind
from pytest_netperf.runtime.cgroups import CgroupError, counters_from_docker_stats, locate, read_counters
from pytest_netperf.runtime.readiness import HttpReadiness, NodeNotReady
from pytest_netperf.runtime.resources import usable_cores
from pytest_netperf.runtime.trace_output import (
    TraceOutputError,
    merge_cachegrind,
    strace_counts,
    valgrind_problems,
)

#: Where a clone's tool writes its counts.
OUTPUT_DIR = "/tmp/netperf-cost"
#: Seconds a counted server may take to exit after TERM (valgrind writes its counts on exit).
STOP_TIMEOUT_S = 60.0
#: The server is idle once its CPU use stays below this share of a core for IDLE_SAMPLES
#: intervals in a row.
IDLE_CPU_SHARE = 0.02
IDLE_INTERVAL_S = 0.25
IDLE_SAMPLES = 2
#: Label marking a clone (its value: the tool).
COUNTING_LABEL = f"{L.PREFIX}.counting"
LOG_TAIL_CHARS = 3000
_serial = itertools.count(1)


def counting_core(node_cpuset: str, cores: Sequence[int], serial: int) -> str:
    """The one core (a cpuset) the ``serial``-th clone runs on: of the node's own cpuset when it
    has one, else of ``cores``, in turn, so clones counting side by side take different cores.

    A server that sizes its threads by the cores it may use (HAProxy's ``nbthread``) starts one
    thread on one core. Under valgrind, which runs one thread at a time, a second one made the
    count follow the scheduling: beside ``busy-neighbor --level heavy`` an unchanged HAProxy with
    DNS discovery moved 1.6-59.8% between repetitions with two threads, 0.03-0.29% with one."""
    try:
        choices = parse_cpuset(node_cpuset) if node_cpuset.strip() else list(cores)
    except ValueError:
        choices = list(cores)
    choices = choices or [0]
    return str(choices[serial % len(choices)])


class CountingError(NetperfError):
    """A counted run could not count: the clone did not start, crashed, ran out of time, or its
    counts are missing or cover fewer processes or requests than they must."""


class NodeCounter:
    """Counted runs of one running node (``node``) that serves on ``port``."""

    def __init__(
        self,
        client: DockerClient,
        source: Container,
        node: str,
        network: str,
        port: int,
        copy_paths: Sequence[str] = (),
        ready_timeout_s: float = 120.0,
        companion: Container | None = None,
        companion_files: Sequence[str] = (),
    ) -> None:
        self.client = client
        self.source = source
        self.node = node
        self.network = network
        self.port = port
        self.copy_paths = tuple(copy_paths)
        self.ready_timeout_s = ready_timeout_s
        #: the pod root whose network namespace the counted node shares (a sidecar's app): it
        #: runs as a plain clone, and the counted clone joins its namespace
        self.companion = companion
        self.companion_files = tuple(companion_files)
        self._cores: list[int] | None = None

    def prepare(self) -> None:
        """Build the node's counting image now (before any load): ImageBuildError naming the node,
        the image and the ways out when valgrind and strace cannot be added."""
        self._image()

    def _image(self) -> str:
        attrs = self.source.attrs
        image = str(attrs.get("Image") or (attrs.get("Config") or {}).get("Image"))
        return counting_image(
            self.client, image, f"node {self.node!r} (image {(attrs.get('Config') or {}).get('Image')})"
        )

    @contextlib.contextmanager
    def clone(self, tool: str, time_limit_s: float) -> Iterator[CountingClone]:
        """A fresh clone of the node under ``tool``, started, listening and idle; removed on exit.

        Send the requests to its ``address``, then call :meth:`CountingClone.counts` for what
        the tool counted. Raises CountingError when it does not start, listen or settle within
        ``time_limit_s`` (the whole counted run's bound) or the readiness timeout."""
        if tool not in PROFILE_TOOLS:
            raise CountingError(
                f"{self.node}: unknown counting tool {tool!r}; expected one of {', '.join(PROFILE_TOOLS)}"
            )
        started = time.monotonic()
        deadline = started + time_limit_s
        pod = self._start_companion() if self.companion is not None else None
        clone: Container | None = None
        try:
            clone = self._create(tool, pod)
            clone.start()
            address = self._wait_ready(clone, deadline, pod)
            ready_at = time.monotonic()
            self._wait_idle(clone, deadline)
            yield CountingClone(self.node, clone, tool, f"{address}:{self.port}", started, deadline, ready_at)
        finally:
            for container in (clone, pod):
                if container is not None:
                    _remove(container)

    # ----- one clone ----------------------------------------------------------------
    def _start_companion(self) -> Container:
        """A plain clone of the pod root, on the node's network, started."""
        assert self.companion is not None
        attrs = self.companion.attrs
        config = attrs.get("Config") or {}
        options = _clone_options(self.companion, f"{self.companion.name}-pod-{next(_serial)}")
        options.update(network=self.network, command=config.get("Cmd"), entrypoint=config.get("Entrypoint"))
        image = str(attrs.get("Image") or config.get("Image"))
        pod = self.client.containers.create(image, **{k: v for k, v in options.items() if v is not None})
        try:
            _copy_files(self.companion, pod, self.companion_files)
            pod.start()
        except (APIError, NotFound):
            _remove(pod)
            raise
        return pod

    def _create(self, tool: str, pod: Container | None = None) -> Container:
        config = self.source.attrs.get("Config") or {}
        image = self._image()
        entrypoint = list(config.get("Entrypoint") or [])
        command = list(config.get("Cmd") or [])
        serial = next(_serial)
        options = _clone_options(self.source, f"{self.source.name}-counted-{serial}")
        options["labels"][COUNTING_LABEL] = tool
        node_cpuset = str((self.source.attrs.get("HostConfig") or {}).get("CpusetCpus") or "")
        options.update(
            entrypoint=[TRACE_WRAPPER],
            command=[tool, OUTPUT_DIR, "--", *entrypoint, *command],
            stop_signal="SIGTERM",
            cpuset_cpus=counting_core(node_cpuset, self._daemon_cores(), serial),
        )
        if pod is not None:  # a sidecar: in its pod root's network namespace
            options["network_mode"] = f"container:{pod.id}"
        else:
            options["network"] = self.network
        clone = self.client.containers.create(image, **{k: v for k, v in options.items() if v is not None})
        try:
            _copy_files(self.source, clone, self.copy_paths)
        except (APIError, NotFound):
            _remove(clone)
            raise
        return clone

    def _daemon_cores(self) -> list[int]:
        """The cores of the machine Docker runs containers on (its ``NCPU``; this process's own
        cores when the daemon does not say): a remote daemon's may differ from ours."""
        if self._cores is None:
            try:
                count = int(self.client.info().get("NCPU") or 0)
            except (APIError, ValueError, TypeError):
                count = 0
            self._cores = list(range(count)) or usable_cores()
        return self._cores

    def _wait_ready(self, clone: Container, deadline: float, pod: Container | None = None) -> str:
        """The clone's address (its pod root clone's for a sidecar) once its port accepts a connection."""
        holder = clone if pod is None else pod
        holder.reload()
        networks = (holder.attrs.get("NetworkSettings") or {}).get("Networks") or {}
        address = str((networks.get(self.network) or {}).get("IPAddress") or "")
        if not address:
            raise CountingError(f"{self.node}: the clone has no address on network {self.network}\n{_logs(clone)}")
        timeout = max(0.0, min(deadline - time.monotonic(), self.ready_timeout_s))
        readiness = HttpReadiness(address, self.port, None, timeout_s=timeout, poll_interval_s=0.1)
        try:
            readiness.wait_until_ready(clone)
        except NodeNotReady as exc:
            exited = clone.status in ("exited", "dead")
            what = (
                "the server exited under its counting tool before it listened"
                if exited
                else f"the server did not accept connections on port {self.port} under its counting tool "
                f"within {timeout:.0f}s"
            )
            raise CountingError(f"{self.node}: {what} ({exc})\n{_logs(clone)}") from exc
        return address

    def _wait_idle(self, clone: Container, deadline: float) -> None:
        """Until the clone's processes stop using CPU: a server can listen before it finished
        starting (HAProxy's master re-executes itself after forking its worker), and start-up
        only cancels between the two counts when both runs finished it before their load."""
        read = _cpu_reader(clone)
        last = read()
        quiet = 0
        while quiet < IDLE_SAMPLES:
            if time.monotonic() > deadline:
                raise CountingError(
                    f"{self.node}: the counted server kept using CPU until the time limit before any load"
                )
            time.sleep(IDLE_INTERVAL_S)
            now = read()
            quiet = quiet + 1 if now - last < IDLE_CPU_SHARE * IDLE_INTERVAL_S * 1e9 else 0
            last = now


class CountingClone:
    """A running clone under a counting tool (see :meth:`NodeCounter.clone`)."""

    def __init__(
        self,
        node: str,
        container: Container,
        tool: str,
        address: str,
        started: float,
        deadline: float,
        ready_at: float,
    ) -> None:
        self._node = node
        self._container = container
        self.tool = tool
        #: ``host:port`` to send the counted requests to.
        self.address = address
        #: When (monotonic) the server first accepted a connection: its timers run from here.
        self.ready_at = ready_at
        self._started = started
        self._deadline = deadline

    def counts(self, requests: int) -> CountedRun:
        """Stop the server (TERM) and read what the tool counted while it served ``requests`` requests."""
        timeout = min(STOP_TIMEOUT_S, max(5.0, self._deadline - time.monotonic()))
        self._stop(timeout)
        total, by_name, processes, stacks = self._parse(_read_dir(self._container, OUTPUT_DIR))
        seconds = time.monotonic() - self._started
        return CountedRun(self.tool, requests, total, by_name, seconds, processes, stacks)

    def _stop(self, timeout_s: float) -> None:
        self._container.stop(timeout=int(max(1.0, timeout_s)))
        self._container.reload()
        state = self._container.attrs.get("State") or {}
        if state.get("OOMKilled") or state.get("ExitCode") == 137:
            raise CountingError(
                f"{self._node}: the counted server did not exit within {timeout_s:.0f}s of its stop signal "
                f"(killed; its counts are lost)\n{_logs(self._container)}"
            )

    def _parse(self, files: Mapping[str, str]) -> tuple[float, dict[str, float], int, dict[str, float]]:
        """(total, by name, processes counted, folded stacks: only for ``stacks``) of the tool's files."""
        try:
            if self.tool in (INSTRUCTIONS, STACKS):
                return self._parse_valgrind(files)
            text = next((t for n, t in files.items() if n.endswith("strace.txt")), None)
            if text is None:
                raise CountingError(f"{self._node}: strace wrote no summary\n{_logs(self._container)}")
            total, by_call = strace_counts(text)
            return total, by_call, 1, {}
        except TraceOutputError as exc:
            raise CountingError(f"{self._node}: {exc}\n{_logs(self._container)}") from exc

    def _parse_valgrind(self, files: Mapping[str, str]) -> tuple[float, dict[str, float], int, dict[str, float]]:
        logs = {n: t for n, t in files.items() if n.endswith(".log")}
        problems = valgrind_problems(logs)
        if problems:
            raise CountingError(
                f"{self._node}: a process was not counted (its workers would be missing): " + "; ".join(problems[:3])
            )
        prefix = "/callgrind." if self.tool == STACKS else "/cachegrind."
        outputs = {n: t for n, t in files.items() if prefix in f"/{n}"}
        if not outputs:
            raise CountingError(f"{self._node}: valgrind wrote no counts\n{_logs(self._container)}")
        if self.tool == STACKS:
            total, stacks, processes = merge_callgrind(outputs)
            return total, by_leaf(stacks), processes, stacks
        total, by_name, processes = merge_cachegrind(outputs)
        return total, by_name, processes, {}


def _cpu_reader(container: Container) -> Callable[[], int]:
    """Reads the container's CPU time (ns): its cgroup, else Docker's stats where this process
    cannot see the container's processes."""
    container.reload()
    pid = int((container.attrs.get("State") or {}).get("Pid") or 0)
    try:
        files = locate(pid)
        read_counters(files)
        return lambda: read_counters(files).cpu_ns
    except CgroupError:
        identity = str(container.id)
        return lambda: counters_from_docker_stats(container.stats(stream=False), identity, container.name).cpu_ns


def _clone_options(source: Container, name: str) -> dict[str, Any]:
    """``containers.create`` options that run what ``source`` runs: environment, user, working
    folder, capabilities, mounts and our labels (not its names or network)."""
    attrs = source.attrs
    config = attrs.get("Config") or {}
    host = attrs.get("HostConfig") or {}
    options: dict[str, Any] = {
        "name": name,
        "labels": {k: v for k, v in (config.get("Labels") or {}).items() if k.startswith(L.PREFIX)},
        "environment": list(config.get("Env") or []),
        "init": True,
        "user": str(config.get("User") or ""),
        "working_dir": str(config.get("WorkingDir") or "") or None,
        "cap_add": host.get("CapAdd"),
        "cap_drop": host.get("CapDrop"),
        "security_opt": host.get("SecurityOpt"),
    }
    binds = host.get("Binds")
    if binds:
        options["volumes"] = list(binds)
    else:
        volumes = [_mount_spec(m) for m in attrs.get("Mounts") or []]
        if any(volumes):
            options["volumes"] = [v for v in volumes if v]
    if host.get("Tmpfs"):
        options["tmpfs"] = dict(host["Tmpfs"])
    return options


def _mount_spec(mount: Mapping[str, Any]) -> str:
    """``source:destination:mode`` of a bind mount or a named volume (a team's certificates or
    config may live in either: the clone must serve TLS as the service does), "" for others."""
    mode = "rw" if mount.get("RW", True) else "ro"
    if mount.get("Type") == "bind":
        return f"{mount['Source']}:{mount['Destination']}:{mode}"
    if mount.get("Type") == "volume" and mount.get("Name"):
        return f"{mount['Name']}:{mount['Destination']}:{mode}"
    return ""


def _copy_files(source: Container, target: Container, paths: Sequence[str]) -> None:
    """Copy ``paths`` (files or folders) from ``source`` into ``target`` before it starts,
    making their folders where ``target``'s image has none (a rendered TLS node's certificate
    folder is written into its container, not its image)."""
    for path in paths:
        bits, _ = source.get_archive(path)
        folder = path.rstrip("/").rsplit("/", 1)[0].strip("/")
        target.put_archive("/", under_folder(b"".join(bits), folder))


def under_folder(archive: bytes, folder: str) -> bytes:
    """``archive`` (a tar whose entries are relative to one folder, as ``get_archive`` gives
    them) with every entry, and every hard link's target, moved under ``folder`` (relative to
    the root; "" leaves it as it is): put at ``/`` it lands where it came from, its folders
    made as extracting it needs them."""
    if not folder:
        return archive
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(archive)) as found, tarfile.open(fileobj=out, mode="w") as moved:
        for member in found.getmembers():
            data = found.extractfile(member) if member.isfile() else None
            member.name = f"{folder}/{member.name}"
            if member.islnk():
                member.linkname = f"{folder}/{member.linkname}"
            moved.addfile(member, data)
    return out.getvalue()


def _read_dir(container: Container, path: str) -> dict[str, str]:
    """Text of every regular file under ``path`` in ``container`` (running or stopped)."""
    try:
        bits, _ = container.get_archive(path)
    except NotFound:
        return {}
    data = b"".join(bits)
    out: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for member in archive.getmembers():
            handle = archive.extractfile(member) if member.isfile() else None
            if handle is not None:
                out[member.name] = handle.read().decode(errors="replace")
    return out


def _logs(container: Container) -> str:
    try:
        text = container.logs().decode(errors="replace")
    except (APIError, NotFound):
        return "(no log)"
    extra = (
        "".join(text for name, text in _read_dir(container, OUTPUT_DIR).items() if name.endswith(".log"))
        if container.status != "running"
        else ""
    )
    tail = (text + extra)[-LOG_TAIL_CHARS:]
    return f"--- log tail of the counted server ---\n{tail}"


def _remove(container: Container) -> None:
    with contextlib.suppress(NotFound):
        container.remove(force=True)
