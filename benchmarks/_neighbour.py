"""A busy runner as a reproducible scenario: ``shared/noise/busy-neighbor`` beside a benchmark or a test.

The program is found at ``$NETPERF_BUSY_NEIGHBOR``, else ``../shared/noise/busy-neighbor``
next to the repository, else on PATH. :class:`Neighbour` starts it (bounded by ``seconds``,
seeded) in its own process group and always stops it: SIGTERM to the program (it stops its
workers and prints one busy-fraction line each), SIGKILL to the whole group after a grace,
then SIGKILL to whatever of the group is still left. It uses the standard library only, so
``benchmarks/*.py`` import it by bare name, the tests by path (``importlib`` on this file).

Scenario names (``--neighbour idle,busy,heavy:2``): ``idle`` runs nothing; ``LEVEL`` is
``--level LEVEL`` (light, busy, heavy: duty 0.25/0.5/0.9 per core); ``LEVEL:N`` adds
``--net-pairs N`` loopback TCP ping-pong pairs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Optional

#: Where the program's path may be given.
ENV = "NETPERF_BUSY_NEIGHBOR"
PROGRAM = "busy-neighbor"
#: The repository's root (this file is benchmarks/_neighbour.py).
REPO = Path(__file__).resolve().parents[1]
#: The named levels of busy-neighbor and their duty per core.
LEVELS = {"light": 0.25, "busy": 0.50, "heavy": 0.90}
IDLE = "idle"
#: The scenarios of the gate's own tables (issue #38), the default of gate_power.py and
#: counting_gate_power.py: idle, ``--level busy``, and ``--level heavy --net-pairs 2`` (closest
#: to other jobs' containers doing network work at load 3-5).
MATRIX = "idle,busy,heavy:2"
#: The program's own bound (``--seconds``) is at most this.
MAX_SECONDS = 7200.0

_WORKER = re.compile(r"busy-neighbor: worker (\d+) busy (\d+)% of (\d+) s")
_NET = re.compile(r"busy-neighbor: (net\d+) made (\d+) loopback round trips")


class NeighbourMissing(RuntimeError):
    """busy-neighbor is nowhere this module looks; the message says where it looked."""


@dataclass(frozen=True)
class Scenario:
    """One neighbour scenario: ``idle``, or a level with loopback TCP pairs."""

    name: str
    level: Optional[str] = None
    net_pairs: int = 0

    @property
    def idle(self) -> bool:
        return self.level is None

    def argv(self) -> list[str]:
        """busy-neighbor's options for this scenario (empty for ``idle``)."""
        if self.level is None:
            return []
        return ["--level", self.level, *(["--net-pairs", str(self.net_pairs)] if self.net_pairs else [])]


def parse_scenario(text: str) -> Scenario:
    """``idle``, ``LEVEL`` or ``LEVEL:N`` (N loopback TCP pairs); ValueError otherwise."""
    name = text.strip()
    level, _, pairs = name.partition(":")
    if level == IDLE and not pairs:
        return Scenario(IDLE)
    if level not in LEVELS:
        raise ValueError(f"unknown neighbour {name!r}; expected idle, {', '.join(LEVELS)}, or LEVEL:N (net pairs)")
    if pairs and not (pairs.isdigit() and int(pairs) >= 0):
        raise ValueError(f"neighbour {name!r}: N in LEVEL:N is a count of loopback TCP pairs (0 or more)")
    return Scenario(name, level, int(pairs or 0))


def add_neighbour_options(parser: argparse.ArgumentParser, scope: str, default: str = IDLE) -> None:
    """``--neighbour``, ``--neighbour-seconds`` and ``--neighbour-seed``; ``scope`` says what
    each scenario runs beside (for the help text), ``default`` the scenarios without the option."""
    parser.add_argument(
        "--neighbour",
        default=default,
        help=f"busy-neighbor scenarios, each {scope}: idle, light, busy, heavy, LEVEL:N (N net pairs)",
    )
    parser.add_argument(
        "--neighbour-seconds", type=float, default=7200.0, help="busy-neighbor's --seconds bound (restarted after)"
    )
    parser.add_argument("--neighbour-seed", type=int, default=1, help="busy-neighbor's --seed")


def parse_scenarios(text: str) -> list[Scenario]:
    """A comma list of scenarios (``idle,busy,heavy:2``), in order, each once."""
    found: list[Scenario] = []
    for part in text.split(","):
        if part.strip():
            scenario = parse_scenario(part)
            if scenario not in found:
                found.append(scenario)
    if not found:
        raise ValueError("no neighbour scenario given (e.g. idle,busy,heavy:2)")
    return found


def find_program() -> Path:
    """The busy-neighbor program: ``$NETPERF_BUSY_NEIGHBOR``, ``../shared/noise/busy-neighbor``
    beside the repository, else PATH; :class:`NeighbourMissing` naming every place looked at."""
    given = os.environ.get(ENV)
    if given:
        path = Path(given).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise NeighbourMissing(f"${ENV}={given} is not an executable file")
    beside = REPO.parent / "shared" / "noise" / PROGRAM
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    on_path = shutil.which(PROGRAM)
    if on_path:
        return Path(on_path)
    raise NeighbourMissing(f"{PROGRAM} not found: ${ENV} is unset, {beside} does not exist and it is not on PATH")


@dataclass
class NeighbourReport:
    """What busy-neighbor said at exit: each worker's busy fraction, each pair's round trips."""

    busy: dict[int, float] = field(default_factory=dict)
    seconds: dict[int, float] = field(default_factory=dict)
    round_trips: dict[str, int] = field(default_factory=dict)
    returncode: Optional[int] = None
    output: str = ""

    @property
    def mean_busy(self) -> float:
        """The workers' mean busy fraction (NaN without a worker line)."""
        return statistics.fmean(self.busy.values()) if self.busy else float("nan")

    def merge(self, other: NeighbourReport) -> None:
        """Add a later run's figures (a restarted neighbour): worker fractions averaged by time."""
        for index, frac in other.busy.items():
            before, seconds = self.busy.get(index), self.seconds.get(index, 0.0)
            total = seconds + other.seconds.get(index, 0.0)
            if before is None or total <= 0:
                self.busy[index], self.seconds[index] = frac, other.seconds.get(index, 0.0)
            else:
                self.busy[index] = (before * seconds + frac * other.seconds.get(index, 0.0)) / total
                self.seconds[index] = total
        for name, trips in other.round_trips.items():
            self.round_trips[name] = self.round_trips.get(name, 0) + trips
        self.returncode = other.returncode
        self.output += other.output

    def summary(self) -> str:
        """One line: the workers' busy fractions and the pairs' round trips."""
        if not self.busy and not self.round_trips:
            return "no figures (did it start?)"
        workers = " ".join(f"{self.busy[i]:.0%}" for i in sorted(self.busy))
        text = f"workers busy {self.mean_busy:.0%} on average ({workers})"
        if self.round_trips:
            text += f", {sum(self.round_trips.values()):,} loopback round trips"
        return text


def parse_output(text: str) -> NeighbourReport:
    """The per-worker and per-pair lines of busy-neighbor's output."""
    report = NeighbourReport(output=text)
    for match in _WORKER.finditer(text):
        index = int(match[1])
        report.busy[index] = int(match[2]) / 100.0
        report.seconds[index] = float(match[3])
    for match in _NET.finditer(text):
        report.round_trips[match[1]] = int(match[2])
    return report


class Neighbour:
    """busy-neighbor running for the length of a ``with`` block (nothing for ``idle``).

    ``with Neighbour(parse_scenario("busy"), seconds=120, seed=1) as n: ...``; afterwards
    ``n.report`` holds the workers' busy fractions. Stopped on any exit of the block,
    KeyboardInterrupt included.
    """

    def __init__(
        self,
        scenario: Scenario,
        seconds: float = MAX_SECONDS,
        seed: int = 1,
        *,
        program: Optional[Path] = None,
        workers: Optional[int] = None,
        settle_s: float = 1.0,
        grace_s: float = 5.0,
        outside: Optional[Path] = None,
    ) -> None:
        if not 0 < seconds <= MAX_SECONDS:
            raise ValueError(f"seconds must be in (0, {MAX_SECONDS:g}], not {seconds}")
        self.scenario = scenario
        self.seconds = seconds
        self.seed = seed
        self.workers = workers
        self.settle_s = settle_s
        self.grace_s = grace_s
        #: The ``cgroup.procs`` the neighbour starts in, when this process sits in the gate's
        #: weighted cgroup (runtime/cpu_priority.py): another job's processes are not in it.
        self.outside = outside if outside is not None else _outside_weighted_group()
        self.program = program if program is not None or scenario.idle else find_program()
        self.report = NeighbourReport()
        self.starts = 0
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._out: Optional[IO[bytes]] = None

    def argv(self) -> list[str]:
        """The command line of the next start (a restart takes the next seed)."""
        assert self.program is not None
        argv = [str(self.program), *self.scenario.argv(), "--seconds", f"{self.seconds:g}"]
        argv += ["--seed", str(self.seed + self.starts)]
        return argv + (["--workers", str(self.workers)] if self.workers else [])

    def start(self) -> None:
        """Start the program (not for ``idle``) and wait ``settle_s`` for its workers."""
        if self.scenario.idle or self.running:
            return
        # a pipe nobody reads could fill; a file cannot (closed in stop())
        self._out = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._proc = subprocess.Popen(
                self.argv(),
                stdout=self._out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_stop_with_parent if self.outside is None else _outside(self.outside),
            )
        except OSError:
            self._out.close()
            self._out = None
            raise
        self.starts += 1
        time.sleep(self.settle_s)
        if self._proc.poll() is not None:
            report = self.stop()
            raise RuntimeError(f"busy-neighbor exited at once ({report.returncode}): {report.output.strip()[-500:]}")

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def ensure_running(self) -> bool:
        """Start it again if its ``seconds`` ran out (figures kept); True when it did."""
        if self.scenario.idle or self.running:
            return False
        if self._proc is not None:
            self.stop()
        self.start()
        return True

    def stop(self) -> NeighbourReport:
        """Stop it and return the figures so far. SIGTERM goes to the program alone (it stops
        its workers in order and prints their lines; a SIGTERM to the whole group reached the
        workers twice and lost lines), SIGKILL to the group after ``grace_s``."""
        proc, out = self._proc, self._out
        self._proc, self._out = None, None
        if proc is None:
            return self.report
        try:
            if proc.poll() is None:
                _signal(proc.pid, signal.SIGTERM, group=False)
                try:
                    proc.wait(timeout=self.grace_s)
                except subprocess.TimeoutExpired:
                    _signal(proc.pid, signal.SIGKILL, group=True)
                    proc.wait()
        finally:
            _sweep(proc.pid, self.grace_s)
            text = ""
            if out is not None:
                out.seek(0)
                text = out.read().decode(errors="replace")
                out.close()
            run = parse_output(text)
            run.returncode = proc.returncode
            self.report.merge(run)
        return self.report

    def __enter__(self) -> Neighbour:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: Optional[type[BaseException]], value: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        # a second Ctrl-C or SIGTERM while stopping must not leave the workers running
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
        try:
            self.stop()
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)


def _signal(pid: int, signum: int, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError):
        (os.killpg if group else os.kill)(pid, signum)


def _sweep(pgid: int, wait_s: float) -> None:
    """SIGKILL whatever of the group ``pgid`` is still alive after ``wait_s`` (a worker or a
    loopback pair's server that outlived the program, which has been reaped)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    _signal(pgid, signal.SIGKILL, group=True)


def _prctl() -> Optional[Callable[..., int]]:
    """libc's prctl (Linux), looked up in the parent: the child between fork and exec only calls it."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def _stop_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies (PR_SET_PDEATHSIG), so a
    benchmark killed with SIGKILL leaves no neighbour burning CPU until its ``--seconds`` end."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)


def _outside_weighted_group() -> Optional[Path]:
    """Where the gate's weighted cgroup sits, when this process is in one (a test suite whose
    Docker fixture moved it there), else None; without pytest_netperf importable, None."""
    try:
        from pytest_netperf.runtime.cpu_priority import outside_cgroup_procs
    except ImportError:
        return None
    return outside_cgroup_procs()


def _outside(cgroup_procs: Path) -> Callable[[], None]:
    """A ``preexec_fn``: :func:`_stop_with_parent`, then into the cgroup of ``cgroup_procs``."""

    def move() -> None:
        _stop_with_parent()
        with open(cgroup_procs, "w") as handle:
            handle.write(str(os.getpid()))

    return move


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def describe(scenario: Scenario, report: Optional[NeighbourReport]) -> str:
    """The table cell of a scenario's neighbour: its measured busy fraction."""
    if scenario.idle or report is None:
        return "-"
    return f"{report.mean_busy:.0%}" if report.busy else "?"


if __name__ == "__main__":  # a quick look: python benchmarks/_neighbour.py busy:1 3
    with Neighbour(parse_scenario(sys.argv[1] if len(sys.argv) > 1 else "busy"), seconds=30) as running:
        time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 3.0)
    print(running.report.summary())
