"""Runtimes that realize topologies. The Docker runtime lives here; a local one may join it.

Importing this package does not contact Docker; the functions below do when called.
"""

from .cleanup import clean_all, clean_session, clean_stale
from .client import docker_client
from .docker_runtime import DockerRuntime, Endpoint, RunningTopology, TopologyStartError
from .images import ImageBuildError, build_images, image_report, resolve_image
from .runners import ContainerRunner

__all__ = [
    "ContainerRunner",
    "DockerRuntime",
    "Endpoint",
    "ImageBuildError",
    "RunningTopology",
    "TopologyStartError",
    "build_images",
    "clean_all",
    "clean_session",
    "clean_stale",
    "docker_client",
    "image_report",
    "resolve_image",
]
