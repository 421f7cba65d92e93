"""Pure logic over a Compose project's normalised configuration (the output of ``compose config``).

Nothing here runs Compose or talks to Docker: project naming, which services start, the
override file that puts the session's labels, image mapping and resource limits on a
team's stack, and which ports a service is known to listen on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from pytest_netperf.engine import labels as L
from pytest_netperf.errors import ComposeFileError, ComposeUsageError
from pytest_netperf.images.resolve import map_image
from pytest_netperf.images.roles import LOCAL_IMAGES
from pytest_netperf.runtime.compose.profiles import is_active
from pytest_netperf.runtime.resources import CoreSplit
from pytest_netperf.topology.resources import Resources, memory_bytes

#: File stems that say nothing about the stack: the folder's name is used instead.
GENERIC_STEMS = frozenset({"docker-compose", "compose", "docker-compose.override", "compose.override"})
#: Longest stem kept in a project name (container names add the service and a number).
MAX_STEM = 24
#: Official image repositories whose local stand-in ``netperf images build`` makes.
LOCAL_EQUIVALENTS: dict[str, str] = {
    "nginx": "nginx",
    "haproxy": "haproxy",
    "envoyproxy/envoy": "envoy",
}
#: Most ports one ``expose``/``ports`` range may stand for (a bigger range is kept as its ends).
MAX_RANGE = 256
_UNSAFE = re.compile(r"[^a-z0-9]+")
_MEMORY_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([bkmg]?)b?\s*$", re.IGNORECASE)


def stack_stem(path: Path) -> str:
    """A short name for a Compose file: its stem, or its folder's name for ``docker-compose.yml``."""
    stem = path.name
    for suffix in (".yml", ".yaml"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    if stem.lower() in GENERIC_STEMS and path.parent.name:
        stem = path.parent.name
    return _UNSAFE.sub("-", stem.lower()).strip("-")[:MAX_STEM].strip("-") or "stack"


def project_name(session_id: str, worker: str, stem: str, serial: int) -> str:
    """``netperf-<sid>-<worker>-<stem>-<n>``: lower-case ``[a-z0-9-]``, unique per session,
    xdist worker and bring-up (Compose v1 and v2 both accept it unchanged)."""
    raw = f"netperf-{session_id}-{worker}-{stem}-{serial}"
    return re.sub(r"-{2,}", "-", _UNSAFE.sub("-", raw.lower())).strip("-")


def parse_config(text: str, file: Path) -> dict[str, Any]:
    """The YAML ``compose config`` printed, as a dict; ComposeFileError naming ``file`` otherwise."""
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ComposeFileError(f"Compose file {file}: `config` printed YAML that does not parse: {exc}") from exc
    if not isinstance(config, dict) or not isinstance(config.get("services"), dict) or not config["services"]:
        raise ComposeFileError(f"Compose file {file} defines no services")
    return config


def services_of(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Service name -> its configuration."""
    return {str(name): dict(value or {}) for name, value in (config.get("services") or {}).items()}


def dependencies(service: Mapping[str, Any]) -> dict[str, str]:
    """The services ``service`` depends on -> the condition (``service_started`` for the list form)."""
    value = service.get("depends_on") or {}
    if isinstance(value, list):
        return {str(name): "service_started" for name in value}
    return {str(name): str((spec or {}).get("condition", "service_started")) for name, spec in value.items()}


def started_services(
    config: Mapping[str, Any], wanted: Sequence[str] | None, active_profiles: Iterable[str] = ()
) -> list[str]:
    """The services ``up`` starts for ``wanted``: those and what they depend on; when None,
    every service that has no profile or an active one (``active_profiles``, see
    :mod:`~pytest_netperf.runtime.compose.profiles`): Compose starts no other.

    ComposeUsageError listing the known services for an unknown one.
    """
    services = services_of(config)
    if wanted is None:
        active = frozenset(active_profiles)
        return sorted(name for name, service in services.items() if is_active(service, active))
    check_services(services, wanted, "services=")
    out: set[str] = set()
    pending = list(wanted)
    while pending:
        name = pending.pop()
        if name in out:
            continue
        out.add(name)
        pending.extend(dep for dep in dependencies(services[name]) if dep in services)
    return sorted(out)


def check_services(services: Iterable[str], names: Iterable[str], what: str) -> None:
    """ComposeUsageError naming the unknown service(s) of ``names`` and listing the known ones."""
    known = sorted(services)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ComposeUsageError(
            f"{what}: unknown service(s) {', '.join(repr(n) for n in unknown)}; known services: {', '.join(known)}"
        )


def completed_ok(config: Mapping[str, Any], service: str) -> bool:
    """True when another service waits for ``service`` to finish (``service_completed_successfully``):
    then exiting with code 0 is what it is meant to do."""
    return any(
        dependencies(other).get(service) == "service_completed_successfully" for other in services_of(config).values()
    )


# ----------------------------------------------------------------------------- resources


def file_resources(service: Mapping[str, Any]) -> Resources:
    """The limits a service's own configuration sets (service keys, else ``deploy.resources.limits``).

    A value Resources cannot express (an unusual memory text) is left out: Compose keeps it.
    """
    limits = ((service.get("deploy") or {}).get("resources") or {}).get("limits") or {}
    cpus = service.get("cpus", limits.get("cpus"))
    cpuset = service.get("cpuset")
    memory = _memory_text(service.get("mem_limit", limits.get("memory")))
    values: dict[str, Any] = {}
    try:
        if cpus is not None and float(cpus) > 0:
            values["cpus"] = float(cpus)
    except (TypeError, ValueError):
        pass
    if cpuset is not None:
        values["cpuset"] = str(cpuset)
    if memory is not None:
        values["memory"] = memory
    try:
        return Resources(**values)
    except ValueError:
        return Resources(cpus=values.get("cpus"), memory=values.get("memory"))


def effective_resources(
    config: Mapping[str, Any],
    given: Mapping[str, Resources] | None = None,
    split: CoreSplit | None = None,
) -> dict[str, Resources]:
    """Service -> the limits it runs with: the file's, the test's on top, and the system under
    test's cores (``split.sut``) where neither sets a cpuset."""
    services = services_of(config)
    check_services(services, (given or {}).keys(), "resources=")
    out: dict[str, Resources] = {}
    for name, service in services.items():
        limits = file_resources(service).merged((given or {}).get(name))
        if split is not None and limits.cpuset is None:
            limits = limits.merged(Resources(cpuset=split.sut))
        out[name] = limits
    return out


def resources_from(value: Mapping[str, Any] | None) -> dict[str, Resources]:
    """``{"edge": {"cpus": 1}}`` or ``{"edge": Resources(...)}`` -> service -> Resources.

    ComposeUsageError naming the service for an invalid value.
    """
    out: dict[str, Resources] = {}
    for name, limits in (value or {}).items():
        try:
            out[str(name)] = Resources.from_mapping(limits)
        except (TypeError, ValueError) as exc:
            raise ComposeUsageError(f"resources= for service {name!r}: {exc}") from exc
    return out


def describe_resources(resources: Mapping[str, Resources], split: CoreSplit | None = None) -> str:
    """``edge cpus 1, cpuset 2-3; app memory 256m; driver cores 0-1, ...`` (``no limits`` when none)."""
    parts = [f"{name} {limits.describe()}" for name, limits in sorted(resources.items()) if not limits.empty]
    if split is not None:
        parts.append(split.describe())
    return "; ".join(parts) or "no limits"


def _memory_text(value: Any) -> str | None:
    """``64m``, ``64MB``, ``1.5g``, 67108864 -> a text :func:`memory_bytes` reads; None otherwise."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value) if value > 0 else None
    match = _MEMORY_UNIT.match(str(value))
    if not match:
        return None
    number, unit = match.group(1), match.group(2).lower()
    if "." in number:
        size = memory_bytes(f"1{unit}") or 1
        return str(int(float(number) * size)) if float(number) > 0 else None
    text = f"{number}{unit}"
    return text if memory_bytes(text) is not None else None


# ----------------------------------------------------------------------------- the override file


def override_document(
    config: Mapping[str, Any],
    project: str,
    labels: Mapping[str, str],
    image_overrides: Mapping[str, str] | None = None,
    resources: Mapping[str, Resources] | None = None,
    dockerfiles: Mapping[str, Path] | None = None,
    service_keys: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The override Compose file that puts a team's stack under the session's control.

    For each service: the session ``labels`` plus ``pytest-netperf.node=<service>``; the image
    through the image mapping (services without ``build:``); the same labels on what
    ``build:`` makes (so built images can be cleaned up), and the Dockerfile with the mapped
    FROM images where ``dockerfiles`` has one (:mod:`.dockerfile`); a project-unique
    ``container_name`` where the file fixes one; the resource limits (``resources``, the
    output of :func:`effective_resources`), mirrored into ``deploy.resources.limits`` where
    the file sets limits there (Compose v2 rejects the two disagreeing); ``service_keys``
    (the session's weighted ``cgroup_parent``) where the service sets none of its own. The
    labels go on every non-external network (the implicit ``default`` too) and named volume.
    """
    document: dict[str, Any] = {}
    if "version" in config:  # Compose v1 wants the files of one project to agree
        document["version"] = config["version"]
    services: dict[str, Any] = {}
    for name, service in services_of(config).items():
        entry: dict[str, Any] = {"labels": {**labels, L.NODE: name}}
        if service.get("build") is not None:
            entry["build"] = {"labels": dict(labels)}
            if name in (dockerfiles or {}):
                entry["build"]["dockerfile"] = str((dockerfiles or {})[name])
        elif service.get("image"):
            entry["image"] = map_image(str(service["image"]), image_overrides)
        if service.get("container_name"):
            entry["container_name"] = f"{project}-{name}"
        entry.update({key: value for key, value in (service_keys or {}).items() if key not in service})
        limits = (resources or {}).get(name)
        if limits is not None and not limits.empty:
            entry.update(limits.compose_keys())
            deploy = _deploy_limits(service, limits)
            if deploy:
                entry["deploy"] = {"resources": {"limits": deploy}}
        services[name] = entry
    document["services"] = services
    networks = {
        str(name): {"labels": dict(labels)}
        for name, network in (config.get("networks") or {}).items()
        if not _external(network)
    }
    if uses_default_network(config):
        networks.setdefault("default", {"labels": dict(labels)})
    if networks:
        document["networks"] = networks
    volumes = {
        str(name): {"labels": dict(labels)}
        for name, volume in (config.get("volumes") or {}).items()
        if not _external(volume)
    }
    if volumes:
        document["volumes"] = volumes
    return document


def publishing_services(config: Mapping[str, Any]) -> list[str]:
    """The services that publish ports on the host (``ports:``), sorted."""
    return sorted(name for name, service in services_of(config).items() if service.get("ports"))


def without_host_ports(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with no port published on the host: its services keep listening on their
    container ports, which the driver reaches by the container's network address. A published
    port would clash with the base twin's (``--netperf-base``), another xdist worker's stack, or
    anything on the host that holds it; Compose merges ``ports`` from an override file instead
    of replacing them, so the stack runs from this copy of its normalised configuration."""
    document = dict(config)
    document["services"] = {
        name: {key: value for key, value in service.items() if key != "ports"}
        for name, service in services_of(config).items()
    }
    return document


def override_yaml(document: Mapping[str, Any]) -> str:
    """The override document as YAML text."""
    return yaml.safe_dump(dict(document), sort_keys=True, default_flow_style=False)


def uses_default_network(config: Mapping[str, Any]) -> bool:
    """True when a service joins the project's implicit ``default`` network."""
    default = (config.get("networks") or {}).get("default")
    if default is not None and _external(default):
        return False
    for service in services_of(config).values():
        if service.get("network_mode"):
            continue
        networks = service.get("networks")
        if not networks or "default" in networks:
            return True
    return False


def _deploy_limits(service: Mapping[str, Any], limits: Resources) -> dict[str, Any]:
    declared = ((service.get("deploy") or {}).get("resources") or {}).get("limits") or {}
    out: dict[str, Any] = {}
    if "cpus" in declared and limits.cpus is not None:
        out["cpus"] = float(limits.cpus)
    if "memory" in declared and limits.memory is not None:
        out["memory"] = str(limits.memory).lower()
    return out


def _external(value: Any) -> bool:
    return isinstance(value, Mapping) and bool(value.get("external"))


# ----------------------------------------------------------------------------- images


def image_plan(
    config: Mapping[str, Any], services: Iterable[str], image_overrides: Mapping[str, str] | None = None
) -> dict[str, tuple[str, str]]:
    """Service -> (image the file names, image it runs under the mapping), for services without ``build:``."""
    all_services = services_of(config)
    out: dict[str, tuple[str, str]] = {}
    for name in services:
        service = all_services[name]
        if service.get("build") is None and service.get("image"):
            original = str(service["image"])
            out[name] = (original, map_image(original, image_overrides))
    return out


def local_equivalent(image: str) -> str | None:
    """The local image standing in for an official one: ``nginx:1.27`` -> ``pytest-netperf/nginx:local``."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    if name.startswith("library/"):
        name = name[len("library/") :]
    role = LOCAL_EQUIVALENTS.get(name)
    return LOCAL_IMAGES.get(role) if role else None


def missing_image_message(service: str, original: str, mapped: str, pull_enabled: bool) -> str:
    """Why ``service`` cannot start: its image is absent, and the ways to provide it."""
    via = f" (mapped from {original})" if mapped != original else ""
    fixes = []
    local = local_equivalent(original)
    if local and mapped == original:
        fixes.append(f"map it to the local build: --netperf-image {original}={local} (or the netperf_images ini key)")
    fixes.append("give the service a `build:` section that builds it from the repository's Dockerfile")
    fixes.append(f"`docker load` an archive of {mapped}")
    if not pull_enabled:
        fixes.append("set NETPERF_PULL=1 where a registry is reachable")
    return (
        f"service {service!r}: image {mapped}{via} is not present locally"
        f"{'' if pull_enabled else ' and pulling is off'}; fixes: " + "; ".join(fixes)
    )


# ----------------------------------------------------------------------------- ports


def known_ports(service: Mapping[str, Any], image_exposed: Iterable[str] = ()) -> list[int]:
    """TCP ports a service is known to listen on: ``ports`` targets, ``expose``, the image's ExposedPorts."""
    ports: set[int] = set()
    for entry in service.get("ports") or []:
        if isinstance(entry, Mapping):
            if str(entry.get("protocol", "tcp")).lower() == "tcp" and entry.get("target") is not None:
                ports.update(_port_range(str(entry["target"])))
        else:
            ports.update(_port_text(str(entry), container_side=True))
    for entry in service.get("expose") or []:
        ports.update(_port_text(str(entry), container_side=False))
    for entry in image_exposed:
        ports.update(_port_text(str(entry), container_side=False))
    return sorted(ports)


def _port_text(text: str, container_side: bool) -> list[int]:
    """``127.0.0.1:8080:80/tcp`` -> [80]; ``8000-8002`` -> [8000, 8001, 8002]; udp -> []."""
    spec, _, protocol = text.partition("/")
    if protocol and protocol.lower() != "tcp":
        return []
    if container_side:
        spec = spec.rsplit(":", 1)[-1]
    return _port_range(spec)


def _port_range(text: str) -> list[int]:
    low, _, high = text.strip().partition("-")
    try:
        first, last = int(low), int(high or low)
    except ValueError:
        return []
    if last < first:
        return []
    if last - first >= MAX_RANGE:
        return [first, last]
    return list(range(first, last + 1))
