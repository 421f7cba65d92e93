"""Counting images: a node's own image with valgrind and strace added, for the counted counting pass.

The variant is built ``FROM`` the node's image with the distribution's package manager (apt,
apk, dnf, microdnf or yum), once per image id, and tagged ``pytest-netperf/counting:<id>``; the
``netperf-trace`` wrapper it carries runs the node's command under the tool and forwards the
stop signal to the counted server, so valgrind and strace write their counts on exit.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from pathlib import Path

from docker import DockerClient
from docker.errors import APIError, ImageNotFound, NotFound

from pytest_netperf.images.layers import LABEL_INPUTS, LABEL_ROLE, build_layer, image_id, image_labels
from pytest_netperf.images.rootfs import ImageBuildError

#: Where the wrapper lives in a counting image.
TRACE_WRAPPER = "/usr/local/bin/netperf-trace"
#: Repository of counting images; the tag is the short id of the image they extend.
COUNTING_REPOSITORY = "pytest-netperf/counting"

#: ``netperf-trace TOOL OUTDIR -- COMMAND...``: COMMAND under valgrind's cachegrind
#: (``instructions``), its callgrind with call stacks (``stacks``: the profile behind the report's
#: flame graph) or strace (``syscalls``), its counts written to OUTDIR. TERM or INT to the wrapper sends TERM
#: to every process of the server (valgrind runs inside each of them; strace is their parent).
#: The wrapper then waits (up to 30 s) for every process of the container but init and itself, not only
#: for COMMAND: a start script that runs its server without ``exec`` (``envsubst … && nginx``)
#: dies on TERM at once while the server it started (reparented to init) is still writing its
#: counts, and the container's end would kill it mid-write.
WRAPPER_SCRIPT = r"""#!/bin/sh
tool=$1; out=$2; shift 3
mkdir -p "$out" && chmod 1777 "$out" || exit 70
case "$tool" in
  instructions)
    valgrind --tool=cachegrind --cache-sim=no --trace-children=yes \
      --cachegrind-out-file="$out/cachegrind.%p" --log-file="$out/valgrind.%p.log" "$@" &
    target=self ;;
  stacks)
    valgrind --tool=callgrind --separate-callers=24 --trace-children=yes \
      --callgrind-out-file="$out/callgrind.%p" --log-file="$out/valgrind.%p.log" "$@" &
    target=self ;;
  syscalls)
    strace -f -c -o "$out/strace.txt" "$@" &
    target=child ;;
  *) echo "netperf-trace: unknown tool $tool" >&2; exit 64 ;;
esac
counted=$!
descendants() {
  local child
  for child in $(cat /proc/$1/task/*/children 2>/dev/null); do
    echo "$child"
    descendants "$child"
  done
}
stop() {
  # every server process at once (nginx workers, a HAProxy master's worker, the server a start
  # script runs): each writes its own counts as it exits; strace itself is left to write its
  # summary when they are gone
  if [ "$target" = child ]; then
    pids=$(descendants $counted)
  else
    pids="$counted $(descendants $counted)"
  fi
  kill -TERM $pids 2>/dev/null
}
others_left() {
  # a process of the container other than init (1) and this wrapper that has not exited yet:
  # a traced server whose parent died before it, still writing its counts
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    case "$pid" in 1|$$) continue ;; esac
    read -r stat < "$dir/stat" 2>/dev/null || continue
    state=${stat##*) }
    case "$state" in Z*|X*) continue ;; esac
    return 0
  done
  return 1
}
trap stop TERM INT
wait $counted
status=$?
while kill -0 $counted 2>/dev/null; do wait $counted; status=$?; done
# at most 30 s: a helper that ignores TERM must not hold the stop until Docker kills everything
waited=0
while others_left && [ $waited -lt 300 ]; do sleep 0.1; waited=$((waited + 1)); done
exit $status
"""

_INSTALL = (
    "if command -v apt-get >/dev/null; then "
    "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
    "valgrind strace >/dev/null && rm -rf /var/lib/apt/lists/*; "
    "elif command -v apk >/dev/null; then apk add --no-cache valgrind strace; "
    "elif command -v dnf >/dev/null; then dnf install -y valgrind strace && dnf clean all; "
    "elif command -v microdnf >/dev/null; then microdnf install -y valgrind strace && microdnf clean all; "
    "elif command -v yum >/dev/null; then yum install -y valgrind strace && yum clean all; "
    "else echo 'no package manager (apt-get, apk, dnf, microdnf, yum) in the image' >&2; exit 3; fi"
)


#: Label naming the image a counting image (and every layer of its build) extends.
LABEL_COST_OF = "pytest-netperf.cost-of"
#: The role label of counting images and of the probe container that looks for a shell.
COST_ROLE = "cost"

#: The ways out of an image no counter can be added to.
WAYS_OUT = (
    "Ways out: build a variant of the image with valgrind and strace installed (and /bin/sh) "
    "and run the service from it, or drop the instructions_per_request/syscalls_per_request "
    "budgets for this service (scratch and distroless images have no package manager)."
)


def cost_dockerfile(image_id: str, user: str) -> str:
    """The Dockerfile of the counting variant of ``image_id`` (whose configured user is ``user``).

    Its labels come first, so every layer the build commits carries them (a failed build's
    layers are found and removed by them); ``USER 0`` needs no passwd entry."""
    lines = [
        f"FROM {image_id}",
        f'LABEL {LABEL_ROLE}="{COST_ROLE}" {LABEL_COST_OF}="{image_id}"',
        "USER 0",
        f"RUN {_INSTALL}",
        f"COPY netperf-trace {TRACE_WRAPPER}",
        f"RUN chmod 0755 {TRACE_WRAPPER}",
    ]
    if user:
        lines.append(f"USER {user}")
    return "\n".join(lines) + "\n"


def counting_image_tag(image_id: str) -> str:
    """``pytest-netperf/counting:<12 hex of the image id>``."""
    return f"{COUNTING_REPOSITORY}:{image_id.split(':')[-1][:12]}"


def _inputs_digest(image_id: str, user: str) -> str:
    text = cost_dockerfile(image_id, user) + WRAPPER_SCRIPT
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def counting_image(client: DockerClient, image: str, wanted_by: str = "") -> str:
    """The counting variant of ``image`` (a tag or id), built when missing or stale; its tag.

    Raises ImageBuildError naming ``wanted_by`` (``service edge``), the image and the ways out
    when the image has no shell, or no package manager of it can install valgrind and strace;
    no image of the failed build is left behind.
    """
    try:
        source = client.images.get(image)
    except ImageNotFound:
        raise ImageBuildError(f"{wanted_by or 'counting pass'}: image {image} is not present") from None
    source_id = str(source.id)
    user = str((source.attrs.get("Config") or {}).get("User") or "")
    tag = counting_image_tag(source_id)
    digest = _inputs_digest(source_id, user)
    labels = image_labels(client, tag)
    if labels is not None and labels.get(LABEL_INPUTS) == digest:
        return tag
    who = f"{wanted_by} " if wanted_by else ""
    if not has_shell(client, source_id):
        raise ImageBuildError(
            f"{who}(image {image}): cannot add valgrind and strace for the counting pass: the image has no "
            f"shell (/bin/sh) and so no package manager to install them with (a FROM scratch or distroless "
            f"image).\n{WAYS_OUT}"
        )
    replaced = image_id(client, tag) if labels is not None else None
    with tempfile.TemporaryDirectory(prefix="netperf-cost-") as folder:
        wrapper = Path(folder) / "netperf-trace"
        wrapper.write_text(WRAPPER_SCRIPT)
        try:
            build_layer(
                client,
                tag,
                cost_dockerfile(source_id, user),
                {"netperf-trace": wrapper},
                {LABEL_ROLE: COST_ROLE, LABEL_INPUTS: digest, LABEL_COST_OF: source_id},
            )
        except ImageBuildError as exc:
            remove_failed_layers(client, source_id)
            raise ImageBuildError(
                f"{who}(image {image}): cannot add valgrind and strace for the counting pass: {exc}\n{WAYS_OUT}"
            ) from None
    if replaced is not None and replaced != image_id(client, tag):
        with contextlib.suppress(APIError):  # still used by a container: left for `docker image prune`
            client.images.remove(replaced)
    return tag


def has_shell(client: DockerClient, source_id: str) -> bool:
    """Whether image ``source_id`` has ``/bin/sh`` (read from a container created, never started)."""
    probe = client.containers.create(
        source_id, entrypoint=["/bin/sh"], command=[], labels={LABEL_ROLE: COST_ROLE, LABEL_COST_OF: source_id}
    )
    try:
        probe.get_archive("/bin/sh")
    except NotFound:
        return False
    finally:
        with contextlib.suppress(NotFound):
            probe.remove(force=True)
    return True


def remove_failed_layers(client: DockerClient, source_id: str) -> int:
    """Remove the untagged layers a failed counting build of ``source_id`` left (they carry its
    labels); return how many went."""
    removed = 0
    found = client.images.list(all=True, filters={"dangling": True, "label": f"{LABEL_COST_OF}={source_id}"})
    for layer in found:
        with contextlib.suppress(NotFound, APIError):  # a layer another build still uses stays
            client.images.remove(str(layer.id), noprune=False)
            removed += 1
    return removed
