"""The Rust load driver (`netperf-driver http`): argv building, running, JSON parsing."""

from __future__ import annotations

import json
from typing import Optional
from urllib.parse import urlsplit, urlunsplit

from pytest_netperf.drivers.base import LoadShape, sent_something
from pytest_netperf.drivers.rust_json import round_from_driver_json
from pytest_netperf.errors import DriverError
from pytest_netperf.results.model import RoundResult
from pytest_netperf.runtime.commands import BINARY_NAME, CommandOutcome, CommandRunner, LocalRunner

#: Extra seconds a run may take beyond warmup + duration + timeout before it is killed.
RUN_GRACE_S = 30.0

_EXIT_MEANINGS = {
    1: "failed",
    2: "rejected its arguments",
    3: "could not reach the target",
    4: "was interrupted",
    5: "lost the target mid-round",
    6: "failed the TLS handshake",
    7: "found that the target does not speak the protocol asked for",
}


def _seconds(value: float) -> str:
    """A duration flag value the driver parses exactly (``1.5s``, ``0.0005s``)."""
    text = f"{float(value):.9f}".rstrip("0").rstrip(".")
    return f"{text or '0'}s"


def grpc_url(url: str, method: str) -> str:
    """``url`` with its path (and query) replaced by the gRPC ``method`` (``/pkg.Service/Method``)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, method, "", ""))


def http2_argv(shape: LoadShape) -> list[str]:
    """The driver flags of ``shape``'s HTTP/2 and gRPC options (none for HTTP/1.1)."""
    args: list[str] = []
    if shape.grpc:
        args.append("--grpc")
        if isinstance(shape.grpc_message, bytes):
            args += ["--grpc-message-hex", shape.grpc_message.hex()]
        elif shape.grpc_message is not None:
            args += ["--grpc-message-file", str(shape.grpc_message)]
    elif shape.http == "2":
        args.append("--http2")
    if shape.http2 and shape.streams_per_connection != 1:
        args += ["--streams-per-connection", str(int(shape.streams_per_connection))]
    return args


class RustDriver:
    """Measures one round with ``netperf-driver http … --json``."""

    name = "rust"

    def __init__(self, binary: Optional[str] = None, runner: Optional[CommandRunner] = None) -> None:
        self.runner: CommandRunner = runner if runner is not None else LocalRunner(binary)

    @property
    def cpus(self) -> Optional[str]:
        """The cores the driver is pinned to (its runner's cpuset), or None when it is not pinned."""
        cpus = getattr(self.runner, "cpus", None)
        return str(cpus) if cpus else None

    def argv(self, url: str, shape: LoadShape) -> list[str]:
        """The command line for ``shape`` (argv[0] is the bare binary name)."""
        if isinstance(shape.grpc, str):
            url = grpc_url(url, shape.grpc)
        args = [
            BINARY_NAME,
            "http",
            url,
            "--connections",
            str(int(shape.connections)),
            "--duration",
            _seconds(shape.duration_s),
            "--warmup",
            _seconds(shape.warmup_s),
            "--timeout",
            _seconds(shape.timeout_s),
            "--interval",
            _seconds(shape.interval_s),
            "--method",
            shape.method,
        ]
        if shape.rate:
            args += ["--rate", repr(float(shape.rate)), "--arrival", shape.arrival]
        if shape.threads:
            args += ["--threads", str(int(shape.threads))]
        for key, value in shape.headers:
            args += ["--header", f"{key}: {value}"]
        if shape.body_size:
            args += ["--body-size", str(int(shape.body_size))]
        if shape.new_connection_per_request:
            args.append("--new-connection-per-request")
        if shape.payload is not None:
            args += ["--payload", str(int(shape.payload))]
        if shape.tls is not None and url.startswith("https://"):
            args += shape.tls.argv()
        args += http2_argv(shape)
        for key, value in sorted(shape.extra.items()):
            flag = "--" + key.replace("_", "-")
            if value is True:
                args.append(flag)
            elif value not in (None, False):
                args += [flag, str(value)]
        return args

    def run(self, url: str, shape: LoadShape) -> RoundResult:
        """Measure ``url``; raises :class:`DriverError` when the driver could not measure."""
        argv = self.argv(url, shape) + ["--json"]
        budget = shape.warmup_s + shape.duration_s + shape.timeout_s + RUN_GRACE_S
        outcome = self.runner.run(argv, budget)
        if outcome.returncode != 0:
            raise DriverError(self._failure(outcome))
        try:
            doc = json.loads(outcome.stdout)
            result = round_from_driver_json(doc)
        except (ValueError, KeyError, TypeError) as exc:
            raise DriverError(f"{BINARY_NAME} on {self.runner.where} printed unusable JSON: {exc}") from exc
        return sent_something(result)

    def version(self) -> str:
        """The driver's version string, e.g. ``0.1.0``."""
        outcome = self.runner.run([BINARY_NAME, "--version"], 30.0)
        if outcome.returncode != 0:
            raise DriverError(self._failure(outcome))
        words = outcome.stdout.split()
        return words[-1] if words else ""

    def _failure(self, outcome: CommandOutcome) -> str:
        lines = [ln.strip() for ln in outcome.stderr.splitlines() if ln.strip()]
        detail = lines[-1] if lines else "(no message)"
        meaning = _EXIT_MEANINGS.get(outcome.returncode, "failed")
        return f"{BINARY_NAME} on {self.runner.where} {meaning} (exit {outcome.returncode}): {detail}"
