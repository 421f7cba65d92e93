"""The Compose command line of one project: its files, name, directory and environment, run with a timeout."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from pytest_netperf.runtime.compose.cli import ComposeCli

__all__ = ["OUTPUT_TAIL_LINES", "ProjectCommands", "tail"]

#: Lines of Compose's own output quoted in an error.
OUTPUT_TAIL_LINES = 40


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
