"""The runner's state beside every verdict: ``/proc/stat`` and ``/proc/loadavg`` parsed from
text and fake files, the state of a round from two samples and what its driver and stack
used, the summary over a measurement's rounds (overlapping rounds included), the note and
the JSON object, and the state stored with a round in a baseline."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

import pytest
from netperf_rounds import make_round

from pytest_netperf.baseline.schema import validate
from pytest_netperf.baseline.store import Baseline, SeriesRecord
from pytest_netperf.errors import BaselineError
from pytest_netperf.measure.runner_watch import outside_when_idle, run_with_runner_state
from pytest_netperf.report.runner_state import RunnerSummary, runner_summary
from pytest_netperf.results.model import ClientHealth, NodeCosts, RoundResult, SystemCosts
from pytest_netperf.results.runner import RunnerState, outside_cores_beside, overlapping_own_cores
from pytest_netperf.runtime.machine_load import (
    CpuTicks,
    MachineSample,
    clock_ticks_per_s,
    machine_load,
    parse_cgroup_usage,
    parse_loadavg,
    parse_pid_stat,
    parse_proc_stat,
    read_sample,
    read_system_ticks,
)

#: A 2-CPU VM's /proc/stat (columns: user nice system idle iowait irq softirq steal guest guest_nice).
STAT = """cpu  26902 10 13774 52521 638 5 681 20 0 0
cpu0 12089 5 6356 28380 148 2 283 9 0 0
cpu1 14813 5 7418 24141 490 3 398 11 0 0
intr 3233879 0 0
ctxt 9536484
btime 1700000000
processes 24007
"""


def ticks(user: int = 0, system: int = 0, idle: int = 0, softirq: int = 0, steal: int = 0, cores: int = 2) -> CpuTicks:
    return CpuTicks(user, 0, system, idle, 0, 0, softirq, steal, cores)


def sample(
    at: float, cpu: CpuTicks, load: Optional[float] = 1.5, wall: float = 1_000.0, task_ns: Optional[int] = None
) -> MachineSample:
    return MachineSample(at=at, wall=wall + at, cpu=cpu, load_1m=load, task_ns=task_ns)


def state(
    process: float, driver: float, stack: Optional[float], started: float = 0.0, span: float = 1.0, steal: float = 0.0
) -> RunnerState:
    return RunnerState(
        cores=2,
        span_s=span,
        process_cores=process,
        interrupt_cores=0.1,
        steal_share=steal,
        load_avg_1m=2.0,
        driver_cores=driver,
        stack_cores=stack,
        started_at=started,
    )


def with_state(runner: Optional[RunnerState]) -> RoundResult:
    return dataclasses.replace(make_round(), runner=runner)


# ------------------------------------------------------------------ /proc parsing
def test_proc_stat_reads_the_aggregate_line_and_counts_the_cpus() -> None:
    cpu = parse_proc_stat(STAT)
    assert (cpu.user, cpu.nice, cpu.system, cpu.idle, cpu.iowait) == (26902, 10, 13774, 52521, 638)
    assert (cpu.irq, cpu.softirq, cpu.steal, cpu.cores) == (5, 681, 20, 2)
    assert cpu.processes == 26902 + 10 + 13774
    assert cpu.interrupts == 686
    assert cpu.busy == cpu.processes + 686 + 20
    assert cpu.total == cpu.busy + 52521 + 638


@pytest.mark.parametrize(
    "line",
    [
        "cpu  100 0 50 800 10 0 5",  # a kernel before steal (2.6.11): seven columns
        "cpu  100 0 50 800 10 0 5 0",  # bare metal: steal always 0
        "cpu  100 0 50 800 10 0 5 0 0 0",
    ],
)
def test_a_kernel_or_machine_without_steal_has_none(line: str) -> None:
    cpu = parse_proc_stat(f"{line}\ncpu0 1 2 3 4\n")
    assert cpu.steal == 0 and cpu.softirq == 5 and cpu.cores == 1
    assert cpu.total == 965


@pytest.mark.parametrize("text", ["", "intr 1 2 3\n", "cpu  1 2\n"])
def test_proc_stat_without_a_cpu_line_is_an_error(text: str) -> None:
    with pytest.raises(ValueError):
        parse_proc_stat(text)


def test_loadavg_is_its_first_field() -> None:
    assert parse_loadavg("3.12 0.88 0.45 2/116 24007\n") == 3.12
    with pytest.raises(ValueError):
        parse_loadavg("")


def test_read_sample_reads_the_files_it_is_given(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text(STAT)
    (tmp_path / "loadavg").write_text("0.68 0.88 0.45 2/116 24007\n")
    (tmp_path / "cpuacct.usage").write_text("174989780182\n")
    got = read_sample(
        tmp_path / "stat",
        tmp_path / "loadavg",
        clock=lambda: 5.0,
        wall_clock=lambda: 1.7e9,
        usage_paths=(tmp_path / "missing", tmp_path / "cpuacct.usage"),
        proc=tmp_path / "no-proc",
    )
    assert got == MachineSample(at=5.0, wall=1.7e9, cpu=parse_proc_stat(STAT), load_1m=0.68, task_ns=174989780182)
    assert read_sample(tmp_path / "stat", tmp_path / "loadavg", usage_paths=(tmp_path / "missing",)).task_ns is None


USER_PROCESS_FLAGS = 4194560  # PF_RANDOMIZE | PF_SUPERPRIV... as a user process shows them
KERNEL_THREAD_FLAGS = 69238880  # ksoftirqd's: PF_KTHREAD among them


def pid_stat(comm: str, utime: int, stime: int, flags: int = USER_PROCESS_FLAGS) -> str:
    """A ``/proc/PID/stat`` line with ``comm``, ``flags`` and the given user and system ticks."""
    return f"42 ({comm}) S 1 42 42 0 -1 {flags} 100 0 0 0 {utime} {stime} 0 0 20 0 12 0 300 0 0\n"


def test_a_process_stat_gives_its_name_kind_and_ticks_even_with_parentheses_in_the_name() -> None:
    assert parse_pid_stat(pid_stat("dockerd", 120, 30)) == ("dockerd", False, 150)
    assert parse_pid_stat(pid_stat("a (weird) name", 1, 2)) == ("a (weird) name", False, 3)
    assert parse_pid_stat(pid_stat("ksoftirqd/1", 0, 7, KERNEL_THREAD_FLAGS)) == ("ksoftirqd/1", True, 7)
    with pytest.raises((ValueError, IndexError)):
        parse_pid_stat("garbage")


def test_kernel_threads_and_the_container_runtime_are_read_from_proc(tmp_path: Path) -> None:
    processes = (
        (10, "dockerd", 500, USER_PROCESS_FLAGS),
        (11, "containerd-shim", 20, USER_PROCESS_FLAGS),
        (12, "nginx", 900, USER_PROCESS_FLAGS),
        (13, "runc", 1, USER_PROCESS_FLAGS),
        (14, "ksoftirqd/0", 30, KERNEL_THREAD_FLAGS),
        (15, "stress-ng", 800, USER_PROCESS_FLAGS),
    )
    for pid, comm, utime, flags in processes:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(pid_stat(comm, utime, 0, flags))
    (tmp_path / "16").mkdir()  # ended while read: no stat
    (tmp_path / "self").mkdir()
    assert read_system_ticks(tmp_path) == {10: 500, 11: 20, 13: 1, 14: 30}
    assert read_system_ticks(tmp_path / "missing") is None


def test_the_machines_own_work_counts_what_its_processes_used_between_samples() -> None:
    hz = clock_ticks_per_s()
    cpu_before, cpu_after = ticks(idle=0), ticks(user=100, idle=100)
    before = MachineSample(at=0.0, wall=0.0, cpu=cpu_before, load_1m=None, system_ticks={10: 500, 11: 20})
    # dockerd used hz/4 ticks, the shim that ended is not counted, a new shim counts from zero
    after = MachineSample(at=1.0, wall=1.0, cpu=cpu_after, load_1m=None, system_ticks={10: 500 + hz // 4, 15: hz // 10})
    load = machine_load(before, after)
    assert load is not None and load.system_cores == pytest.approx((hz // 4 + hz // 10) / hz)
    assert machine_load(dataclasses.replace(before, system_ticks=None), after).system_cores is None


def test_the_root_cgroup_usage_reads_as_v1_nanoseconds_or_v2_microseconds() -> None:
    assert parse_cgroup_usage("174989780182\n") == 174989780182
    v2 = "usage_usec 8129467\nuser_usec 5617211\nsystem_usec 2512256\nnr_periods 0\n"
    assert parse_cgroup_usage(v2) == 8129467000
    for bad in ("", "user_usec 5\nsystem_usec 6\n", "many numbers here"):
        with pytest.raises(ValueError):
            parse_cgroup_usage(bad)


def test_read_sample_without_proc_stat_is_none_and_without_loadavg_has_no_load(tmp_path: Path) -> None:
    assert read_sample(tmp_path / "missing", tmp_path / "loadavg") is None
    (tmp_path / "stat").write_text("garbage\n")
    assert read_sample(tmp_path / "stat", tmp_path / "loadavg") is None
    (tmp_path / "stat").write_text(STAT)
    got = read_sample(tmp_path / "stat", tmp_path / "missing")
    assert got is not None and got.load_1m is None


def test_the_real_proc_reads_where_there_is_one() -> None:
    got = read_sample()
    if not Path("/proc/stat").exists():  # pragma: no cover - not Linux
        assert got is None
        return
    assert got is not None and got.cpu.cores >= 1 and got.cpu.total > 0


# ------------------------------------------------------------------ the machine between two samples
def test_machine_load_in_cores_of_the_machine() -> None:
    # 2 s on 2 CPUs = 400 ticks at USER_HZ 100: 120 user + 40 system, 20 softirq, 8 steal, 212 idle
    before = sample(10.0, ticks(user=1_000, system=500, idle=5_000, softirq=100, steal=50))
    after = sample(12.0, ticks(user=1_120, system=540, idle=5_212, softirq=120, steal=58), load=3.25)
    load = machine_load(before, after)
    assert load is not None
    assert load.span_s == 2.0 and load.cores == 2 and load.started_at == 1_010.0
    assert load.process_cores == pytest.approx(160 / 400 * 2)
    assert load.interrupt_cores == pytest.approx(20 / 400 * 2)
    assert load.steal_share == pytest.approx(8 / 400)
    assert load.busy_cores == pytest.approx(188 / 400 * 2)
    assert load.load_1m == 3.25


def test_no_time_between_samples_is_no_load() -> None:
    same = sample(10.0, ticks(user=1, idle=10))
    assert machine_load(same, same) is None
    assert machine_load(sample(10.0, ticks(idle=20)), sample(11.0, ticks(idle=10))) is None


# ------------------------------------------------------------------ a round's state
def test_a_round_records_the_machine_and_what_its_driver_and_stack_used() -> None:
    samples = iter(
        [
            sample(0.0, ticks(user=0, system=0, idle=0)),
            # 2 s on 2 CPUs: 300 of 400 ticks busy in processes
            sample(2.0, ticks(user=200, system=100, idle=100), load=2.5),
        ]
    )
    result = dataclasses.replace(
        make_round(),
        client=ClientHealth(cpu_user_s=0.6, cpu_sys_s=0.4),  # 1 CPU second: 0.5 cores over 2 s
        system=SystemCosts({"edge": NodeCosts(1_000_000_000, 0, 0), "app": NodeCosts(600_000_000, 0, 0)}, 1, 1.9),
    )
    got = run_with_runner_state(lambda: result, sample=lambda: next(samples))
    runner = got.runner
    assert runner is not None and got.latency == result.latency
    assert runner.process_cores == pytest.approx(1.5)
    assert runner.driver_cores == pytest.approx(0.5)
    assert runner.stack_cores == pytest.approx(0.8)  # 1.6 CPU seconds over 2 s
    assert runner.outside_cores == pytest.approx(0.2)
    assert runner.load_avg_1m == 2.5 and runner.cores == 2


def test_a_plain_url_has_no_stack_and_a_machine_without_proc_no_state() -> None:
    samples = iter([sample(0.0, ticks(idle=0)), sample(1.0, ticks(user=100, idle=100))])
    result = dataclasses.replace(make_round(), client=ClientHealth(cpu_user_s=0.25))
    got = run_with_runner_state(lambda: result, sample=lambda: next(samples))
    assert got.runner is not None and got.runner.stack_cores is None
    assert got.runner.outside_cores == pytest.approx(1.0 - 0.25)
    assert run_with_runner_state(lambda: result, sample=lambda: None).runner is None


def test_other_processes_are_counted_in_the_accounting_of_the_stack_and_driver() -> None:
    # A closed-loop HTTP round on 2 cores beside a neighbour using 0.5 cores, as a kernel
    # that charges soft interrupts to the task they interrupt records it: /proc/stat has
    # 1.03 cores of processes and 0.89 of interrupts; the driver's rusage and the stack's
    # cgroups have 1.88 between them, interrupts of their packets included; the root cgroup
    # 2.38. Process time alone would hide the neighbour (1.03 - 1.88 < 0).
    samples = iter(
        [
            sample(0.0, ticks(idle=0, softirq=0), task_ns=0),
            sample(1.0, ticks(user=103, softirq=89, idle=8), task_ns=2_380_000_000),
        ]
    )
    result = dataclasses.replace(
        make_round(),
        client=ClientHealth(cpu_user_s=0.3, cpu_sys_s=0.18),
        system=SystemCosts({"gw": NodeCosts(1_400_000_000, 0, 0)}, 1, 1.0),
    )
    runner = run_with_runner_state(lambda: result, sample=lambda: next(samples)).runner
    assert runner is not None
    assert runner.task_cores == pytest.approx(2.38)
    assert runner.process_cores - runner.own_cores < 0
    assert runner.outside_cores == pytest.approx(0.5)
    without_cgroup = dataclasses.replace(runner, task_cores=None)
    assert without_cgroup.outside_cores == 0.0  # what /proc/stat alone can say
    # dockerd writing the stack's access logs is the test's own work, not a neighbour
    assert dataclasses.replace(runner, system_cores=0.25).outside_cores == pytest.approx(0.25)


def test_outside_cores_never_go_below_zero() -> None:
    assert state(process=0.5, driver=0.4, stack=0.3).outside_cores == 0.0


# ------------------------------------------------------------------ the summary of a measurement
def test_the_summary_is_the_mean_and_the_largest_round() -> None:
    rounds = [
        with_state(state(process=1.0, driver=0.3, stack=0.2, started=100.0, steal=0.01)),
        with_state(state(process=1.6, driver=0.3, stack=0.2, started=110.0, steal=0.03)),
        with_state(None),  # a round that could not read the machine
    ]
    summary = runner_summary(rounds)
    assert summary is not None
    assert summary.rounds == 2 and summary.cores == 2
    assert summary.other_cores == pytest.approx(0.8) and summary.other_cores_max == pytest.approx(1.1)
    assert summary.test_cores == pytest.approx(0.5)
    assert summary.steal_share == pytest.approx(0.02) and summary.load_avg_1m == 2.0
    assert summary.interrupt_cores == pytest.approx(0.1)
    assert summary.busy_cores == pytest.approx((1.12 + 1.76) / 2)  # processes, interrupts 0.1, steal of 2 cores
    assert summary.describe() == (
        "runner: 2 cores, steal 2.0%, load 2.0, other processes 0.80 cores (max 1.10) during the rounds"
    )
    assert runner_summary([with_state(None)]) is None


def test_rounds_loaded_together_do_not_count_each_other_as_other_processes() -> None:
    # a head and its base twin at the same moment: the machine saw both drivers and both stacks
    head = state(process=1.5, driver=0.3, stack=0.4, started=100.0, span=2.0)
    base = state(process=1.5, driver=0.3, stack=0.4, started=100.0, span=2.0)
    summary = runner_summary([with_state(head), with_state(base)])
    assert summary is not None
    assert summary.test_cores == pytest.approx(1.4)
    assert summary.other_cores == pytest.approx(0.1)
    assert outside_cores_beside(head, [head, base]) == pytest.approx(0.1)  # what validity.py may share
    assert overlapping_own_cores(head, [head]) == 0.0  # a round is not its own neighbour
    # half an overlap takes out half of the other round's use
    later = state(process=1.5, driver=0.3, stack=0.4, started=101.0, span=2.0)
    summary = runner_summary([with_state(head), with_state(later)])
    assert summary is not None and summary.test_cores == pytest.approx(0.7 + 0.35)
    # rounds one after the other do not overlap
    apart = state(process=1.5, driver=0.3, stack=0.4, started=102.0, span=2.0)
    summary = runner_summary([with_state(head), with_state(apart)])
    assert summary is not None and summary.other_cores == pytest.approx(0.8)


def test_kernel_threads_and_the_container_runtime_are_the_tests_own_and_named_in_the_note() -> None:
    # two rounds loaded together: the runtime's use is machine-wide, taken out once per round
    head = dataclasses.replace(state(process=1.5, driver=0.3, stack=0.4, started=100.0, span=2.0), system_cores=0.3)
    base = dataclasses.replace(head)
    summary = runner_summary([with_state(head), with_state(base)])
    assert summary is not None
    assert summary.other_cores == 0.0  # 1.5 - 1.4 - 0.3 < 0
    alone = dataclasses.replace(state(process=1.5, driver=0.3, stack=0.4), system_cores=0.25)
    summary = runner_summary([with_state(alone)])
    assert summary is not None and summary.other_cores == pytest.approx(0.55) and summary.system_cores == 0.25
    assert summary.describe().endswith(
        "other processes 0.55 cores (max 0.55) during the rounds, besides 0.25 of kernel threads and the "
        "container runtime (packet work, the stack's logs)"
    )
    assert "kernel threads" not in runner_summary([with_state(state(1.0, 0.3, 0.2))]).describe()


def test_without_a_load_average_the_note_leaves_it_out() -> None:
    quiet = dataclasses.replace(state(process=0.5, driver=0.2, stack=None), load_avg_1m=None)
    summary = runner_summary([with_state(quiet)])
    assert summary is not None and summary.load_avg_1m is None
    assert summary.describe() == (
        "runner: 2 cores, steal 0.0%, other processes 0.30 cores (max 0.30) during the rounds; "
        "with a plain URL target (1 of 1 rounds) a server on this machine counts among them"
    )


def test_the_json_object_has_the_summary_fields() -> None:
    summary = runner_summary([with_state(state(process=1.0, driver=0.3, stack=0.2))])
    assert summary is not None
    doc = json.loads(json.dumps(summary.to_dict()))
    assert set(doc) == {f.name for f in dataclasses.fields(RunnerSummary)}
    assert doc["other_cores"] == pytest.approx(0.5) and doc["cores"] == 2


# ------------------------------------------------------------------ stored with the round
def test_a_round_keeps_its_state_through_a_baseline_file(tmp_path: Path) -> None:
    first = with_state(state(process=1.0, driver=0.3, stack=None, started=1.7e9))
    doc = json.loads(json.dumps(Baseline.new("t.py::test", {"candidate": SeriesRecord([first])}).to_dict()))
    validate(doc, tmp_path / "b.json")
    back = Baseline.from_dict(doc, tmp_path / "b.json").series["candidate"].rounds[0]
    assert back.runner == first.runner and isinstance(back.runner, RunnerState)
    doc["series"]["candidate"]["rounds"][0]["runner"]["steal_share"] = "high"
    with pytest.raises(BaselineError, match=r"rounds\[0\]\.runner\.steal_share: expected a number"):
        validate(doc, tmp_path / "b.json")


def test_outside_when_idle_is_what_others_and_steal_took_while_the_test_sent_no_load() -> None:
    hz = clock_ticks_per_s()
    # over 1 s of a 2-core machine (200 ticks): processes 100 ticks (1.0 core), of which
    # dockerd hz/10 ticks (0.1 core), steal 10 ticks (5%: 0.1 core)
    before = MachineSample(at=0.0, wall=0.0, cpu=ticks(idle=0), load_1m=None, system_ticks={10: 0})
    busy = ticks(user=100, idle=90, steal=10)
    after = MachineSample(at=1.0, wall=1.0, cpu=busy, load_1m=None, system_ticks={10: hz // 10})
    samples, slept = iter([before, after]), []
    got = outside_when_idle(0.5, sample=lambda: next(samples), sleep=slept.append)
    assert slept == [0.5]
    assert got is not None and got[1] == 2 and got[0] == pytest.approx(1.0 - 0.1 + 0.1)


def test_outside_when_idle_without_counters_is_unknown_and_does_not_wait() -> None:
    slept: list[float] = []
    assert outside_when_idle(1.0, sample=lambda: None, sleep=slept.append) is None
    assert slept == []
