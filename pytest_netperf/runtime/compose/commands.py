"""The Compose command line of one project: its files, name, directory and environment, run with a timeout."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_netperf.runtime.compose.cli import ComposeCli

__all__ = [
    "OUTPUT_TAIL_LINES",
    "ComposeVariableWarning",
    "ProjectCommands",
    "tail",
    "unset_variables",
    "unset_variables_message",
]

#: Lines of Compose's own output quoted in an error.
OUTPUT_TAIL_LINES = 40
#: Compose's warning for an unset ``${VAR}``: v1 ``The FOO variable is not set``, v2 ``The \"FOO\" variable …``.
_UNSET = re.compile(r'The \\?"?([A-Za-z_][A-Za-z0-9_]*)\\?"? variable is not set')


class ComposeVariableWarning(UserWarning):
    """A Compose file uses a variable that is not set: Compose substituted a blank string."""


@dataclass
class ProjectCommands:
    """The arguments every Compose command of one project shares."""

    cli: ComposeCli
    file: Path
    override: Path | None
    name: str
    project_dir: Path | None
    env: dict[str, str] = field(default_factory=dict)
    #: The file Compose runs instead of ``file`` (its normalised copy without host ports);
    #: ``file`` stays the team's, for every message.
    run_file: Path | None = None

    def args(self, *command: str) -> list[str]:
        main = self.run_file or self.file
        files = ["-f", str(main)] + (["-f", str(self.override)] if self.override else [])
        directory = ["--project-directory", str(self.project_dir)] if self.project_dir else []
        return [*files, "-p", self.name, *directory, *command]

    def run(self, *command: str, timeout_s: float) -> tuple[int, str]:
        """(exit status, the last lines of stdout and stderr) of ``<compose> <project args> command``."""
        done = self.execute(*command, timeout_s=timeout_s)
        return done.returncode, tail((done.stdout or "") + (done.stderr or ""), OUTPUT_TAIL_LINES)

    def execute(self, *command: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
        """``<compose> <project args> command``, its output kept whole."""
        return self.cli.run(self.args(*command), timeout_s, env=self.env)


def tail(text: str, lines: int) -> str:
    """The last ``lines`` non-blank lines of ``text``."""
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def unset_variables(output: str) -> list[str]:
    """The variables Compose's output says are not set, each once, in order."""
    return list(dict.fromkeys(match.group(1) for match in _UNSET.finditer(output)))


def unset_variables_message(file: Path, names: Sequence[str]) -> str:
    """The warning for ``names``, unset in ``file``: what Compose did and the ways to set them."""
    shown = ", ".join(names)
    return (
        f"Compose file {file}: variable(s) {shown} not set, so Compose substituted a blank string "
        f"(an image tag, a port or an upstream may be empty); set them in the environment, in the "
        f"project's .env file, or with netperf_compose(..., env={{{names[0]!r}: ...}})"
    )
