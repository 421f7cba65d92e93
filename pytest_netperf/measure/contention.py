"""Who held the CPUs a saturated load driver waited for.

On a runner where the load driver and the system under test share cores (fewer than
:data:`~pytest_netperf.runtime.resources.MIN_CORES_TO_SPLIT`, or pinning turned off), a
change that makes a proxy burn CPU delays the driver as well: its threads wait for a CPU,
its timetable slips, and the driver reports itself saturated. A saturated round is measured
again (a neighbour's burst passes); when every attempt saturated, no driver thread used its
own CPU to the limit and the stack under test itself held a large share of the cores each
time, the round measured the change, not the runner: it is kept and judged, with a note. When
both sides of a comparison starved the driver the same way, the runner is too small for
the load and the comparison is INVALID.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from pytest_netperf.cpusets import parse_cpuset
from pytest_netperf.drivers.base import Driver
from pytest_netperf.results.model import RoundResult
from pytest_netperf.runtime.resources import usable_cores

#: The stack under test counts as holding the CPUs when it used at least this share of the
#: cores it shares with the load driver during the round (its cgroups miss part of the
#: kernel's network work, charged to whatever ran when it happened).
STACK_SHARE_OF_SHARED_CORES = 0.4

#: Sides loaded together count as starving each other's load drivers when they used at least
#: this share of the cores the drivers run on: a driver waits for a CPU when every one of them
#: is busy, which a load well below them does only in short runs. Measured on a KVM guest with
#: steal: two drivers pinned to one core at 2000 requests/s each used 0.45-0.47 of it while
#: their p99 schedule lag was 25-42 ms, far longer than the other driver's runs last.
OWN_LOAD_SHARE_OF_DRIVER_CORES = 0.75


def shared_cores(driver: Driver) -> Optional[int]:
    """Cores the driver shares with the stack under test: every usable one, or None when the
    driver is pinned (the default split keeps the stack off its cores)."""
    return None if driver.cpus else len(usable_cores())


def stack_cpu_cores(result: RoundResult) -> Optional[float]:
    """Cores the stack under test used on average over the round (None without its costs)."""
    system = result.system
    if system is None or system.span_s <= 0 or not system.nodes:
        return None
    return sum(node.cpu_ns for node in system.nodes.values()) / 1e9 / system.span_s


def starved_by_stack(result: RoundResult, shared_cores: Optional[int]) -> Optional[str]:
    """Why ``result``'s saturation is the stack's doing, or None when it is the driver's or unknown.

    ``shared_cores``: cores the driver shares with the stack under test (None: pinned apart)."""
    client = result.client
    if not client.saturated or client.cpu_bound or not shared_cores:
        return None
    used = stack_cpu_cores(result)
    if used is None or used < STACK_SHARE_OF_SHARED_CORES * shared_cores:
        return None
    return (
        f"the stack under test used {used:.2f} of the {shared_cores} cores it shares with the load driver, "
        f"and the driver waited for them ({'; '.join(client.saturation_reasons) or 'no reason given'})"
    )


def starved_by_each_other(
    results: Sequence[RoundResult], pinned: Sequence[Optional[str]], runner_held: bool
) -> Optional[str]:
    """Why the drivers of sides loaded together fell behind through the sides' own load, so
    that one side at a time would give them their CPUs back; None when the runner held the
    CPUs they waited for (steal, other processes), which taking turns would not give back.

    ``results`` and ``pinned``: each side's round and its driver's cpuset (None: not pinned,
    :attr:`~pytest_netperf.drivers.base.Driver.cpus`); ``runner_held``: every
    saturated driver only ran behind its timetable waiting for CPUs (``Disturbance.by_runner``).
    The sides' own load on the drivers' cores is what their drivers used of the cores they are
    pinned to, or, unpinned, what the drivers and stacks used of every usable core
    (:attr:`~pytest_netperf.results.runner.RunnerState.own_cores`); it counts as holding them
    from :data:`OWN_LOAD_SHARE_OF_DRIVER_CORES` of them. Unknown (no runner state, an unpinned
    side without its stack's costs) counts as holding them.
    """
    if not runner_held:
        return "a driver's own CPU was the limit, or it could not send what was scheduled"
    states = [r.runner for r in results]
    if any(s is None for s in states) or (not all(pinned) and any(s.stack_cores is None for s in states if s)):
        return "what the sides used of the drivers' cores is unknown"
    if all(pinned):
        cores = len({core for cpus in pinned if cpus for core in parse_cpuset(cpus)})
        used, whose = sum(s.driver_cores for s in states if s), "drivers"
    else:
        cores = len(usable_cores())
        used, whose = sum(s.own_cores for s in states if s), "drivers and stacks"
    if used >= OWN_LOAD_SHARE_OF_DRIVER_CORES * cores:
        return f"the sides' {whose} used {used:.2f} of the {cores} cores the drivers run on"
    return None


def starved_note(label: str, starved: list[str], rounds: int) -> str:
    """``candidate: in 3 of 8 rounds the stack under test ...``: one line for a series' starved rounds."""
    return (
        f"{label}: in {len(starved)} of {rounds} round(s) {starved[-1]}; its latency and throughput include "
        "that wait, which the stack's own CPU use caused"
    )


def both_sides_starved(candidate: str, other: str) -> str:
    """The INVALID reason when each side of a comparison starved the load driver."""
    return (
        f"on both sides ({candidate} and {other}) the stack under test held the CPUs the load driver "
        "needed: this runner has too few cores for this load (lower the rate or the connections, or run "
        "on a machine where the driver gets cores of its own)"
    )
