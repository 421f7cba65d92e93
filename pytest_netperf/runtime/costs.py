"""What the system under test spends in a round: CPU time, memory and packets per node.

A :class:`SystemProbe` knows the containers of one running topology or Compose stack by
node (service) name. The gate calls :meth:`SystemProbe.begin` just before the driver starts
and :meth:`RoundProbe.end` just after it ends; in between a thread samples the working set
every :data:`MEMORY_POLL_S` seconds for the round's peak. The load driver's own CPU is not
here: it runs outside these containers and reports its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker.errors import APIError, NotFound

from pytest_netperf.errors import ServiceRestarted
from pytest_netperf.results.model import NodeCosts, SystemCosts
from pytest_netperf.runtime.cgroups import (
    CgroupError,
    CgroupFiles,
    Counters,
    counters_from_docker_stats,
    locate,
    read_counters,
    read_memory,
)

#: How often the working set is sampled during a round for its peak.
MEMORY_POLL_S = 0.1


@dataclass(frozen=True)
class Member:
    """One container of the system under test."""

    node: str
    container_id: str
    name: str


class _Reader:
    """Reads one container's counters from its cgroup files, or from Docker stats where this
    process cannot see the container's processes."""

    def __init__(self, client: Any, member: Member, proc: Path) -> None:
        self.member = member
        self._client = client
        self._proc = proc
        self._files: CgroupFiles | None = None
        self.source = ""
        #: (RestartCount, StartedAt) when last looked at (None before the first look).
        self._seen: tuple[int, str] | None = None

    def _what(self) -> str:
        return f"container {self.member.name} of node {self.member.node!r}"

    def _inspect(self) -> dict[str, Any]:
        try:
            return dict(self._client.api.inspect_container(self.member.container_id))
        except NotFound:
            raise CgroupError(f"{self._what()} no longer exists") from None
        except APIError as exc:
            raise CgroupError(f"cannot inspect {self._what()}: {exc}") from None

    def restarted(self, when: str = "during the run") -> str | None:
        """``container ... of node 'app' restarted during the run (restart count 0 -> 1, exit
        code 139)`` when Docker says it restarted since the last look (its restart count or
        start time changed), else None; the first look only remembers."""
        try:
            doc = self._inspect()
        except CgroupError:
            return None
        state = doc.get("State") or {}
        now = (int(doc.get("RestartCount") or 0), str(state.get("StartedAt") or ""))
        before, self._seen = self._seen, now
        if before is None or now == before:
            return None
        facts = [f"restart count {before[0]} -> {now[0]}"]
        if state.get("ExitCode"):
            facts.append(f"exit code {state['ExitCode']}")
        if state.get("OOMKilled"):
            facts.append("killed for lack of memory (OOMKilled)")
        return f"{self._what()} restarted {when} ({', '.join(facts)})"

    def _resolve(self) -> None:
        state = self._inspect().get("State") or {}
        pid = int(state.get("Pid") or 0)
        if not state.get("Running") or pid <= 0:
            raise CgroupError(f"{self._what()} is not running (status {state.get('Status', '?')})")
        if (self._proc / str(pid)).exists():
            self._files = locate(pid, self._proc)
            self.source = self._files.source
        else:  # another PID namespace: ask the Docker daemon
            self._files = None
            self.source = "docker stats"

    def read(self) -> Counters:
        """The counters now (re-finding the files once if the process was replaced)."""
        if not self.source:
            self._resolve()
        try:
            return self._read_once()
        except CgroupError:
            self._resolve()  # restarted since the last round: a new process, new files
            return self._read_once()

    def _read_once(self) -> Counters:
        if self._files is not None:
            return read_counters(self._files)
        try:
            stats = self._client.api.stats(self.member.container_id, stream=False, one_shot=True)
        except (NotFound, APIError) as exc:
            raise CgroupError(f"cannot read Docker stats of {self._what()}: {exc}") from None
        started = str((self._inspect().get("State") or {}).get("StartedAt", ""))
        return counters_from_docker_stats(stats, started, self._what())

    def memory(self) -> int | None:
        """The working set now, where it is cheap to read (cgroup files); None otherwise."""
        if self._files is None:
            return None
        try:
            return read_memory(self._files)
        except CgroupError:
            return None


class RoundProbe:
    """The counters of one round: sampled at :meth:`SystemProbe.begin`, closed by :meth:`end`."""

    def __init__(self, readers: Sequence[_Reader], poll_s: float = MEMORY_POLL_S) -> None:
        self._readers = list(readers)
        self._started = time.monotonic()
        #: What restarted since the previous round (the counters of this one are whole).
        self.restarts = [text for text in (reader.restarted() for reader in self._readers) if text]
        self._first = [reader.read() for reader in self._readers]
        self._peaks = [c.mem_bytes for c in self._first]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if poll_s > 0 and any(r.source.startswith("cgroup") for r in self._readers):
            self._thread = threading.Thread(target=self._poll, args=(poll_s,), name="netperf-memory", daemon=True)
            self._thread.start()

    def _poll(self, poll_s: float) -> None:
        while not self._stop.wait(poll_s):
            for index, reader in enumerate(self._readers):
                value = reader.memory()
                if value is not None and value > self._peaks[index]:
                    self._peaks[index] = value

    def cancel(self) -> None:
        """Stop sampling without a result (the round failed)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def end(self, served: int) -> SystemCosts:
        """The round's costs per node; CgroupError when a container restarted (its counters
        were reset) or a counter went backwards."""
        self.cancel()
        span_s = time.monotonic() - self._started
        nodes: dict[str, NodeCosts] = {}
        sources = set()
        for reader, first, peak in zip(self._readers, self._first, self._peaks, strict=True):
            last = reader.read()
            what = f"container {reader.member.name} of node {reader.member.node!r}"
            if last.identity != first.identity or last.cpu_ns < first.cpu_ns:
                said = reader.restarted("during the round") or f"{what} restarted during the round"
                raise ServiceRestarted(f"{said}: the service restarted during the run, its counters were reset")
            sources.add(reader.source)
            node = nodes.get(reader.member.node)
            spent = NodeCosts(
                cpu_ns=last.cpu_ns - first.cpu_ns,
                mem_bytes=last.mem_bytes,
                mem_peak_bytes=max(peak, last.mem_bytes),
                rx_packets=last.rx_packets - first.rx_packets,
                tx_packets=last.tx_packets - first.tx_packets,
                rx_bytes=last.rx_bytes - first.rx_bytes,
                tx_bytes=last.tx_bytes - first.tx_bytes,
            )
            nodes[reader.member.node] = spent if node is None else _sum(node, spent)
        return SystemCosts(nodes=nodes, served=served, span_s=span_s, source=", ".join(sorted(sources)))


def _sum(a: NodeCosts, b: NodeCosts) -> NodeCosts:
    """Two containers (replicas) of one node as one."""
    return NodeCosts(
        cpu_ns=a.cpu_ns + b.cpu_ns,
        mem_bytes=a.mem_bytes + b.mem_bytes,
        mem_peak_bytes=a.mem_peak_bytes + b.mem_peak_bytes,
        rx_packets=a.rx_packets + b.rx_packets,
        tx_packets=a.tx_packets + b.tx_packets,
        rx_bytes=a.rx_bytes + b.rx_bytes,
        tx_bytes=a.tx_bytes + b.tx_bytes,
        containers=a.containers + b.containers,
    )


class SystemProbe:
    """The containers of a system under test by node name; reads what they spend per round."""

    def __init__(self, client: Any, members: Sequence[Member], proc: Path = Path("/proc")) -> None:
        if not members:
            raise ValueError("a system probe needs at least one container")
        self._readers = [_Reader(client, member, proc) for member in members]

    @property
    def nodes(self) -> tuple[str, ...]:
        """The node (service) names, in order, each once."""
        return tuple(dict.fromkeys(r.member.node for r in self._readers))

    def begin(self, poll_s: float = MEMORY_POLL_S) -> RoundProbe:
        """Sample every container now; CgroupError naming the container or path that cannot be read."""
        return RoundProbe(self._readers, poll_s)
