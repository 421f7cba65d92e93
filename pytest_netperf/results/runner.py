"""The runner's state during one round: how busy the machine was, and with what.

Read around every timed round (``measure/runner_watch.py``) from the machine's own counters
(``runtime/machine_load.py``): CPU time in cores (CPU seconds per second of the round) of
the whole machine, of the load driver and of the stack under test, the hypervisor's steal
and the load average. What is left of the machine's process time when the driver and the
stack are taken out is :attr:`RunnerState.outside_cores`: neighbours, Docker's daemon, the
gate itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

#: What the note of a round measured again (its driver fell behind on a busy runner) says
#: between where and why (``candidate round 3 measured again: …``); reports leave these notes
#: off the budgets no round judges (counted costs).
MEASURED_AGAIN = " measured again: "


@dataclass
class RunnerState:
    """The machine around one round; CPU figures in cores averaged over :attr:`span_s`."""

    #: CPUs the machine has (the kernel's ``cpuN`` lines).
    cores: int
    #: Wall seconds between the readings before and after the round.
    span_s: float
    #: Processes and kernel threads of the whole machine (user, nice and system time).
    process_cores: float
    #: Hard and soft interrupts (most of the kernel's packet work where it is accounted apart).
    interrupt_cores: float
    #: Share of the machine's CPU time the hypervisor gave to other guests (0.0 without steal).
    steal_share: float
    #: The one-minute load average at the end of the round (None where it cannot be read).
    load_avg_1m: Optional[float]
    #: The load driver's own CPU (its reported user plus system time).
    driver_cores: float
    #: The stack under test's CPU (its nodes' cgroups); None for a plain URL or unread costs.
    stack_cores: Optional[float] = None
    #: Unix seconds of the reading before the round (rounds loaded together overlap).
    started_at: float = 0.0
    #: All tasks' CPU as the cgroups account it (the root cgroup's usage: soft interrupts run
    #: in a task's context included, as in the stack's cgroups and the driver's rusage); None
    #: where it could not be read, and in results written before it was recorded.
    task_cores: Optional[float] = None
    #: The kernel's threads (packet work moved to ``ksoftirqd``, ``kworker``) and the container
    #: runtime's processes (``dockerd`` writing the stack's logs, answering the plugin's
    #: calls): work for the test that no cgroup of its stack holds, so not other processes;
    #: None where they could not be read.
    system_cores: Optional[float] = None

    @property
    def busy_cores(self) -> float:
        """Everything the machine's CPUs did: processes, interrupts and steal."""
        return self.process_cores + self.interrupt_cores + self.steal_share * self.cores

    @property
    def own_cores(self) -> float:
        """What this round's load driver and stack under test used."""
        return self.driver_cores + (self.stack_cores or 0.0)

    @property
    def outside_cores(self) -> float:
        """CPU of everything but this round's driver and stack (never below 0; a round loaded
        together with others counts their driver and stack here as well). Taken from
        :attr:`task_cores` where recorded: the driver's and stack's own figures include the
        soft interrupts of their packets, which ``/proc/stat`` counts apart from process time
        (on a closed-loop HTTP round, 0.9 of 2 cores: other processes' CPU vanished under it).
        The kernel's threads and the container runtime (:attr:`system_cores`) are not other processes."""
        machine = self.task_cores if self.task_cores is not None else self.process_cores
        return max(0.0, machine - self.own_cores - (self.system_cores or 0.0))


def overlapping_own_cores(state: RunnerState, others: Sequence[RunnerState]) -> float:
    """What the drivers and stacks of ``others`` (rounds of the same test, e.g. the other side
    of a simultaneous round) used within ``state``'s span, in cores of that span: each one's
    own use in proportion to the time it overlapped. 0.0 without a start time or span."""
    if not state.started_at or state.span_s <= 0:
        return 0.0
    end = state.started_at + state.span_s
    seconds = 0.0
    for other in others:
        if other is state or not other.started_at:
            continue
        overlap = min(end, other.started_at + other.span_s) - max(state.started_at, other.started_at)
        if overlap > 0:
            seconds += other.own_cores * overlap
    return seconds / state.span_s


def outside_cores_beside(state: RunnerState, others: Sequence[RunnerState]) -> float:
    """:attr:`RunnerState.outside_cores` of ``state`` without what the test's rounds that
    overlapped it used (never below 0)."""
    return max(0.0, state.outside_cores - overlapping_own_cores(state, others))
