"""Finding a Compose implementation and running it with a time limit.

Discovery order (:func:`find_compose`): the ``NETPERF_COMPOSE`` environment variable (a
command line such as ``docker-compose`` or ``docker compose``), then the ``docker compose``
v2 plugin, then ``docker-compose`` v1 (Debian's 1.29 runs on the system Python with its own
docker-py, independent of the environment pytest runs in). Each candidate must answer
``version --short``; the first that does is used.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_netperf.errors import ComposeError, ComposeUnavailable
from pytest_netperf.runtime.process_guard import die_with_parent

#: The environment variable that names the Compose command line to use.
ENV_VAR = "NETPERF_COMPOSE"
#: Seconds ``version --short`` may take (v1 starts a Python interpreter).
VERSION_TIMEOUT_S = 20.0
#: What to install where no Compose implementation is found.
INSTALL_HINT = (
    "install one (`apt-get install docker-compose` for v1, or the docker-compose-plugin / a "
    "`docker-compose` v2 binary on PATH) or set NETPERF_COMPOSE to its command line"
)
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")

Runner = Callable[[Sequence[str], float], "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class Candidate:
    """One command line that may be a Compose implementation, and where it came from."""

    argv: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class ComposeCli:
    """A working Compose command line: ``argv`` plus the version it reported."""

    argv: tuple[str, ...]
    version: str
    source: str

    @property
    def major(self) -> int:
        """1 for docker-compose v1, 2 for Compose v2 (0 when the version did not parse)."""
        parsed = parse_version(self.version)
        return parsed[0] if parsed else 0

    def describe(self) -> str:
        """``docker-compose 1.29.2 (from PATH)``."""
        return f"{' '.join(self.argv)} {self.version} ({self.source})"

    def run(
        self,
        args: Sequence[str],
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``<compose> args``; ComposeError when it does not finish within ``timeout_s``.

        The child gets this process's environment plus ``env``, dies with this process, and
        is killed when the time is up (or when this call is interrupted).
        """
        argv = [*self.argv, *args]
        try:
            return subprocess.run(
                argv,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout_s,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent(signal.SIGTERM),
            )
        except subprocess.TimeoutExpired as exc:
            raise ComposeError(f"`{shlex.join(argv)}` did not finish within {timeout_s:g}s") from exc
        except OSError as exc:
            raise ComposeError(f"cannot run `{shlex.join(argv)}`: {exc}") from exc


def candidates(environ: Mapping[str, str] | None = None) -> list[Candidate]:
    """The command lines to try, in order (only ``NETPERF_COMPOSE`` when it is set)."""
    environ = os.environ if environ is None else environ
    chosen = environ.get(ENV_VAR, "").strip()
    if chosen:
        return [Candidate(tuple(shlex.split(chosen)), f"{ENV_VAR}={chosen!r}")]
    return [
        Candidate(("docker", "compose"), "docker compose plugin"),
        Candidate(("docker-compose",), "docker-compose on PATH"),
    ]


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``1.29.2`` / ``v2.27.0`` / ``Docker Compose version v2.27.0`` -> (major, minor, patch)."""
    match = _VERSION.search(text or "")
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def find_compose(
    environ: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
    run: Runner | None = None,
) -> ComposeCli:
    """The first candidate that answers ``version --short``; ComposeUnavailable saying what was tried."""
    run = run or _run_version
    tried: list[str] = []
    for candidate in candidates(environ):
        if not candidate.argv:
            tried.append(f"{candidate.source}: empty command")
            continue
        if which(candidate.argv[0]) is None:
            tried.append(f"{candidate.source}: `{candidate.argv[0]}` not found on PATH")
            continue
        shown = shlex.join(candidate.argv)
        try:
            done = run([*candidate.argv, "version", "--short"], VERSION_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            tried.append(f"{candidate.source}: `{shown} version --short` failed ({exc})")
            continue
        version = (done.stdout or "").strip().splitlines()[-1:] if done.stdout else []
        if done.returncode != 0 or not version or parse_version(version[0]) is None:
            said = _first_line(done.stderr or done.stdout) or f"exit status {done.returncode}"
            tried.append(f"{candidate.source}: `{shown} version --short` did not report a version ({said})")
            continue
        return ComposeCli(candidate.argv, version[0].strip(), candidate.source)
    raise ComposeUnavailable(f"no Compose implementation found; tried: {'; '.join(tried)}. {INSTALL_HINT}")


def _run_version(argv: Sequence[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), capture_output=True, text=True, errors="replace", timeout=timeout_s, stdin=subprocess.DEVNULL
    )


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""
