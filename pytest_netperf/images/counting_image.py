"""Counting images: a node's own image with valgrind and strace added, for the counted counting pass.

The variant is built ``FROM`` the node's image with the distribution's package manager (apt,
apk, dnf, microdnf or yum), once per image id, and tagged ``pytest-netperf/cost:<id>``; the
``netperf-trace`` wrapper it carries runs the node's command under the tool and forwards the
stop signal to the counted server, so valgrind and strace write their counts on exit.
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from pathlib import Path

from docker import DockerClient
from docker.errors import APIError, ImageNotFound

from pytest_netperf.images.layers import LABEL_INPUTS, LABEL_ROLE, build_layer, image_id, image_labels
from pytest_netperf.images.rootfs import ImageBuildError

#: Where the wrapper lives in a counting image.
TRACE_WRAPPER = "/usr/local/bin/netperf-trace"
#: Repository of counting images; the tag is the short id of the image they extend.
COUNTING_REPOSITORY = "pytest-netperf/counting"

#: ``netperf-trace TOOL OUTDIR -- COMMAND...``: COMMAND under valgrind (``instructions``) or
#: strace (``syscalls``), its counts written to OUTDIR. TERM or INT to the wrapper sends TERM
#: to every process of the server (valgrind runs inside each of them; strace is their parent).
WRAPPER_SCRIPT = r"""#!/bin/sh
tool=$1; out=$2; shift 3
mkdir -p "$out" && chmod 1777 "$out" || exit 70
case "$tool" in
  instructions)
    valgrind --tool=cachegrind --cache-sim=no --trace-children=yes \
      --cachegrind-out-file="$out/cachegrind.%p" --log-file="$out/valgrind.%p.log" "$@" &
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
  # every server process at once (nginx workers, a HAProxy master's worker): each writes its
  # own counts as it exits; strace itself is left to write its summary when they are gone
  if [ "$target" = child ]; then
    pids=$(descendants $counted)
  else
    pids="$counted $(descendants $counted)"
  fi
  kill -TERM $pids 2>/dev/null
}
trap stop TERM INT
wait $counted
status=$?
while kill -0 $counted 2>/dev/null; do wait $counted; status=$?; done
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


def cost_dockerfile(image_id: str, user: str) -> str:
    """The Dockerfile of the counting variant of ``image_id`` (whose configured user is ``user``)."""
    lines = [
        f"FROM {image_id}",
        "USER root",
        f"RUN {_INSTALL}",
        f"COPY netperf-trace {TRACE_WRAPPER}",
        f"RUN chmod 0755 {TRACE_WRAPPER}",
    ]
    if user:
        lines.append(f"USER {user}")
    return "\n".join(lines) + "\n"


def counting_image_tag(image_id: str) -> str:
    """``pytest-netperf/cost:<12 hex of the image id>``."""
    return f"{COUNTING_REPOSITORY}:{image_id.split(':')[-1][:12]}"


def _inputs_digest(image_id: str, user: str) -> str:
    text = cost_dockerfile(image_id, user) + WRAPPER_SCRIPT
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def counting_image(client: DockerClient, image: str, wanted_by: str = "") -> str:
    """The counting variant of ``image`` (a tag or id), built when missing or stale; its tag.

    Raises ImageBuildError naming ``wanted_by`` (``service edge``), the image and the ways out
    when no package manager of the image can install valgrind and strace.
    """
    try:
        source = client.images.get(image)
    except ImageNotFound as exc:
        raise ImageBuildError(f"{wanted_by or 'counting pass'}: image {image} is not present") from exc
    source_id = str(source.id)
    user = str((source.attrs.get("Config") or {}).get("User") or "")
    tag = counting_image_tag(source_id)
    digest = _inputs_digest(source_id, user)
    labels = image_labels(client, tag)
    if labels is not None and labels.get(LABEL_INPUTS) == digest:
        return tag
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
                {LABEL_ROLE: "cost", LABEL_INPUTS: digest, "pytest-netperf.cost-of": source_id},
            )
        except ImageBuildError as exc:
            who = f"{wanted_by} " if wanted_by else ""
            raise ImageBuildError(
                f"{who}(image {image}): cannot add valgrind and strace for the counting pass: {exc}\n"
                "Ways out: build a variant of the image with valgrind and strace installed (and /bin/sh) "
                "and run the service from it, or drop the instructions_per_request/syscalls_per_request "
                "budgets for this service (scratch and distroless images have no package manager)."
            ) from exc
    if replaced is not None and replaced != image_id(client, tag):
        with contextlib.suppress(APIError):  # still used by a container: left for `docker image prune`
            client.images.remove(replaced)
    return tag
