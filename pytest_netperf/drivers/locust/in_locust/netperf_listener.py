"""Locust plugin file of the netperf driver (loaded with ``-f <locustfile>,<this file>``).

In every process that runs users it records each request into a :class:`WindowRecorder`.
The master (or the single local process) times the round: after all users are spawned it
waits ``--netperf-warmup`` seconds, opens the window (workers get ``netperf_start``), waits
``--netperf-duration`` seconds, closes it (workers answer ``netperf_stop`` with their
encoded histograms and counters in a ``netperf_report`` message), merges everything
losslessly, writes ``--netperf-out`` and quits Locust.

Remote workers load the same two files with ``--worker``; options come from the master.
With ``--netperf-control SOCKET`` the master instead serves many rounds for a pytest session
(:mod:`.session_master`): workers attach once and each round travels as Locust messages.
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any, Optional

import gevent
import gevent.event
import locust
import locust.runners as locust_runners
from locust import events
from locust.runners import MasterRunner, WorkerRunner

from pytest_netperf.drivers.locust.in_locust.connection_counter import (
    bytes_sent,
    install_connection_counters,
    sockets_opened,
)
from pytest_netperf.drivers.locust.in_locust.error_kinds import classify_exception, task_exception_kind
from pytest_netperf.drivers.locust.in_locust.output_document import output_document
from pytest_netperf.drivers.locust.in_locust.pacing import Pacing
from pytest_netperf.drivers.locust.in_locust.session_master import SessionMaster
from pytest_netperf.drivers.locust.in_locust.window_recorder import WindowRecorder
from pytest_netperf.results.histogram import HIGHEST_NS, new_histogram, percentile_ns

# Locust samples its own CPU use every 10 s, longer than a typical round; sample each second
# so its "CPU usage above 90%" warning can fire inside short measurement windows.
locust_runners.CPU_MONITOR_INTERVAL = 1.0
_COUNTED_CLIENTS = install_connection_counters()


@events.init_command_line_parser.add_listener
def _add_options(parser: Any, **_kw: Any) -> None:
    group = parser.add_argument_group("netperf measurement")
    group.add_argument("--netperf-out", default="", help="where the master writes the result JSON")
    group.add_argument("--netperf-warmup", type=float, default=1.0, help="warmup seconds")
    group.add_argument("--netperf-duration", type=float, default=5.0, help="measured seconds")
    group.add_argument("--netperf-interval", type=float, default=1.0, help="interval seconds")
    group.add_argument("--netperf-users", type=int, default=1, help="users over all workers")
    group.add_argument("--netperf-rate", type=float, default=0.0, help="iterations/s (0 = closed loop)")
    group.add_argument("--netperf-arrival", default="constant", help="constant | poisson")
    group.add_argument("--netperf-report-timeout", type=float, default=15.0, help="wait for worker reports")
    group.add_argument("--netperf-control", default="", help="master: serve rounds on this Unix socket")


class _Cpu:
    """CPU time and Locust's own CPU samples of this process over the window."""

    def __init__(self) -> None:
        self._start: Optional[tuple[float, float, float]] = None
        self._end: Optional[tuple[float, float, float]] = None
        self.peak_percent = 0.0
        self.warned_percent: Optional[float] = None

    @staticmethod
    def _now() -> tuple[float, float, float]:
        times = os.times()
        return times.user, times.system, time.monotonic()

    def start(self) -> None:
        self._start, self._end = self._now(), None
        self.peak_percent, self.warned_percent = 0.0, None

    def stop(self) -> None:
        if self._start is not None and self._end is None:
            self._end = self._now()

    @property
    def measuring(self) -> bool:
        return self._start is not None and self._end is None

    def sample(self, cpu_percent: float, warning: bool) -> None:
        if not self.measuring:
            return
        self.peak_percent = max(self.peak_percent, float(cpu_percent))
        if warning:
            self.warned_percent = max(self.warned_percent or 0.0, float(cpu_percent))

    def report(self, role: str, node_id: str) -> dict[str, Any]:
        start = self._start or self._now()
        end = self._end or self._now()
        return {
            "role": role,
            "node_id": node_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "cpu_user_s": end[0] - start[0],
            "cpu_sys_s": end[1] - start[1],
            "wall_s": end[2] - start[2],
            "locust_cpu_peak_percent": self.peak_percent,
            "locust_cpu_warning_percent": self.warned_percent,
            "sockets_opened": sockets_opened(),
            "counted_clients": _COUNTED_CLIENTS,
            "address": _local_address(),
        }


class _LoopLag:
    """How late this process's event loop wakes a sleeping greenlet (the Locust analog of the
    Rust driver's schedule lag): a late wake-up also delays reading responses."""

    PERIOD_S = 0.005

    def __init__(self) -> None:
        self.histogram = new_histogram()
        self._greenlet: Optional[gevent.Greenlet] = None

    def start(self) -> None:
        self.stop()
        self.histogram = new_histogram()
        self._greenlet = gevent.spawn(self._probe)

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None

    def _probe(self) -> None:
        while True:
            before = time.perf_counter_ns()
            gevent.sleep(self.PERIOD_S)
            late_ns = time.perf_counter_ns() - before - int(self.PERIOD_S * 1e9)
            self.histogram.record_value(min(max(late_ns, 0), HIGHEST_NS))

    def report(self) -> dict[str, Any]:
        if self.histogram.get_total_count() == 0:
            return {"loop_lag_p99_ns": None, "loop_lag_max_ns": None}
        return {
            "loop_lag_p99_ns": float(percentile_ns(self.histogram, 99.0)),
            "loop_lag_max_ns": float(self.histogram.get_max_value()),
        }


class NetperfNode:
    """The netperf state of one Locust process (local, master or worker)."""

    def __init__(self, environment: Any) -> None:
        self.environment = environment
        self.recorder = WindowRecorder()
        self.cpu = _Cpu()
        self.loop_lag = _LoopLag()
        self.reports: dict[str, dict[str, Any]] = {}
        self.expected_workers: set[str] = set()
        self.all_reported = gevent.event.Event()
        self.controller: Optional[gevent.Greenlet] = None
        self._sent_at_open = 0
        self._original_wait_times: dict[Any, Any] = {}
        #: The round's pacing (None for a closed-loop round).
        self.pacing: Optional[Pacing] = None

    # -- roles -----------------------------------------------------------------------------
    @property
    def runner(self) -> Any:
        return self.environment.runner

    @property
    def is_master(self) -> bool:
        return isinstance(self.runner, MasterRunner)

    @property
    def is_worker(self) -> bool:
        return isinstance(self.runner, WorkerRunner)

    @property
    def role(self) -> str:
        return "master" if self.is_master else "worker" if self.is_worker else "local"

    @property
    def node_id(self) -> str:
        return str(getattr(self.runner, "client_id", "") or self.role)

    @property
    def options(self) -> Any:
        return self.environment.parsed_options

    # -- recording (processes that run users) -----------------------------------------------
    def on_request(
        self,
        response_time: Optional[float] = None,
        response_length: int = 0,
        response: Any = None,
        exception: Optional[BaseException] = None,
        **_kw: Any,
    ) -> None:
        status = int(getattr(response, "status_code", 0) or 0) if response is not None else 0
        if status > 0:
            rejected = exception is not None and 200 <= status < 300
            self.recorder.record_response(status, float(response_time or 0.0), response_length or 0, rejected)
        else:
            self.recorder.record_error(classify_exception(exception) if exception is not None else "other")

    def on_user_error(self, exception: Optional[BaseException] = None, **_kw: Any) -> None:
        """A task raised (Locust's ``user_error``): an error of its own kind, not a request."""
        self.recorder.record_error(task_exception_kind(exception) if exception is not None else "task exception")

    def on_usage(self, cpu_usage: float, **_kw: Any) -> None:
        self.cpu.sample(cpu_usage, warning=cpu_usage > locust_runners.CPU_WARNING_THRESHOLD)

    def configure_users(self) -> None:
        """Apply pacing to every user class when the round is rate-driven."""
        rate = float(self.options.netperf_rate or 0.0)
        users = max(int(self.options.netperf_users), 1)
        for user_class in self.environment.user_classes:  # a session's earlier round may have paced them
            self._original_wait_times.setdefault(user_class, user_class.wait_time)
            user_class.wait_time = self._original_wait_times[user_class]
        self.pacing = None
        if rate <= 0:
            return
        self.pacing = Pacing(rate / users, self.options.netperf_arrival, lambda: self.recorder.note_iteration())
        for user_class in self.environment.user_classes:
            user_class.wait_time = self.pacing.as_user_method()

    def open_window(self) -> None:
        intended_by = self.pacing.intended_by if self.pacing is not None else None
        self.recorder = WindowRecorder(interval_s=float(self.options.netperf_interval), intended_by=intended_by)
        self.recorder.start()
        self._sent_at_open = bytes_sent()
        self.cpu.start()
        self.loop_lag.start()

    def close_window(self) -> dict[str, Any]:
        self.recorder.stop()
        self.recorder.bytes_sent = bytes_sent() - self._sent_at_open
        self.cpu.stop()
        self.loop_lag.stop()
        process = {
            **self.cpu.report(self.role, self.node_id),
            **self.loop_lag.report(),
            "requests": self.recorder.requests,
            "errors": self.recorder.non_2xx + sum(self.recorder.errors.values()),
        }
        return {"window": self.recorder.payload(), "process": process}

    # -- worker side --------------------------------------------------------------------------
    def on_start_message(self, **_kw: Any) -> None:
        self.open_window()

    def on_stop_message(self, **_kw: Any) -> None:
        self.runner.send_message("netperf_report", self.close_window())

    # -- master side --------------------------------------------------------------------------
    def on_report(self, msg: Any, **_kw: Any) -> None:
        self.reports[str(msg.node_id)] = msg.data
        if self.expected_workers <= set(self.reports):
            self.all_reported.set()

    def start_controller(self, **_kw: Any) -> None:
        if self.is_worker or self.controller is not None:
            return
        self.controller = gevent.spawn(self._control_round)

    def _control_round(self) -> None:
        options = self.options
        gevent.sleep(float(options.netperf_warmup))
        if self.is_master:
            self.expected_workers = {client.id for client in self.runner.clients.all}
            self.runner.send_message("netperf_start")
            self.cpu.start()
        else:
            self.open_window()
        started = time.monotonic()
        gevent.sleep(float(options.netperf_duration))
        window_s = time.monotonic() - started
        if self.is_master:
            self.cpu.stop()
            self.runner.send_message("netperf_stop")
            self.all_reported.wait(timeout=float(options.netperf_report_timeout))
            document = self.master_document(window_s, self.expected_workers)
        else:
            document = self.document(window_s, [self.close_window()], None)
        _write_json_atomically(options.netperf_out, document)
        gevent.spawn(self.runner.quit)

    def master_document(self, window_s: float, expected: set[str]) -> dict[str, Any]:
        """The merged document of a distributed round from the reports received so far."""
        parts = [self.reports[node] for node in sorted(self.reports) if node in expected]
        return self.document(window_s, parts, self.cpu.report("master", "master"), expected)

    def document(
        self,
        window_s: float,
        parts: list[dict[str, Any]],
        master_process: Optional[dict[str, Any]],
        expected: Optional[set[str]] = None,
    ) -> dict[str, Any]:
        options = self.options
        return output_document(
            role=self.role,
            window_s=window_s,
            rate=float(options.netperf_rate or 0.0),
            users=int(options.netperf_users),
            workers_expected=self.expected_workers if expected is None else expected,
            parts=parts,
            master_process=master_process,
            locust_version=locust.__version__,
        )


def _write_json_atomically(path: str, document: dict[str, Any]) -> None:
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(document, handle)
    os.replace(temporary, path)


def _local_address() -> str:
    """The address this process reaches the master from (or the default route's), "" if none."""
    options = _node.options if _node is not None else None
    target = str(getattr(options, "master_host", "") or "") if _node is not None and _node.is_worker else ""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((target or "192.0.2.1", 9))  # UDP connect sends nothing; it only picks a route
        return str(probe.getsockname()[0])
    except OSError:
        return ""
    finally:
        probe.close()


_node: Optional[NetperfNode] = None


@events.init.add_listener
def _on_init(environment: Any, **_kw: Any) -> None:
    global _node
    node = NetperfNode(environment)
    _node = node
    if node.is_master:
        node.runner.register_message("netperf_report", node.on_report)
        control = str(getattr(node.options, "netperf_control", "") or "")
        if control:
            session = SessionMaster(node, node.master_document)
            environment.events.spawning_complete.add_listener(session.on_spawning_complete)
            environment.events.request.add_listener(node.on_request)
            environment.events.user_error.add_listener(node.on_user_error)
            environment.events.usage_monitor.add_listener(node.on_usage)
            session.serve(control)
            return
    elif node.is_worker:
        node.runner.register_message("netperf_start", node.on_start_message)
        node.runner.register_message("netperf_stop", node.on_stop_message)
    environment.events.request.add_listener(node.on_request)
    environment.events.user_error.add_listener(node.on_user_error)
    environment.events.usage_monitor.add_listener(node.on_usage)
    environment.events.spawning_complete.add_listener(node.start_controller)
    if environment.shape_class is not None:
        raise SystemExit("netperf: LoadTestShape classes are not supported; the driver sets users and rate")


@events.test_start.add_listener
def _on_test_start(environment: Any, **_kw: Any) -> None:
    if _node is not None and not _node.is_master:
        _node.configure_users()
