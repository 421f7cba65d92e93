"""The runner's state beside every verdict: how busy the machine was during a measurement's rounds.

One definition of the words and the keys: :class:`RunnerSummary` is the JSON object
(``rows[].runner`` and ``results.<test id>[].runner``) and :meth:`RunnerSummary.describe` the
note every report shows with each verdict, e.g. ``runner: 2 cores, steal 0.0%, load 3.1,
other processes 0.62 cores (max 1.10) during the rounds``.

"Other processes" is the machine's process time (user, nice and system) less what the test
itself used: every load driver and stack under test running at the time. Rounds loaded
together (a head and its base twin) overlap; each round's figure takes out the drivers and
stacks of the rounds that overlapped it, in proportion to the overlap. Interrupt time (most
of the kernel's packet work) and steal are not processes: they are counted apart. A plain
URL target has no costs to read: a server of it on this machine is among the other
processes, and the note says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Optional

from pytest_netperf.results.model import RoundResult
from pytest_netperf.results.runner import outside_cores_beside, overlapping_own_cores

if TYPE_CHECKING:
    from pytest_netperf.measure.model import Measurement

#: The note's label and the JSON key of the runner's state.
RUNNER_KEY = "runner"


@dataclass(frozen=True)
class RunnerSummary:
    """The machine over a measurement's rounds (every series); CPU in cores, means over rounds."""

    #: Rounds that recorded the runner's state.
    rounds: int
    #: CPUs the machine has.
    cores: int
    #: Share of the machine's CPU time stolen by the hypervisor.
    steal_share: float
    #: The one-minute load average at the end of a round (None where it could not be read).
    load_avg_1m: Optional[float]
    #: Processes outside the test: the mean and the largest round.
    other_cores: float
    other_cores_max: float
    #: The test's own load drivers and stacks under test.
    test_cores: float
    #: Hard and soft interrupts.
    interrupt_cores: float
    #: Everything the CPUs did: processes, interrupts and steal.
    busy_cores: float
    #: Rounds whose stack under test's CPU was read and taken out (a plain URL's is not).
    stack_rounds: int
    #: The kernel's threads and the container runtime's processes (packet work, the stack's
    #: logs), mean over the rounds that read them; counted as the test's, not as other processes.
    system_cores: float = 0.0

    def describe(self) -> str:
        """``runner: 2 cores, steal 0.0%, load 3.1, other processes 0.62 cores (max 1.10) during the rounds``,
        saying so when a plain URL's server (whose CPU is not read) may be among the other processes."""
        load = f", load {self.load_avg_1m:.1f}" if self.load_avg_1m is not None else ""
        text = (
            f"{RUNNER_KEY}: {self.cores} cores, steal {self.steal_share:.1%}{load}, other processes "
            f"{self.other_cores:.2f} cores (max {self.other_cores_max:.2f}) during the rounds"
        )
        if self.system_cores >= SYSTEM_NOTE_CORES:
            text += (
                f", besides {self.system_cores:.2f} of kernel threads and the container runtime "
                "(packet work, the stack's logs)"
            )
        if self.stack_rounds < self.rounds:
            unread = self.rounds - self.stack_rounds
            text += (
                f"; with a plain URL target ({unread} of {self.rounds} rounds) a server on this machine "
                "counts among them"
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (canonical units: shares, cores)."""
        return asdict(self)


#: The kernel threads' and container runtime's CPU is named in the note from this many cores on.
SYSTEM_NOTE_CORES = 0.05


def runner_summary(rounds: Sequence[RoundResult]) -> Optional[RunnerSummary]:
    """The runner over ``rounds`` (of every series of a measurement); None when none recorded it."""
    states = [r.runner for r in rounds if r.runner is not None]
    if not states:
        return None
    test = [state.own_cores + overlapping_own_cores(state, states) for state in states]
    other = [outside_cores_beside(state, states) for state in states]
    loads = [state.load_avg_1m for state in states if state.load_avg_1m is not None]
    systems = [state.system_cores for state in states if state.system_cores is not None]
    return RunnerSummary(
        rounds=len(states),
        cores=max(state.cores for state in states),
        steal_share=statistics.fmean(state.steal_share for state in states),
        load_avg_1m=statistics.fmean(loads) if loads else None,
        other_cores=statistics.fmean(other),
        other_cores_max=max(other),
        test_cores=statistics.fmean(test),
        interrupt_cores=statistics.fmean(state.interrupt_cores for state in states),
        busy_cores=statistics.fmean(state.busy_cores for state in states),
        stack_rounds=sum(state.stack_cores is not None for state in states),
        system_cores=statistics.fmean(systems) if systems else 0.0,
    )


def is_runner_note(note: str) -> bool:
    """Whether ``note`` is the runner's note (:meth:`RunnerSummary.describe`)."""
    return note.startswith(f"{RUNNER_KEY}: ")


def measurement_runner(m: Measurement) -> Optional[RunnerSummary]:
    """:func:`runner_summary` over the rounds of every series of ``m``."""
    return runner_summary([r for s in m.series() for r in s.rounds])


def runner_note(m: Optional[Measurement]) -> list[str]:
    """The runner's note of ``m`` (:meth:`RunnerSummary.describe`), or none."""
    summary = measurement_runner(m) if m is not None else None
    return [summary.describe()] if summary is not None else []


def runner_json(m: Optional[Measurement]) -> Optional[dict[str, Any]]:
    """The runner's JSON object of ``m``, or None."""
    summary = measurement_runner(m) if m is not None else None
    return summary.to_dict() if summary is not None else None
