"""Command lines and environment of the Locust processes (pure, unit-tested)."""

from __future__ import annotations

import json
import math
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence
from urllib.parse import urlsplit

from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.locust import LISTENER_FILE
from pytest_netperf.errors import DriverError

#: Seconds the master waits for the workers' window reports.
REPORT_TIMEOUT_S = 15.0
_WILDCARD_HOSTS = {"0.0.0.0", "::", "*", ""}


@dataclass(frozen=True)
class Topology:
    """Where the Locust processes run and how workers reach the master."""

    python: str
    files: tuple[Path, ...]
    local_workers: int = 0
    remote_workers: int = 0
    master_host: str = "127.0.0.1"
    expect_workers_timeout_s: float = 20.0

    @property
    def distributed(self) -> bool:
        """True when a master and workers run instead of one process."""
        return self.local_workers + self.remote_workers > 0

    @property
    def bind_host(self) -> str:
        """The address the master listens on."""
        return "0.0.0.0" if self.master_host in _WILDCARD_HOSTS else self.master_host

    @property
    def connect_host(self) -> str:
        """The address local workers connect to."""
        return "127.0.0.1" if self.master_host in _WILDCARD_HOSTS else self.master_host


def flags(options: Mapping[str, object]) -> list[str]:
    """``{"-u": 3, "--host": "h"}`` -> ``["-u", "3", "--host", "h"]``."""
    argv: list[str] = []
    for name, value in options.items():
        argv += [name, str(value)]
    return argv


def split_url(url: str) -> tuple[str, str]:
    """``http://h:p/a?b`` -> (``http://h:p``, ``/a?b``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise DriverError(f"not an http(s) URL: {url!r}")
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return f"{parts.scheme}://{parts.netloc}", path


def _locust(python: str, files: Sequence[Path]) -> list[str]:
    return [python, "-m", "locust", "-f", ",".join(str(f) for f in files)]


def main_argv(
    topology: Topology,
    url: str,
    shape: LoadShape,
    output: Path,
    port: int,
    run_time_s: float,
    default_user: bool,
    user_class: Optional[str],
) -> list[str]:
    """The single process (or the master) of a round."""
    users = shape.connections
    argv = _locust(topology.python, topology.files) + ["--headless", "--only-summary"]
    argv += flags(
        {
            "--loglevel": "INFO",
            "-u": users,
            "-r": max(users * 10, 100),
            "--host": target_host(url, default_user),
            "--run-time": f"{math.ceil(run_time_s)}s",
            "--exit-code-on-error": 0,
            "--netperf-out": output,
            "--netperf-warmup": shape.warmup_s,
            "--netperf-duration": shape.duration_s,
            "--netperf-interval": shape.interval_s,
            "--netperf-users": users,
            "--netperf-rate": shape.rate or 0.0,
            "--netperf-arrival": shape.arrival,
            "--netperf-report-timeout": REPORT_TIMEOUT_S,
        }
    )
    if default_user:
        argv += default_user_options(url, shape)
    if topology.distributed:
        argv += ["--master"]
        argv += flags(
            {
                "--master-bind-host": topology.bind_host,
                "--master-bind-port": port,
                "--expect-workers": topology.local_workers + topology.remote_workers,
                "--expect-workers-max-wait": max(math.ceil(topology.expect_workers_timeout_s), 1),
            }
        )
    if not default_user and user_class:
        argv.append(user_class)
    return argv


def tls_settings(shape: LoadShape) -> str:
    """The default user's ``--netperf-tls`` value: a JSON object of the round's TLS options
    (``ca``, ``insecure``, ``cert``, ``key``, ``version``; paths made absolute), ``{}`` for none."""
    tls = shape.tls
    if tls is None:
        return "{}"
    paths = {name: str(Path(value).resolve()) for name in ("ca", "cert", "key") if (value := getattr(tls, name))}
    settings: dict[str, object] = {**paths, "insecure": tls.insecure}
    if tls.version:
        settings["version"] = tls.version
    return json.dumps(settings, sort_keys=True)


def default_user_options(url: str, shape: LoadShape) -> list[str]:
    """Options of the default user file (its request: path, method, headers, body, timeout, TLS)."""
    return flags(
        {
            "--netperf-path": split_url(url)[1],
            "--netperf-method": shape.method,
            "--netperf-headers": json.dumps(dict(shape.headers)),
            "--netperf-body-size": shape.body_size,
            "--netperf-timeout": shape.timeout_s,
            "--netperf-tls": tls_settings(shape),
        }
    )


def worker_argv(topology: Topology, port: int) -> list[str]:
    """One local worker of a distributed round."""
    argv = _locust(topology.python, topology.files) + ["--worker"]
    return argv + flags({"--master-host": topology.connect_host, "--master-port": port, "--loglevel": "INFO"})


def remote_worker_argv(user_file: Path, master_host: str, master_port: int) -> list[str]:
    """The command a remote machine runs to join a master (see docs/locust.md)."""
    argv = _locust("python", (user_file, LISTENER_FILE)) + ["--worker"]
    return argv + flags({"--master-host": master_host, "--master-port": master_port})


def session_master_argv(
    python: str,
    files: Sequence[Path],
    bind_host: str,
    port: int,
    control: Path,
    web_port: int,
    user_class: Optional[str],
) -> list[str]:
    """A master that serves rounds on the Unix socket ``control`` until asked to quit.

    Not headless (a headless master starts the test at once and quits when its last worker
    leaves): Locust's web UI listens on ``127.0.0.1:web_port`` and is not used.
    """
    argv = _locust(python, files) + ["--master"]
    argv += flags(
        {
            "--master-bind-host": bind_host,
            "--master-bind-port": port,
            "--web-host": "127.0.0.1",
            "--web-port": web_port,
            "--loglevel": "INFO",
            "--netperf-control": control,
        }
    )
    if user_class:
        argv.append(user_class)
    return argv


def round_options(shape: LoadShape, url: str, default_user: bool) -> dict[str, object]:
    """The ``--netperf-*`` values of one round of a session master (they travel to the workers)."""
    options: dict[str, object] = {
        "netperf_warmup": shape.warmup_s,
        "netperf_duration": shape.duration_s,
        "netperf_interval": shape.interval_s,
        "netperf_users": shape.connections,
        "netperf_rate": shape.rate or 0.0,
        "netperf_arrival": shape.arrival,
        "netperf_report_timeout": REPORT_TIMEOUT_S,
    }
    if default_user:
        options.update(
            {
                "netperf_path": split_url(url)[1],
                "netperf_method": shape.method,
                "netperf_headers": json.dumps(dict(shape.headers)),
                "netperf_body_size": shape.body_size,
                "netperf_timeout": shape.timeout_s,
                "netperf_tls": tls_settings(shape),
            }
        )
    return options


def target_host(url: str, default_user: bool) -> str:
    """Locust's ``--host`` for ``url``: the origin for the default user, else the URL itself."""
    return split_url(url)[0] if default_user else url.rstrip("/")


def list_argv(python: str, files: Sequence[Path]) -> list[str]:
    """``locust --list``: the user classes the files define."""
    return _locust(python, files) + ["--list"]


def free_port(host: str) -> int:
    """A TCP port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def locust_env(base: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The environment of the Locust processes: ours, with this package importable."""
    env = dict(os.environ if base is None else base)
    package_root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return env
