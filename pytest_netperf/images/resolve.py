"""Which image a role or a node's ``image=`` runs: override, image mapping, local build or official image.

Resolution order for a role: explicit override (option/ini mapping, then
``NETPERF_IMAGE_<ROLE>``), the local build, the official image if present (pulled only when
``NETPERF_PULL=1``). When none is there, the error names the image and every fix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from docker import DockerClient
from docker.errors import APIError, ImageNotFound

from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import ImageMissingError
from pytest_netperf.images.layers import image_id
from pytest_netperf.images.roles import BUILD_COMMAND, LOCAL_IMAGES, OFFICIAL_IMAGES, ROLES, check_role

__all__ = [
    "NodeImageMissingError",
    "image_report",
    "is_image_reference",
    "map_image",
    "missing_reference_reason",
    "pulling_enabled",
    "resolve_all",
    "resolve_image",
    "resolve_reference",
]

#: What an image reference may look like (a Docker reference, loosely: name[:tag][@digest]).
_IMAGE_REFERENCE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]*$")


def resolve_image(role: str, overrides: Mapping[str, str] | None = None, client: DockerClient | None = None) -> str:
    """The image ``role`` runs from; raises ImageMissingError naming the image and the fix."""
    check_role(role)
    client = client or docker_client()
    override, source = _override(role, overrides)
    if override:
        if _present_or_pulled(client, override):
            return override
        raise ImageMissingError(
            f"image {override} (set for role {role!r} by {source}) is not present locally; "
            "build or `docker load` it, or set NETPERF_PULL=1 where a registry is reachable"
        )
    local = LOCAL_IMAGES.get(role)
    if local and image_id(client, local):
        return local
    official = OFFICIAL_IMAGES.get(role)
    if official and _present_or_pulled(client, official):
        return official
    raise ImageMissingError(_missing_reason(role))


class NodeImageMissingError(ImageMissingError):
    """The image a node or service names (``image=``) is absent; names the node, the image and the fixes.

    Unlike a missing role image (an environment without the local build: tests skip), this
    is the test's own input, so fixtures let it fail the test.
    """


def resolve_reference(
    reference: str,
    overrides: Mapping[str, str] | None = None,
    client: DockerClient | None = None,
    wanted_by: str = "",
    role: str | None = None,
) -> str:
    """The image to run for ``reference`` (a node's ``image=``) under the image mapping.

    The mapped image must be present locally (pulled first only with NETPERF_PULL=1);
    otherwise NodeImageMissingError names ``wanted_by`` (e.g. ``node 'edge'``), the image and
    the fixes (a mapping to the local image of ``role``, the local build, ``docker load``).
    """
    client = client or docker_client()
    mapped = map_image(reference, overrides)
    if _present_or_pulled(client, mapped):
        return mapped
    raise NodeImageMissingError(missing_reference_reason(reference, mapped, wanted_by, role))


def missing_reference_reason(reference: str, mapped: str, wanted_by: str = "", role: str | None = None) -> str:
    """Why ``reference`` (mapped to ``mapped``) cannot run, and every way to fix it."""
    who = f"{wanted_by}: " if wanted_by else ""
    pull_hint = ""
    if not pulling_enabled():
        pull_hint = " (pulling is off; NETPERF_PULL=1 enables it where a registry is reachable)"
    local_roles = {tag: name for name, tag in LOCAL_IMAGES.items()}
    if mapped != reference:
        head = f"{who}image {reference} is mapped to {mapped}, which is not present locally{pull_hint}"
    else:
        head = f"{who}image {reference} is neither present locally nor pulled{pull_hint}"
    fixes: list[str] = []
    own_role = local_roles.get(mapped)
    if own_role is not None:
        fixes.append(f"build the local images with `{BUILD_COMMAND}`")
    else:
        local = LOCAL_IMAGES.get(role or "")
        if local and mapped == reference:
            fixes.append(
                f"map it to the local build: `--netperf-image {reference}={local}` "
                f"(or the netperf_images ini key), after `{BUILD_COMMAND}`"
            )
        elif mapped == reference:
            fixes.append(f"map it to an image you have: `--netperf-image {reference}=IMAGE`")
        fixes.append(f"build it (`docker build -t {mapped} ...`) or `docker load -i` a saved copy")
    return f"{head}; fixes: " + "; ".join(fixes)


def is_image_reference(key: str) -> bool:
    """True when an override key names an image (``nginx:1.27``, ``envoyproxy/envoy``), not a role."""
    return key not in ROLES and bool(_IMAGE_REFERENCE.match(key))


def map_image(reference: str, overrides: Mapping[str, str] | None = None) -> str:
    """The image to run for ``reference`` under the image mapping (``IMAGE=IMAGE`` overrides).

    An exact key wins, a role name too: ``image: nginx`` (or ``nginx:latest``) is the image the
    role key ``nginx`` names, so ``--netperf-image nginx=...`` maps it. A key without a tag
    also maps every tag of that repository (``team/app=...`` maps ``team/app:v2``), but a role
    key does not (``nginx=...`` leaves ``nginx:1.25`` alone). Unmapped references come back unchanged.
    """
    given = dict(overrides or {})
    for exact in (reference, reference.removesuffix(":latest")):
        if exact in given:
            return given[exact]
    mapping = {k: v for k, v in given.items() if is_image_reference(k)}
    repository = _repository(reference)
    return mapping.get(repository, reference)


def _repository(reference: str) -> str:
    """``nginx:1.27`` -> ``nginx``; ``host:5000/team/app:v1`` -> ``host:5000/team/app``."""
    name = reference.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return name[: len(name) - len(last)] + last.split(":", 1)[0]
    return name


def image_report(overrides: Mapping[str, str] | None = None, client: DockerClient | None = None) -> dict[str, str]:
    """Role -> ``"<image> (override|local build|official)"`` or ``"missing: <reason>"``."""
    client = client or docker_client()
    report: dict[str, str] = {}
    for role in ROLES:
        try:
            image = resolve_image(role, overrides, client)
        except ImageMissingError as exc:
            report[role] = f"missing: {exc}"
            continue
        if _override(role, overrides)[0]:
            kind = "override"
        elif image == LOCAL_IMAGES.get(role):
            kind = "local build"
        else:
            kind = "official"
        report[role] = f"{image} ({kind})"
    return report


def resolve_all(
    roles: Iterable[str], overrides: Mapping[str, str] | None = None, client: DockerClient | None = None
) -> dict[str, str]:
    """``resolve_image`` for each role (raises on the first missing one)."""
    client = client or docker_client()
    return {role: resolve_image(role, overrides, client) for role in roles}


def pulling_enabled() -> bool:
    """True when NETPERF_PULL=1: only then do we contact a registry."""
    return os.environ.get("NETPERF_PULL", "") == "1"


def _override(role: str, overrides: Mapping[str, str] | None) -> tuple[str | None, str]:
    if overrides and overrides.get(role):
        return overrides[role], "option/ini"
    env_name = f"NETPERF_IMAGE_{role.upper()}"
    if os.environ.get(env_name):
        return os.environ[env_name], env_name
    return None, ""


def _present_or_pulled(client: DockerClient, image: str) -> bool:
    if image_id(client, image):
        return True
    if not pulling_enabled():
        return False
    try:
        client.images.pull(image)
    except (APIError, ImageNotFound):
        return False
    return image_id(client, image) is not None


def _missing_reason(role: str) -> str:
    pull_hint = "" if pulling_enabled() else " (pulling is off; NETPERF_PULL=1 enables it)"
    if role == "kong":
        return (
            f"Kong image {OFFICIAL_IMAGES['kong']} is not present{pull_hint}. Kong ships only as "
            "official container images and vendor packages, so there is no offline build and no "
            "substitute; load a kong image with `docker load` or point NETPERF_IMAGE_KONG at one."
        )
    if role == "locust":
        return (
            f"image {LOCAL_IMAGES['locust']} (Locust worker) is missing; build it with `{BUILD_COMMAND} --only locust`"
        )
    if role == "echo":
        return (
            f"image {LOCAL_IMAGES['echo']} (echo server + driver) is missing; build it with "
            f"`{BUILD_COMMAND}` (needs the netperf-driver binary)"
        )
    return (
        f"no image for role {role!r}: neither {LOCAL_IMAGES[role]} (local build) nor "
        f"{OFFICIAL_IMAGES[role]} (official) is present{pull_hint}; build local images with "
        f"`{BUILD_COMMAND}`"
    )
