"""A fingerprint of the machine a measurement ran on, stored with every baseline.

Numbers measured on another CPU, kernel, Docker engine or image are not comparable;
the fingerprint lets the baseline check say so. Every probe tolerates absence (no
Docker daemon, no driver binary) by recording ``None``. The machine part is computed
once per process.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any, Mapping, Optional

DRIVER_BINARY = "netperf-driver"


def machine_fingerprint(image_digests: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """Return the fingerprint of this machine plus the given image digests.

    Keys: cpu_model, logical_cores, kernel, docker_version, image_digests, python,
    plugin_version, driver_version.
    """
    fingerprint = dict(_machine_part())
    fingerprint["image_digests"] = dict(sorted((image_digests or {}).items()))
    return fingerprint


@functools.lru_cache(maxsize=1)
def _machine_part() -> tuple[tuple[str, Any], ...]:
    from pytest_netperf.version import __version__

    return (
        ("cpu_model", cpu_model()),
        ("logical_cores", os.cpu_count()),
        ("kernel", platform.release()),
        ("docker_version", docker_server_version()),
        ("python", platform.python_version()),
        ("plugin_version", __version__),
        ("driver_version", driver_version()),
    )


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> Optional[str]:
    """The CPU model name from /proc/cpuinfo (``platform.processor()`` elsewhere)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return platform.processor() or None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        # x86 says "model name"; some ARM kernels say "Model" or "Processor".
        named = key.strip().lower() in ("model name", "model", "processor")
        if named and value.strip() and not value.strip().isdigit():
            return " ".join(value.split())
    return platform.processor() or None


def docker_server_version(timeout_s: float = 3.0) -> Optional[str]:
    """The Docker engine's version, or ``None`` when no daemon answers."""
    try:
        import docker

        client = docker.from_env(timeout=int(max(1, timeout_s)))
        try:
            return str(client.version().get("Version")) or None
        finally:
            client.close()
    except Exception:  # no SDK, no socket, daemon stopped, permission denied …
        return None


def driver_version(binary: str = DRIVER_BINARY, timeout_s: float = 5.0) -> Optional[str]:
    """The version printed by ``netperf-driver --version``, or ``None`` if unavailable."""
    path = shutil.which(binary)
    if path is None:
        return None
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    words = proc.stdout.split()
    # "netperf-driver 0.1.0" -> "0.1.0"
    return words[-1] if words else None


def compare_fingerprints(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Human-readable differences from fingerprint ``a`` (stored) to ``b`` (this run)."""
    labels = (
        ("cpu_model", "CPU model"),
        ("logical_cores", "logical cores"),
        ("kernel", "kernel"),
        ("docker_version", "Docker version"),
        ("plugin_version", "pytest-netperf version"),
        ("driver_version", "netperf-driver version"),
    )
    differences = [
        f"{label}: {_show(a.get(key))} -> {_show(b.get(key))}" for key, label in labels if a.get(key) != b.get(key)
    ]
    images_a = dict(a.get("image_digests") or {})
    images_b = dict(b.get("image_digests") or {})
    for image in sorted(set(images_a) | set(images_b)):
        if images_a.get(image) != images_b.get(image):
            differences.append(f"image {image}: {_show(images_a.get(image))} -> {_show(images_b.get(image))}")
    return differences


def _show(value: Any) -> str:
    return "unknown" if value is None else str(value)
