"""The built distributions, as a team installs them: the wheel carries the driver binary and
every package file, installs into a fresh venv outside this checkout and works from there
(console scripts, the pytest plugin, the driver lookup of ``netperf images build``); the sdist
carries the driver's Rust sources with their lock file. Real builds, no Docker.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
from package_build import REPO_ROOT, build_sdist
from packaging.utils import parse_wheel_filename

from conftest import built, outside_checkout
from pytest_netperf.images.inputs import BOOKWORM_GLIBC, ELF_MAGIC
from pytest_netperf.version import __version__

PACKAGE = REPO_ROOT / "pytest_netperf"
DRIVER_IN_WHEEL = f"pytest_netperf-{__version__}.data/scripts/netperf-driver"


def _package_files() -> set[str]:
    """Every file of the package in the checkout (``pytest_netperf/...``), caches excluded."""
    return {
        path.relative_to(REPO_ROOT).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty working directory outside the checkout (no conftest.py, no pyproject.toml)."""
    return outside_checkout(tmp_path_factory.mktemp("elsewhere"))


def run_in_venv(venv_bin: Path, cwd: Path, *argv: str) -> str:
    """Run a command of the venv in ``cwd`` without this process's PYTHONPATH or driver overrides."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "NETPERF_DRIVER", "NETPERF_DRIVER_BINARY")
    env = {key: value for key, value in os.environ.items() if key not in dropped}
    env["PATH"] = f"{venv_bin}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        [str(venv_bin / argv[0]), *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_wheel_is_tagged_for_this_platform_and_any_python3(wheel: Path):
    name, version, _, tags = parse_wheel_filename(wheel.name)
    assert (name, str(version)) == ("pytest-netperf", __version__)
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert {(tag.interpreter, tag.abi, tag.platform) for tag in tags} == {("py3", "none", platform)}
    with zipfile.ZipFile(wheel) as archive:
        assert "Root-Is-Purelib: false" in archive.read(f"pytest_netperf-{__version__}.dist-info/WHEEL").decode()


def test_wheel_holds_the_driver_binary_and_every_package_file(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert DRIVER_IN_WHEEL in names
        driver = archive.getinfo(DRIVER_IN_WHEEL)
        assert archive.read(DRIVER_IN_WHEEL).startswith(ELF_MAGIC)
        assert (driver.external_attr >> 16) & 0o111, "the driver is not executable in the wheel"
        entry_points = archive.read(f"pytest_netperf-{__version__}.dist-info/entry_points.txt").decode()
    in_wheel = {name for name in names if name.startswith("pytest_netperf/")}
    checkout = _package_files()
    assert not checkout - in_wheel, f"package files not in the wheel: {sorted(checkout - in_wheel)}"
    assert not in_wheel - checkout, f"files in the wheel that the checkout no longer has: {sorted(in_wheel - checkout)}"
    assert re.search(r"^\[pytest11\]\nnetperf = pytest_netperf\.plugin$", entry_points, re.M)
    assert re.search(r"^netperf = pytest_netperf\.cli:main$", entry_points, re.M)


def test_wheel_binary_runs_on_bookworm_images(wheel: Path):
    """auditwheel's manylinux tag for the binary: its glibc must not exceed the images' (bookworm)."""
    pytest.importorskip("auditwheel", reason="auditwheel is not installed (pip install -e .[dev])")
    done = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", str(wheel)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = " ".join(done.stdout.split())
    match = re.search(r'is consistent with the following platform tag: "manylinux_(\d+)_(\d+)_\w+"', text)
    assert match, text
    assert (int(match.group(1)), int(match.group(2))) <= BOOKWORM_GLIBC, text


def test_installed_console_scripts_report_the_version(venv_bin: Path, elsewhere: Path):
    assert run_in_venv(venv_bin, elsewhere, "netperf", "--version").strip() == f"pytest-netperf {__version__}"
    assert run_in_venv(venv_bin, elsewhere, "netperf-driver", "--version").strip() == f"netperf-driver {__version__}"


def test_package_imports_from_the_venv(venv_bin: Path, elsewhere: Path):
    printed = run_in_venv(venv_bin, elsewhere, "python", "-c", "import pytest_netperf; print(pytest_netperf.__file__)")
    module = Path(printed.strip())
    assert module.is_relative_to(venv_bin.parent), f"imported from {module}, not from the venv {venv_bin.parent}"
    assert not module.resolve().is_relative_to(REPO_ROOT)


def test_images_find_the_venvs_driver_and_sources(venv_bin: Path, elsewhere: Path):
    """What ``netperf images build`` takes from the installation: the driver binary (echo image)
    and the package's *.py sources (locust image), both from the venv."""
    code = "from pytest_netperf.images.inputs import driver_binary; print(driver_binary())"
    driver = Path(run_in_venv(venv_bin, elsewhere, "python", "-c", code).strip())
    assert driver == venv_bin / "netperf-driver"
    code = (
        "from pytest_netperf.images.locust_inputs import PACKAGE_ROOT, package_sources\n"
        "print(PACKAGE_ROOT)\n"
        "for path in package_sources(): print(path.relative_to(PACKAGE_ROOT).as_posix())"
    )
    root, *sources = run_in_venv(venv_bin, elsewhere, "python", "-c", code).splitlines()
    assert Path(root).is_relative_to(venv_bin.parent)
    checkout = {name.removeprefix("pytest_netperf/") for name in _package_files() if name.endswith(".py")}
    assert set(sources) == checkout


def test_pytest_in_the_venv_loads_the_plugin(venv_bin: Path, elsewhere: Path):
    assert "--netperf-base=" in run_in_venv(venv_bin, elsewhere, "pytest", "--help")


@pytest.fixture(scope="module")
def sdist_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[set[str], Path]:
    """The sdist's member names (without the top folder) and where it is unpacked."""
    folder = outside_checkout(tmp_path_factory.mktemp("sdist"))
    sdist = built(build_sdist, folder / "dist")
    top = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.removeprefix(f"{top}/") for name in archive.getnames()}
        archive.extractall(folder / "unpacked", filter="data")
    return names, folder / "unpacked" / top


def test_sdist_holds_the_driver_sources_and_lock_file(sdist_tree: tuple[set[str], Path]):
    names, _ = sdist_tree
    wanted = {"pyproject.toml", "MANIFEST.in", "driver/Cargo.toml", "driver/Cargo.lock"}
    wanted |= {path.relative_to(REPO_ROOT).as_posix() for path in (REPO_ROOT / "driver" / "src").rglob("*.rs")}
    wanted |= {name for name in _package_files() if name.endswith(".py")}
    assert not wanted - names, f"missing from the sdist: {sorted(wanted - names)}"
    assert not [name for name in names if name.startswith("driver/target")], "the sdist carries build output"


def test_sdist_lock_file_matches_the_crate(sdist_tree: tuple[set[str], Path]):
    """``--locked``: cargo fails when Cargo.lock is missing or does not match Cargo.toml (the
    sdist's install runs ``cargo build --locked`` through setuptools-rust)."""
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo is not on PATH: cannot check the sdist's Cargo.lock against its Cargo.toml")
    _, unpacked = sdist_tree
    done = subprocess.run(
        [cargo, "metadata", "--locked", "--offline", "--format-version", "1"],
        cwd=unpacked / "driver",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
