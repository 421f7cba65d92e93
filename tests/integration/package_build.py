"""Build pytest-netperf's distributions from this checkout and install a wheel into a fresh venv.

For tests of the installed (non-editable) package. :func:`build_wheel` builds the wheel the way
``scripts/package`` tags it (py3-none-<platform>, before the manylinux repair) but from the
source tree, so cargo reuses ``driver/target``: 5-7 s when the driver is already built.
:func:`fresh_venv` makes a venv without system site packages (the checkout's editable install
cannot leak in) and installs the wheel with its dependencies from the package index.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import venv
from collections.abc import Callable
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The index pip installs dependencies from (pip's default unless PIP_INDEX_URL names another).
DEFAULT_INDEX = "https://pypi.org/simple/"


def _run(argv: list[str], what: str, cwd: Path = REPO_ROOT, env: dict[str, str] | None = None) -> str:
    """Run ``argv``; its stdout, or RuntimeError with the end of its output when it fails."""
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        output = (done.stdout + done.stderr)[-4000:]
        raise RuntimeError(f"{what} failed (exit {done.returncode}): {' '.join(argv)}\n{output}")
    return done.stdout


def _only(folder: Path, pattern: str) -> Path:
    """The one file in ``folder`` matching ``pattern``."""
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise RuntimeError(f"expected one {pattern} in {folder}, found {[p.name for p in found]}")
    return found[0]


def build_wheel(destination: Path) -> Path:
    """Build the wheel from the checkout into ``destination`` and return its path.

    ``pip wheel`` with build isolation (setuptools-rust from the index or pip's cache) in the
    source tree, so cargo reuses ``driver/target``; setuptools' own build folder and egg-info go
    to a scratch folder (``DIST_EXTRA_CONFIG``), so no stale ``build/lib`` file of the checkout
    gets into the wheel. The wheel is then retagged ``py3-none-<platform>`` with ``wheel tags``,
    as ``scripts/package`` does: its native part is an executable, not a Python extension.
    """
    destination.mkdir(parents=True, exist_ok=True)
    scratch = destination / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    config = scratch / "setuptools.cfg"
    config.write_text(f"[build]\nbuild_base = {scratch / 'build'}\n\n[egg_info]\negg_base = {scratch}\n")
    env = {**os.environ, "DIST_EXTRA_CONFIG": str(config)}
    argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-w", str(scratch), "."]
    try:
        _run(argv, "pip wheel", env=env)
        wheel = _only(scratch, "pytest_netperf-*.whl")
        name = _run(
            [sys.executable, "-m", "wheel", "tags", "--python-tag", "py3", "--abi-tag", "none", str(wheel)],
            "wheel tags (needs the wheel package: pip install -e .[dev])",
        ).strip()
        retagged = destination / Path(name).name
        (scratch / Path(name).name).replace(retagged)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return retagged


def source_tree(destination: Path) -> Path:
    """Copy the checkout's sources to ``destination``, as a clone with the uncommitted changes has them.

    Tracked and untracked files that .gitignore does not ignore: no build output, and no stale
    ``pytest_netperf.egg-info/SOURCES.txt``, which setuptools would otherwise add to an sdist
    whatever MANIFEST.in says.
    """
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], "git ls-files")
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def build_sdist(destination: Path) -> Path:
    """Build the sdist from a clean copy of the checkout (:func:`source_tree`) into ``destination``."""
    tree = destination / "source"
    shutil.rmtree(tree, ignore_errors=True)
    try:
        source_tree(tree)
        argv = [sys.executable, "-m", "build", "--sdist", "--outdir", str(destination), "."]
        _run(argv, "python -m build --sdist", tree)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    return _only(destination, "pytest_netperf-*.tar.gz")


def index_unreachable(timeout: float = 15) -> str | None:
    """None when pip's package index answers; otherwise why not (a skip reason for tests)."""
    index = os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX
    try:
        with urllib.request.urlopen(index.rstrip("/") + "/pip/", timeout=timeout) as response:
            response.read(1)
    except (urllib.error.URLError, OSError) as exc:
        return f"the package index {index} is unreachable ({exc}); the venv needs the plugin's dependencies from it"
    return None


def fresh_venv(folder: Path, wheel: Path) -> Path:
    """Make a venv in ``folder`` (no system site packages), install ``wheel`` and its dependencies.

    Returns the venv's ``bin/`` folder (``python``, ``netperf``, ``netperf-driver``, ``pytest``).
    """
    venv.EnvBuilder(system_site_packages=False, clear=True, with_pip=True, symlinks=True).create(folder)
    bin_dir = folder / "bin"
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip install {wheel.name} into {folder} failed:\n{(done.stdout + done.stderr)[-4000:]}")
    return bin_dir


def outside_checkout(path: Path) -> Path:
    """``path``, asserted not to be inside this checkout (what a team has is not ours)."""
    assert not path.resolve().is_relative_to(REPO_ROOT), f"{path} is inside the checkout {REPO_ROOT}"
    return path


def built(build: Callable[[Path], Path], destination: Path) -> Path:
    """``build(destination)``, skipped with the reason when the package index is unreachable."""
    try:
        return build(destination)
    except RuntimeError:
        reason = index_unreachable()
        if reason:
            pytest.skip(f"cannot build (setuptools-rust comes from the index): {reason}")
        raise
