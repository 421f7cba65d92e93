"""A cached Debian root filesystem tarball made with debootstrap (the base of local images)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_netperf.errors import NetperfError
from pytest_netperf.images.apt_sources import host_sources, mirror_for_suite

#: Debian packages in the base image: the proxies and the L4 tool, nothing else.
BASE_PACKAGES: tuple[str, ...] = ("nginx-light", "haproxy", "iperf3", "ca-certificates")
SUITE = "bookworm"
#: Paths emptied before packing: package caches and docs are not needed at run time.
PRUNED_PATHS = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man")


class ImageBuildError(NetperfError):
    """Building a local image failed; the message names the step and its output."""


@dataclass(frozen=True)
class RootfsRecipe:
    """What goes into the root filesystem; its hash names the cached tarball."""

    suite: str = SUITE
    mirror: str = ""
    packages: tuple[str, ...] = BASE_PACKAGES
    variant: str = "minbase"

    def digest(self) -> str:
        """Short stable hash of the recipe."""
        text = "|".join([self.suite, self.mirror, self.variant, ",".join(sorted(self.packages))])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def cache_dir() -> Path:
    """``$NETPERF_CACHE_DIR`` or ``~/.cache/pytest-netperf`` (created)."""
    base = os.environ.get("NETPERF_CACHE_DIR") or Path.home() / ".cache" / "pytest-netperf"
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_recipe() -> RootfsRecipe:
    """The base recipe with the mirror taken from this host's apt sources."""
    return RootfsRecipe(mirror=mirror_for_suite(SUITE, host_sources()))


def rootfs_tarball(recipe: RootfsRecipe, progress: Callable[[str], None] = print, force: bool = False) -> Path:
    """Return the cached tarball for ``recipe``, running debootstrap first when absent."""
    target = cache_dir() / f"rootfs-{recipe.suite}-{recipe.digest()}.tar"
    if target.is_file() and not force:
        progress(f"rootfs: cached {target} ({target.stat().st_size / 1e6:.0f} MB)")
        return target
    _require_root_and_debootstrap()
    workdir = Path(tempfile.mkdtemp(prefix="rootfs-", dir=cache_dir()))
    try:
        started = time.monotonic()
        progress(f"rootfs: debootstrap {recipe.variant} {recipe.suite} from {recipe.mirror} ...")
        _run(
            [
                "debootstrap",
                f"--variant={recipe.variant}",
                f"--include={','.join(recipe.packages)}",
                recipe.suite,
                str(workdir / "root"),
                recipe.mirror,
            ],
            "debootstrap",
        )
        progress(f"rootfs: debootstrap done in {time.monotonic() - started:.1f}s")
        _prune(workdir / "root")
        partial = workdir / "rootfs.tar"
        _run(["tar", "--numeric-owner", "--xattrs", "-C", str(workdir / "root"), "-cf", str(partial), "."], "tar")
        os.replace(partial, target)
        progress(f"rootfs: packed {target} ({target.stat().st_size / 1e6:.0f} MB)")
        return target
    finally:
        _remove_tree(workdir)


def _require_root_and_debootstrap() -> None:
    if os.geteuid() != 0:
        raise ImageBuildError("debootstrap needs root: run `netperf images build` as root")
    if shutil.which("debootstrap") is None:
        raise ImageBuildError("debootstrap is not installed: apt-get install debootstrap")


def _run(argv: list[str], step: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise ImageBuildError(f"{step} failed (exit {done.returncode}):\n{tail}")


def _prune(root: Path) -> None:
    for relative in PRUNED_PATHS:
        folder = root / relative
        if folder.is_dir():
            for child in folder.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                elif child.name != "lock":
                    child.unlink()


def _remove_tree(path: Path) -> None:
    """Unmount anything debootstrap left mounted below ``path``, then delete it."""
    prefix = str(path.resolve()) + "/"
    with open("/proc/mounts") as mounts:
        points = [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    shutil.rmtree(path, ignore_errors=True)
