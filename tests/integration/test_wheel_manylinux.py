"""The manylinux2014 x86_64 wheel of ``scripts/package``: the driver cross-linked with zig against
glibc 2.17 (cargo-zigbuild through ``scripts/zig-cargo``), tagged
``py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64``; the glibc guard
(``scripts/wheel_glibc_guard.py``) passes it and fails binaries linked against this host's glibc
(the venv's host-built ``netperf-driver``, a gcc-built program); and the wheel's driver runs in a
Debian 11 (bullseye, glibc 2.31) root filesystem, where the host-built one does not.

Bullseye's python3 is 3.9, older than the package's ``requires-python >= 3.10``: pip there
refuses the wheel for that reason alone (its platform tag fits glibc 2.31), installs it when
told to ignore it, and the installed ``netperf-driver`` runs; the package's Python code needs
3.10, which bullseye does not have. Real builds and programs, no Docker; the chroot needs root and
debootstrap (``scripts/setup``), the rootfs tarball is cached like the images' base
(``pytest_netperf.images.rootfs``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest
from package_build import REPO_ROOT, index_unreachable, outside_checkout
from packaging.utils import parse_wheel_filename

from pytest_netperf.images.inputs import ELF_MAGIC
from pytest_netperf.images.rootfs import ImageBuildError, RootfsRecipe, rootfs_tarball
from pytest_netperf.version import __version__

TARGET = "x86_64-unknown-linux-gnu.2.17"
PLAT = "manylinux_2_17_x86_64"
WHEEL_TAG = "manylinux_2_17_x86_64.manylinux2014_x86_64"
GUARD = REPO_ROOT / "scripts" / "wheel_glibc_guard.py"
DRIVER_IN_WHEEL = f"pytest_netperf-{__version__}.data/scripts/netperf-driver"
#: concurrent: builds and runs programs, measures nothing: scripts/test runs it on two workers
#: beside the counted gates
pytestmark = pytest.mark.concurrent
BULLSEYE_MIRROR = "http://deb.debian.org/debian"
#: bullseye's python3 and pip: pip judges the wheel's tags on glibc 2.31 (python3 is too old
#: for the package, so only the installed driver runs).
BULLSEYE = RootfsRecipe(
    suite="bullseye", mirror=BULLSEYE_MIRROR, packages=("python3", "python3-pip"), variant="minbase"
)


def _run(argv: list[str], cwd: Path = REPO_ROOT, env: dict[str, str] | None = None, timeout: float = 1800):
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (
        f"{' '.join(map(str, done.args))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


def _host_glibc() -> tuple[int, int] | None:
    name = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else ""
    if not name or not name.startswith("glibc "):
        return None
    major, minor = name.split()[1].split(".")[:2]
    return int(major), int(minor)


def _skip_unless_host_glibc_2_34():
    glibc = _host_glibc()
    if glibc is None or glibc < (2, 34):
        pytest.skip(f"this host's glibc is {glibc}: a binary linked here needs GLIBC_2.34 only on glibc >= 2.34")


@pytest.fixture(scope="module")
def manylinux_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel as ``scripts/package`` builds it, but from the source tree (cargo reuses
    ``driver/target/x86_64-unknown-linux-gnu``): setuptools-rust with CARGO=scripts/zig-cargo and
    the .2.17 target, ``wheel tags`` py3-none, ``auditwheel repair --plat manylinux_2_17_x86_64``."""
    for module in ("ziglang", "auditwheel", "wheel", "elftools"):
        pytest.importorskip(module, reason=f"{module} is not installed (scripts/package installs it with pip)")
    zigbuild = Path(sysconfig.get_path("scripts")) / "cargo-zigbuild"
    if not zigbuild.is_file() and shutil.which("cargo-zigbuild") is None:
        pytest.skip("cargo-zigbuild is not installed (pip install cargo-zigbuild; scripts/package installs it)")
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not on PATH")
    folder = outside_checkout(tmp_path_factory.mktemp("manylinux"))
    scratch = folder / "scratch"
    scratch.mkdir()
    config = scratch / "setuptools.cfg"
    config.write_text(f"[build]\nbuild_base = {scratch / 'build'}\n\n[egg_info]\negg_base = {scratch}\n")
    env = {
        **os.environ,
        "DIST_EXTRA_CONFIG": str(config),
        "CARGO": str(REPO_ROOT / "scripts" / "zig-cargo"),
        "CARGO_BUILD_TARGET": TARGET,
        "CARGO_ZIGBUILD_PYTHON_PATH": sys.executable,
        "PATH": f"{sysconfig.get_path('scripts')}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-w", str(scratch), "."]
    done = _run(argv, env=env)
    if done.returncode != 0 and index_unreachable():
        pytest.skip(f"cannot build (setuptools-rust comes from the index): {index_unreachable()}")
    _ok(done)
    (built,) = scratch.glob("pytest_netperf-*.whl")
    tags = [sys.executable, "-m", "wheel", "tags", "--python-tag", "py3", "--abi-tag", "none", "--remove", str(built)]
    retagged = scratch / _ok(_run(tags)).strip()
    repair = [sys.executable, "-m", "auditwheel", "repair", "--plat", PLAT, "--wheel-dir", str(folder), str(retagged)]
    _ok(_run(repair, env=env))
    shutil.rmtree(scratch)
    (wheel,) = folder.glob("pytest_netperf-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel_driver(manylinux_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel's netperf-driver, unpacked (mode 0755)."""
    target = outside_checkout(tmp_path_factory.mktemp("wheel-driver")) / "netperf-driver"
    with zipfile.ZipFile(manylinux_wheel) as archive:
        target.write_bytes(archive.read(DRIVER_IN_WHEEL))
    target.chmod(0o755)
    return target


@pytest.fixture(scope="module")
def host_driver() -> Path:
    """The venv's netperf-driver, built by ``pip install -e .`` with cargo against this host's glibc."""
    _skip_unless_host_glibc_2_34()
    path = Path(sysconfig.get_path("scripts")) / "netperf-driver"
    if not path.is_file():
        pytest.skip(f"no host-built netperf-driver at {path} (pip install -e .)")
    return path


def test_the_wheel_is_py3_none_manylinux2014_x86_64(manylinux_wheel: Path):
    name, version, _, tags = parse_wheel_filename(manylinux_wheel.name)
    assert (name, str(version)) == ("pytest-netperf", __version__)
    assert {str(tag) for tag in tags} == {"py3-none-manylinux_2_17_x86_64", "py3-none-manylinux2014_x86_64"}
    with zipfile.ZipFile(manylinux_wheel) as archive:
        assert archive.read(DRIVER_IN_WHEEL).startswith(ELF_MAGIC)
        assert (archive.getinfo(DRIVER_IN_WHEEL).external_attr >> 16) & 0o111
        libs = [n for n in archive.namelist() if n.startswith("pytest_netperf.libs/")]
    assert libs == [], f"auditwheel grafted libraries into the wheel: {libs}"


def test_the_guard_passes_the_zig_built_wheel(manylinux_wheel: Path):
    out = _ok(_run([sys.executable, str(GUARD), str(manylinux_wheel)]))
    assert f"{DRIVER_IN_WHEEL}: needs glibc 2." in out
    assert "<= 2.17 (manylinux2014_x86_64.manylinux_2_17_x86_64): ok" in out  # auditwheel's order


def test_the_guard_fails_the_host_built_driver(host_driver: Path):
    done = _run([sys.executable, str(GUARD), "--binary", str(host_driver), WHEEL_TAG])
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{host_driver} needs glibc 2." in done.stderr
    assert "__libc_start_main@GLIBC_2.34" in done.stderr
    assert f"but the tag {WHEEL_TAG} allows glibc 2.17 at most" in done.stderr


def test_the_guard_fails_a_gcc_built_program(tmp_path: Path):
    _skip_unless_host_glibc_2_34()
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not on PATH")
    (tmp_path / "hello.c").write_text('#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n')
    _ok(_run([gcc, "-O2", "-o", str(tmp_path / "hello"), str(tmp_path / "hello.c")], cwd=tmp_path))
    done = _run([sys.executable, str(GUARD), "--binary", str(tmp_path / "hello"), WHEEL_TAG])
    assert done.returncode == 1, done.stdout + done.stderr
    assert "needs glibc 2.34 for __libc_start_main@GLIBC_2.34 from libc.so.6" in done.stderr
    assert WHEEL_TAG in done.stderr
    # the same program fits a tag as new as its glibc
    assert "ok" in _ok(_run([sys.executable, str(GUARD), "--binary", str(tmp_path / "hello"), "manylinux_2_34_x86_64"]))


def _mirror_unreachable() -> str | None:
    try:
        with urllib.request.urlopen(f"{BULLSEYE_MIRROR}/dists/bullseye/Release", timeout=20) as response:
            response.read(1)
    except (urllib.error.URLError, OSError) as exc:
        return f"the Debian mirror {BULLSEYE_MIRROR} is unreachable ({exc}); debootstrap needs it"
    return None


@pytest.fixture(scope="module")
def bullseye_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bullseye minbase root filesystem (cached tarball, unpacked here)."""
    if os.geteuid() != 0:
        pytest.skip("debootstrap and chroot need root")
    if shutil.which("debootstrap") is None:
        pytest.skip("debootstrap is not installed (scripts/setup installs it: apt-get install debootstrap)")
    if shutil.which("chroot") is None:
        pytest.skip("chroot is not on PATH")
    try:
        tarball = rootfs_tarball(BULLSEYE, progress=lambda line: print(line, file=sys.stderr))
    except ImageBuildError:
        reason = _mirror_unreachable()
        if reason:
            pytest.skip(reason)
        raise
    root = outside_checkout(tmp_path_factory.mktemp("bullseye")) / "root"
    root.mkdir()
    _ok(_run(["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-xf", str(tarball)], timeout=600))
    return root


def _chroot(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``argv`` run inside ``root`` (bullseye's PATH, nothing of this host's environment)."""
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"
    return _run([chroot, str(root), *argv], env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, timeout=60)


def _in_chroot(root: Path, binary: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    inside = root / "opt" / binary.parent.name / binary.name
    inside.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, inside)
    return _chroot(root, f"/{inside.relative_to(root)}", *argv)


def test_bullseye_has_glibc_2_31_and_a_python_too_old_for_the_package(bullseye_root: Path):
    libc = _ok(_chroot(bullseye_root, "/lib/x86_64-linux-gnu/libc.so.6"))
    assert "release version 2.31" in libc, libc
    python = _ok(_chroot(bullseye_root, "python3", "--version"))
    assert python.startswith("Python 3.9."), python  # < requires-python 3.10: only the driver runs there


def test_the_wheels_driver_runs_on_bullseye(bullseye_root: Path, wheel_driver: Path):
    done = _in_chroot(bullseye_root, wheel_driver, "--version")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == f"netperf-driver {__version__}"


def test_the_host_built_driver_does_not_run_on_bullseye(bullseye_root: Path, host_driver: Path):
    """The control: the chroot really has the old glibc, the host-built binary cannot load there."""
    done = _in_chroot(bullseye_root, host_driver, "--version")
    assert done.returncode != 0, done.stdout
    assert "version `GLIBC_2.3" in done.stderr and "not found" in done.stderr, done.stderr


def test_pip_on_bullseye_takes_the_wheel_for_its_platform_and_its_driver_runs(
    bullseye_root: Path, manylinux_wheel: Path
):
    inside = bullseye_root / "opt" / "wheels" / manylinux_wheel.name
    inside.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(manylinux_wheel, inside)
    wheel = f"/{inside.relative_to(bullseye_root)}"
    pip = ("python3", "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check")
    refused = _chroot(bullseye_root, *pip, wheel)
    assert refused.returncode != 0, refused.stdout
    assert "requires a different Python" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert "is not a supported wheel on this platform" not in refused.stdout + refused.stderr
    _ok(_chroot(bullseye_root, *pip, "--ignore-requires-python", wheel))
    done = _chroot(bullseye_root, "/usr/local/bin/netperf-driver", "--version")  # where pip put it
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == f"netperf-driver {__version__}"
    assert "flamegraph" in _ok(_chroot(bullseye_root, "/usr/local/bin/netperf-driver", "--help"))
