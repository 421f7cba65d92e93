"""The files of the Locust worker image: a wheelhouse and this package's Python sources.

The image runs ``netperf locust-worker`` under the bookworm ``python3`` (3.11). Locust and
the two libraries the netperf listener needs are downloaded as binary wheels for CPython
3.11 on bookworm's glibc (``pip download``, PyPI only, cached), pinned to the versions
installed here so master and workers speak the same Locust protocol. The package goes in
as source (``*.py`` only): the worker imports no dependency of the plugin but these.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from pytest_netperf.images.inputs import _platform_flags
from pytest_netperf.images.rootfs import ImageBuildError, cache_dir

#: Distributions the worker needs, pinned to this interpreter's versions.
WORKER_DISTRIBUTIONS: tuple[str, ...] = ("locust", "hdrhistogram", "psutil")
#: The Python of the image (bookworm's python3).
IMAGE_PYTHON_VERSION = "3.11"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
#: The ``netperf`` command inside the image (the package is on PYTHONPATH there).
NETPERF_SCRIPT = "#!/opt/netperf/bin/python\nimport sys\nfrom pytest_netperf.cli import main\nsys.exit(main())\n"


def pinned_requirements() -> list[str]:
    """``name==version`` of every worker distribution as installed for this interpreter."""
    pins = []
    for name in WORKER_DISTRIBUTIONS:
        try:
            pins.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError as exc:
            raise ImageBuildError(f"locust image: {name} is not installed here, so its version is unknown") from exc
    return pins


def package_sources(root: Path = PACKAGE_ROOT) -> list[Path]:
    """Every ``*.py`` file of the package, sorted (what goes into the image)."""
    return sorted(path for path in root.rglob("*.py") if "__pycache__" not in path.parts)


def sources_digest(root: Path = PACKAGE_ROOT) -> str:
    """Hash of the package sources (part of the image's input hash)."""
    digest = hashlib.sha256()
    for path in package_sources(root):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def wheelhouse(requirements: list[str], progress: Callable[[str], None] = print) -> Path:
    """A cached folder of wheels for ``requirements`` (and their dependencies) on the image."""
    key = hashlib.sha256("|".join([IMAGE_PYTHON_VERSION, *requirements]).encode()).hexdigest()[:16]
    folder = cache_dir() / f"locust-wheels-{key}"
    if (folder / ".complete").is_file():
        return folder
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    progress(f"locust: pip download {' '.join(requirements)} ...")
    abi = "cp" + IMAGE_PYTHON_VERSION.replace(".", "")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            *requirements,
            "--only-binary=:all:",
            "--python-version",
            IMAGE_PYTHON_VERSION,
            "--implementation",
            "cp",
            "--abi",
            abi,
            *_platform_flags(),
            "--platform",
            "manylinux2014_x86_64",
            "-d",
            str(partial),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise ImageBuildError(f"pip download {' '.join(requirements)} failed:\n{done.stderr[-2000:]}")
    (partial / ".complete").write_text("\n".join(requirements) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


def collect_locust_files(
    folder: Path, requirements: list[str], progress: Callable[[str], None] = print
) -> dict[str, Path]:
    """Put the build context of the locust image in ``folder``: context name -> path."""
    wheels = folder / "wheels"
    shutil.copytree(wheelhouse(requirements, progress), wheels)
    (wheels / "requirements.txt").write_text("\n".join(requirements) + "\n")
    source = folder / "src" / "pytest_netperf"
    for path in package_sources():
        target = source / path.relative_to(PACKAGE_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    script = folder / "netperf"
    script.write_text(NETPERF_SCRIPT)
    script.chmod(0o755)
    return {"wheels": wheels, "src": folder / "src", "netperf": script}
