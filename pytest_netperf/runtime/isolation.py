"""The isolation of every topology container: the capabilities each role keeps, no-new-privileges, internal networks."""

from __future__ import annotations

from typing import Any

__all__ = ["DOCKER_DEFAULT_CAPABILITIES", "INTERNAL_NETWORKS", "ROLE_CAPABILITIES", "hardening_options"]

#: Capabilities each role gets back after ``cap_drop=["ALL"]`` (found by trying each role
#: with less: nginx's master runs as root and starts its workers as ``nobody``, which
#: needs SETUID/SETGID, and it chowns its temp directories to them, which needs CHOWN.
#: The echo server, HAProxy (no ``user`` directive) and Envoy need none. Binding ports
#: below 1024 needs nothing either: Docker 20.10+ sets ip_unprivileged_port_start=0 in
#: each container's network namespace. Kong (official image, not available offline) is
#: given nginx's set: it is OpenResty and may start as root the same way.
#: A ``"container"`` node (the team's own image, e.g. its app) gets Docker's default set
#: (:data:`DOCKER_DEFAULT_CAPABILITIES`): the plugin cannot know what that image's
#: entrypoint needs (dropping to a user, chowning a volume), and Compose runs the same image
#: with exactly this set, so a node and a Compose service of one image behave the same.
#: ``no-new-privileges`` and the internal network still apply.
DOCKER_DEFAULT_CAPABILITIES: tuple[str, ...] = (
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "NET_RAW",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
)
ROLE_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "echo": (),
    "nginx": ("CHOWN", "SETGID", "SETUID"),
    "haproxy": (),
    "envoy": (),
    "kong": ("CHOWN", "SETGID", "SETUID"),
    "container": DOCKER_DEFAULT_CAPABILITIES,
}
#: Whether topology networks are ``internal`` (no route off the host). Verified on Docker
#: 20.10 / cgroup v1: the host still reaches containers on an internal bridge (host to
#: bridge traffic does not pass the FORWARD chain Docker's isolation rules live in).
INTERNAL_NETWORKS = True


def hardening_options(role: str | None) -> dict[str, Any]:
    """``containers.create`` options: drop every capability but the role's, no new privileges."""
    return {
        "cap_drop": ["ALL"],
        "cap_add": list(ROLE_CAPABILITIES.get(role or "", ())),
        "security_opt": ["no-new-privileges"],
    }
