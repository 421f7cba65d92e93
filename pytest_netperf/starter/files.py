"""Which files ``netperf init`` writes into a repository, and writing them all or none.

Nothing is overwritten unless asked (``force``); every refusal is checked before the first
file is written, so a refused run leaves the repository as it was. A pytest.ini that exists
gets the missing ``netperf_*`` keys merged into its ``[pytest]`` section (with ``force``),
and a repository whose pytest settings live elsewhere (pyproject.toml, tox.ini, setup.cfg)
gets no pytest.ini at all (one would take precedence over its settings): the keys to add
are printed instead.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_netperf.atomic_file import write_text_atomic
from pytest_netperf.starter import render
from pytest_netperf.starter.survey import InitError

#: The CI systems ``netperf init`` writes jobs for: where, and what (GitHub: the gates with a
#: read-only token, and the workflow that posts their report as the pull request's comment).
CI_FILES: dict[str, tuple[tuple[str, Callable[[render.StarterPlan], str]], ...]] = {
    "github": (
        (render.GITHUB_WORKFLOW_FILE, render.github_workflow),
        (render.GITHUB_COMMENT_WORKFLOW_FILE, render.github_comment_workflow),
    ),
    "gitlab": (("ci/netperf.gitlab-ci.yml", render.gitlab_job),),
}


def ci_paths(name: str) -> tuple[str, ...]:
    """The files ``netperf init`` writes for the CI system ``name``."""
    return tuple(path for path, _ in CI_FILES[name])


_PYPROJECT_SECTION = re.compile(r"(?m)^\s*\[tool\.pytest\.ini_options\]")


@dataclass(frozen=True)
class PlannedFile:
    """One file to write: its path under the root, its text, and what writing it does."""

    path: str
    text: str
    #: "create", "replace" (an existing file, with force) or "merge" (keys added to pytest.ini)
    action: str = "create"


@dataclass(frozen=True)
class FilePlan:
    """Every file of one ``netperf init`` run, and what to tell the user besides."""

    files: tuple[PlannedFile, ...]
    notes: tuple[str, ...] = ()


def other_pytest_config(root: Path) -> str:
    """The file that holds the repository's pytest settings other than pytest.ini, or ""."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and _PYPROJECT_SECTION.search(pyproject.read_text(encoding="utf-8", errors="replace")):
        return "pyproject.toml"
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        path = root / name
        if path.is_file():
            parser = configparser.ConfigParser(interpolation=None)
            try:
                parser.read(path, encoding="utf-8")
            except configparser.Error as exc:
                raise InitError(f"{path} does not parse ({exc}); fix it before netperf init") from exc
            if parser.has_section(section):
                return name
    return ""


def plan_files(root: Path, plan: render.StarterPlan, ci: Sequence[str], force: bool) -> FilePlan:
    """The files to write for ``plan`` under ``root``; InitError naming every file that exists
    and would be overwritten without ``force``."""
    wanted = [(plan.test_module, render.test_module(plan))]
    wanted += [(path, renderer(plan)) for name in ci for path, renderer in CI_FILES[name]]
    planned: list[PlannedFile] = []
    existing: list[str] = []
    for path, text in wanted:
        if (root / path).exists():
            existing.append(path)
        planned.append(PlannedFile(path, text, "replace" if (root / path).exists() else "create"))
    notes: list[str] = []
    settings = render.ini_settings()
    ini = root / "pytest.ini"
    elsewhere = other_pytest_config(root)
    if ini.is_file():
        merged = render.merged_ini(ini.read_text(encoding="utf-8"), settings)
        if merged != ini.read_text(encoding="utf-8"):
            existing.append("pytest.ini (its [pytest] section would gain the netperf_* keys)")
            planned.append(PlannedFile("pytest.ini", merged, "merge"))
    elif elsewhere:
        keys = "".join(f"\n  {key} = {value}" for key, value in settings.items())
        notes.append(f"pytest reads its settings from {elsewhere}: add these to its pytest section:{keys}")
    else:
        planned.append(PlannedFile("pytest.ini", render.ini_file(settings)))
    if existing and not force:
        raise InitError(
            "netperf init would overwrite " + ", ".join(existing) + "; nothing was written "
            "(pass --force to replace them, or move them away first)"
        )
    if "github" in ci:
        gates, comment = ci_paths("github")
        notes.append(
            f"GitHub: {gates} runs the gates with a read-only token (fork pull requests too) and keeps the "
            f"reports as the artifact `{render.ARTIFACT}`; {comment} posts them as one pull-request comment, "
            "edited on each run. GitHub starts it only once it is on the default branch: merge both there first. "
            f"The label {render.ACCEPT_LABEL} on a pull request accepts its regressions (ACCEPTED, not FAIL)"
        )
    if "gitlab" in ci:
        notes.append(f"GitLab: add `include: [{{local: {ci_paths('gitlab')[0]}}}]` to .gitlab-ci.yml")
    return FilePlan(tuple(planned), tuple(notes))


def write_files(root: Path, plan: FilePlan) -> None:
    """Write every planned file (each atomically) under ``root``."""
    for planned in plan.files:
        write_text_atomic(root / planned.path, planned.text)
