"""The image roles and the images named for them: local builds, official images, build order."""

from __future__ import annotations

__all__ = [
    "BASE_IMAGE",
    "BUILD_COMMAND",
    "COUNTING_ROLES",
    "LOCAL_BUILD_ORDER",
    "LOCAL_IMAGES",
    "OFFICIAL_IMAGES",
    "ROLES",
    "check_role",
]

#: ``echo`` (netperf-driver), ``nginx``, ``haproxy``, ``envoy``, ``kong``, and ``locust`` (a Locust
#: load worker running ``netperf locust-worker``; local build only).
ROLES: tuple[str, ...] = ("echo", "nginx", "haproxy", "envoy", "kong", "locust")
OFFICIAL_IMAGES: dict[str, str] = {
    "nginx": "nginx:1.27",
    "haproxy": "haproxy:2.8",
    "envoy": "envoyproxy/envoy:v1.31-latest",
    "kong": "kong:3.8",
}
BASE_IMAGE = "pytest-netperf/base:bookworm"
LOCAL_IMAGES: dict[str, str] = {
    "echo": "pytest-netperf/echo:local",
    "nginx": "pytest-netperf/nginx:local",
    "haproxy": "pytest-netperf/haproxy:local",
    "envoy": "pytest-netperf/envoy:local",
    "locust": "pytest-netperf/locust:local",
}
#: Build order: the driver layer last, so a missing driver binary leaves the others built.
LOCAL_BUILD_ORDER: tuple[str, ...] = ("nginx", "haproxy", "envoy", "locust", "echo")
#: Roles whose counting variant (valgrind and strace added, images/counting_image.py) ``build --counting``
#: builds too: the proxies a cost budget traces. Built on first use otherwise (~25 s each).
COUNTING_ROLES: tuple[str, ...] = ("nginx", "haproxy", "envoy")
BUILD_COMMAND = "netperf images build"


def check_role(role: str) -> None:
    """ValueError naming the known roles when ``role`` is none of them."""
    if role not in ROLES:
        raise ValueError(f"unknown image role {role!r}; known roles: {', '.join(ROLES)}")
