"""Docker SDK steps of the offline build: import a rootfs tarball, build a thin layer."""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path

from docker import DockerClient
from docker.errors import APIError, BuildError, ImageNotFound

from pytest_netperf.images.rootfs import ImageBuildError

LABEL_ROLE = "pytest-netperf.role"
LABEL_INPUTS = "pytest-netperf.inputs"
#: Seconds allowed for importing a rootfs or building one layer.
BUILD_TIMEOUT_S = 900


def image_labels(client: DockerClient, tag: str) -> dict[str, str] | None:
    """Labels of a local image, or None when ``tag`` is absent."""
    try:
        return dict(client.images.get(tag).labels or {})
    except ImageNotFound:
        return None


def image_id(client: DockerClient, tag: str) -> str | None:
    """The image id behind ``tag``, or None when absent."""
    try:
        return str(client.images.get(tag).id)
    except ImageNotFound:
        return None


def import_rootfs(client: DockerClient, tarball: Path, tag: str) -> None:
    """``docker import`` the tarball as ``tag`` (repository:tag)."""
    repository, _, version = tag.rpartition(":")
    try:
        client.api.import_image_from_file(str(tarball), repository=repository, tag=version)
    except APIError as exc:
        raise ImageBuildError(f"importing {tarball} as {tag} failed: {exc}") from exc
    if image_id(client, tag) is None:
        raise ImageBuildError(f"importing {tarball} as {tag} reported success but no image exists")


def build_layer(
    client: DockerClient,
    tag: str,
    dockerfile: str,
    files: Mapping[str, Path],
    labels: Mapping[str, str],
) -> str:
    """Build ``dockerfile`` with ``files`` (context name -> host path) as ``tag``; return its id."""
    with tempfile.TemporaryFile() as context:
        with tarfile.open(fileobj=context, mode="w") as archive:
            data = dockerfile.encode()
            info = tarfile.TarInfo("Dockerfile")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
            for name, path in files.items():
                archive.add(str(path), arcname=name)
        context.seek(0)
        try:
            image, _ = client.images.build(
                fileobj=context,
                custom_context=True,
                tag=tag,
                labels=dict(labels),
                rm=True,
                forcerm=True,
                pull=False,
                timeout=BUILD_TIMEOUT_S,
            )
        except BuildError as exc:
            log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)
            raise ImageBuildError(f"building {tag} failed: {exc.msg}\n{log[-2000:]}") from exc
        except APIError as exc:
            raise ImageBuildError(f"building {tag} failed: {exc}") from exc
    return str(image.id)
