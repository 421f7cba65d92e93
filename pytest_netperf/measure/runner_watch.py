"""The runner's state around a timed round: the machine's counters read before and after it.

:func:`run_with_runner_state` wraps one attempt at a round (the driver's run with the cost
and wire counters around it) and leaves on its result what the machine did meanwhile
(:class:`~pytest_netperf.results.runner.RunnerState`): the time the CPUs spent on
processes, on interrupts and stolen by the hypervisor, the load average, and from the
result itself what the load driver and the stack under test used, so that what other
processes used is the difference. Where the counters cannot be read (not Linux) the round
carries no runner state; it is never a reason to invalidate a round.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Optional

from pytest_netperf.results.model import RoundResult
from pytest_netperf.results.runner import RunnerState
from pytest_netperf.runtime.machine_load import MachineLoad, MachineSample, machine_load, read_sample

Sampler = Callable[[], Optional[MachineSample]]

#: Seconds the runner is watched with no load of the test's (:func:`outside_when_idle`): a
#: neighbour that works in bursts of about 100 ms, half the time on each of 2 cores, averages
#: 1.0 core over it with a spread of about 0.2.
IDLE_WATCH_S = 1.0


def run_with_runner_state(run: Callable[[], RoundResult], sample: Optional[Sampler] = None) -> RoundResult:
    """``run()`` one round with the machine sampled around it (``sample``: default
    :func:`~pytest_netperf.runtime.machine_load.read_sample`); the result with ``runner`` set,
    left as it is when either sample could not be read."""
    sample = sample or read_sample
    before = sample()
    result = run()
    after = sample()
    if before is None or after is None:
        return result
    load = machine_load(before, after)
    if load is None:
        return result
    return replace(result, runner=runner_state(load, result))


def runner_state(load: MachineLoad, result: RoundResult) -> RunnerState:
    """The machine's figures of ``load`` with what ``result``'s driver and stack under test used."""
    return RunnerState(
        cores=load.cores,
        span_s=load.span_s,
        process_cores=load.process_cores,
        interrupt_cores=load.interrupt_cores,
        steal_share=load.steal_share,
        load_avg_1m=load.load_1m,
        driver_cores=(result.client.cpu_user_s + result.client.cpu_sys_s) / load.span_s,
        stack_cores=stack_cores(result, load.span_s),
        started_at=load.started_at,
        task_cores=load.task_cores,
        system_cores=load.system_cores,
    )


def stack_cores(result: RoundResult, span_s: float) -> Optional[float]:
    """The stack under test's CPU over ``span_s`` from its cgroup costs (None without them)."""
    system = result.system
    if system is None or not system.nodes:
        return None
    return sum(node.cpu_ns for node in system.nodes.values()) / 1e9 / span_s


def outside_when_idle(
    seconds: Optional[float] = None, sample: Optional[Sampler] = None, sleep: Callable[[float], None] = time.sleep
) -> Optional[tuple[float, int]]:
    """What other processes and steal took of the runner while the test sent no load, and its
    core count: the machine watched for ``seconds`` (default :data:`IDLE_WATCH_S`) between two
    samples, less the kernel's threads and the container runtime. None where the counters
    cannot be read.

    The stack's CPU weight holds a neighbour back while the test loads the cores, so what it
    took during a round understates how busy the runner is (beside ``busy-neighbor --level
    busy``, 0.15 of 2 cores during a closed loop whose throughput fell to 0.79x); left
    alone, it takes what it wants."""
    sample = sample or read_sample
    before = sample()
    if before is None:
        return None
    sleep(IDLE_WATCH_S if seconds is None else seconds)
    after = sample()
    load = machine_load(before, after) if after is not None else None
    if load is None:
        return None
    outside = max(0.0, load.process_cores - (load.system_cores or 0.0))
    return outside + load.steal_share * load.cores, load.cores
