"""A running Compose project: its services' containers, endpoints for the gate, facts, and ``down()``.

:class:`ComposeStack` (brought up by :class:`~pytest_netperf.runtime.compose.launcher.ComposeLauncher`)
gives endpoints for the gate and the containers of each service; :meth:`ComposeStack.down`
removes everything (Compose's ``down``, then whatever still carries the project's label).
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from docker import DockerClient
from docker.errors import APIError, NotFound
from docker.models.containers import Container

from pytest_netperf.engine import labels as L
from pytest_netperf.errors import ComposeError, ComposeStartError, ComposeUsageError
from pytest_netperf.revision.diff import CHANGES_FACT
from pytest_netperf.runtime.cleanup import clean_network
from pytest_netperf.runtime.compose import diagnostics, profiles, twin
from pytest_netperf.runtime.compose import project as P
from pytest_netperf.runtime.compose.commands import ProjectCommands
from pytest_netperf.runtime.costs import Member, SystemProbe
from pytest_netperf.runtime.counting_clone import NodeCounter
from pytest_netperf.runtime.endpoints import Endpoint, TopologyGuard
from pytest_netperf.runtime.listening import ListenWatch, listening_ports
from pytest_netperf.runtime.readiness import HttpReadiness, NodeNotReady
from pytest_netperf.runtime.resources import CoreSplit
from pytest_netperf.runtime.runners import ContainerRunner
from pytest_netperf.tls_options import TlsOptions
from pytest_netperf.topology.model import HTTP_SCHEMES
from pytest_netperf.topology.resources import Resources

__all__ = ["ComposeStack"]

#: Seconds allowed for Compose's ``down``.
DOWN_TIMEOUT_S = 120.0
#: Seconds ``down`` gives each container to stop before it is killed.
STOP_GRACE_S = 2
#: Seconds a port that is not known to be open gets to answer before ``endpoint()`` refuses it.
UNKNOWN_PORT_PROBE_S = 2.0


class ComposeStack:
    """A running Compose project: endpoints for the gate, the containers of each service, ``down()``."""

    def __init__(
        self,
        project: ProjectCommands,
        client: DockerClient,
        config: dict[str, Any],
        services: list[str],
        resources: dict[str, Resources],
        split: CoreSplit | None,
        image_plan: dict[str, tuple[str, str]],
        labels: dict[str, str],
        driver_image: str | None,
        temp_dir: Path,
        ready_timeout_s: float = 60.0,
        poll_interval_s: float = 0.1,
    ) -> None:
        self._project = project
        self._client = client
        #: the normalised configuration ``compose config`` printed
        self.config = config
        self._started = list(services)
        self._resources = resources
        self._split = split
        self._image_plan = image_plan
        self._labels = labels
        self._driver_image = driver_image
        self._temp_dir = temp_dir
        self._ready_timeout_s = ready_timeout_s
        self._poll_interval_s = poll_interval_s
        self._ready_ports: set[tuple[str, int]] = set()
        self._is_up = True
        self._probe: SystemProbe | None = None
        #: seconds from the launcher's ``up()`` call to every service running (and healthy)
        self.startup_s = 0.0
        #: seconds per phase: config, build (override + build), up, ready, down
        self.timings: dict[str, float] = {}
        #: the same stack at the base revision (``--netperf-base``), see :meth:`attach_base`
        self.base: ComposeStack | None = None
        #: why there is no base twin under ``--netperf-base`` (the file is not at the base revision)
        self.base_note = ""
        #: why the twin at the base revision did not come up (with its log): base budgets INVALID
        self.base_error = ""
        #: ``vs base`` fact: the stack's input files that differ from the base revision
        self.base_changes = ""
        #: the base revision as the report names it (``main (3f2a1c9)``)
        self.base_revision = ""
        #: built service -> the images the mapping put in its Dockerfile (``FROM x for nginx:1.27``)
        self.built_from: dict[str, str] = {}

    # ----------------------------------------------------------------- public

    @property
    def project(self) -> str:
        """The Compose project name (also the value of the ``pytest-netperf.network`` label)."""
        return self._project.name

    @property
    def file(self) -> Path:
        """The Compose file this stack runs."""
        return self._project.file

    @property
    def services(self) -> tuple[str, ...]:
        """The services this stack started (those asked for and what they depend on)."""
        return tuple(self._started)

    def service(self, name: str) -> list[Container]:
        """The running container(s) of service ``name``, in replica order."""
        self._check_known(name, "service()")
        return [c for c in self.containers(name) if c.status == "running"]

    def logs(self, name: str) -> str:
        """stdout and stderr of every container of service ``name`` so far."""
        self._check_known(name, "logs()")
        return "".join(c.logs().decode(errors="replace") for c in self.containers(name))

    def endpoint(
        self,
        service: str,
        port: int = 80,
        path: str = "/",
        host: str | None = None,
        via_dns: bool = False,
        scheme: str = "http",
        tls: TlsOptions | Mapping[str, Any] | None = None,
    ) -> Endpoint:
        """A target for ``netperf.measure``/``compare``: ``http://<address>:<port><path>`` from the host,
        or ``http://<service>:<port><path>`` from a driver container on the project's network
        (``via_dns=True``). ``host`` becomes the Host header. The port must be one the service
        is known to listen on or answer a probe; otherwise the error lists the known ports.

        ``scheme="https"`` measures a port that terminates TLS with the team's own certificate:
        ``host`` is then also the name the driver sends as SNI and checks the certificate
        against, and ``tls`` (e.g. ``{"ca": "certs/ca.pem"}``, the CA that signed it; see
        :class:`~pytest_netperf.tls_options.TlsOptions`) says whom to trust; relative
        paths resolve against the Compose project's directory (the Compose file's folder unless
        ``project_dir=``), as the file's own ``volumes:`` do, so the base revision's twin uses the
        base revision's CA. Without ``tls`` the driver trusts the system's CAs.
        """
        if not self._is_up:
            raise ComposeUsageError(f"stack {self.project} ({self.file}) is down")
        self._check_known(service, "endpoint()")
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise ComposeUsageError(f"endpoint({service!r}): port must be an integer in 1..65535, got {port!r}")
        if not path.startswith("/"):
            raise ComposeUsageError(f"endpoint({service!r}): path must start with '/', got {path!r}")
        trust = self._trust(service, scheme, tls, via_dns)
        containers = self.service(service)
        if not containers:
            raise ComposeStartError(f"service {service!r} of {self.file} is not running\n{self.diagnosis()}")
        container = containers[0]
        if str(P.services_of(self.config)[service].get("network_mode") or "") == "host":
            raise ComposeUsageError(diagnostics.host_network_message(service, port, self.file))
        root = self._root_container(service, container)
        network, network_id, address, aliases = self._attachment(service, root)
        self._ensure_port(service, container, address, port)
        guard = TopologyGuard(
            client=self._client,
            topology=self.project,
            network=network,
            network_id=network_id,
            labels=dict(self._labels),
            node=service,
            container_id=str(container.id),
            root_container_id=str(root.id),
            names=tuple(dict.fromkeys((service, *aliases))),
        )
        own = replace(self._endpoint(service, port, path, host, via_dns, guard, address, network, scheme), tls=trust)
        if self.base is not None and service not in self.base.services:
            note = twin.missing_note(
                service, P.services_of(self.config), P.services_of(self.base.config), self.base_revision, self.file.name
            )
            return replace(own, base_note=note, facts={**own.facts, CHANGES_FACT: self.base_changes})
        if self.base is not None:
            twin_endpoint = self.base.endpoint(service, port, path, host, via_dns, scheme, tls)
            return replace(own, base=twin_endpoint, facts={**self.facts(), CHANGES_FACT: self.base_changes})
        return replace(own, base_note=self.base_note, base_error=self.base_error)

    def _trust(
        self, service: str, scheme: str, tls: TlsOptions | Mapping[str, Any] | None, via_dns: bool
    ) -> TlsOptions | None:
        """``tls`` checked for ``scheme``, its relative paths resolved against the project's
        directory; ComposeUsageError naming the option or the missing file."""
        who = f"endpoint({service!r})"
        if scheme not in HTTP_SCHEMES:
            raise ComposeUsageError(f"{who}: scheme must be 'http' or 'https', got {scheme!r}")
        if scheme == "http":
            if tls is not None:
                raise ComposeUsageError(f"{who}: tls= is for scheme='https' (the port speaks TLS)")
            return None
        if via_dns:
            raise ComposeUsageError(
                f"{who}: an https endpoint is measured from the host (where its CA file is), not with via_dns=True"
            )
        if tls is None:
            return None
        try:
            options = TlsOptions.of(tls)
        except ValueError as exc:
            raise ComposeUsageError(f"{who}: tls={tls!r}: {exc}") from exc
        folder = self._project.project_dir or self.file.parent

        def resolved(name: str, given: str | None) -> str | None:
            if given is None:
                return None
            path = Path(given).expanduser()
            path = path if path.is_absolute() else folder / path
            if not path.is_file():
                raise ComposeUsageError(
                    f"{who}: tls {name} {given!r} is not a file: {path} (relative paths resolve against {folder})"
                )
            return str(path)

        return replace(
            options,
            ca=resolved("ca", options.ca),
            cert=resolved("cert", options.cert),
            key=resolved("key", options.key),
        )

    def counter(self, service: str, port: int) -> NodeCounter:
        """Counted clones of ``service``'s first container serving on ``port`` (the counting pass). A
        service in another's network namespace (``network_mode: service:X``, a sidecar) is
        counted in a clone that joins a plain clone of X, as it joins X itself."""
        container = self.service(service)[0]
        root = self._root_container(service, container)
        network, _, _, _ = self._attachment(service, root)
        companion = root if root.id != container.id else None
        return NodeCounter(self._client, container, service, network, port, companion=companion)

    def _endpoint(
        self,
        service: str,
        port: int,
        path: str,
        host: str | None,
        via_dns: bool,
        guard: TopologyGuard,
        address: str,
        network: str,
        scheme: str = "http",
    ) -> Endpoint:
        images, facts, costs = self._image_ids(), self.facts(), self.cost_probe()
        counter = self.counter(service, port)
        if via_dns:
            if self._driver_image is None:
                raise ComposeUsageError(
                    f"endpoint({service!r}, via_dns=True) runs the driver in a container, but no echo "
                    "(driver) image is known; build it with `netperf images build`"
                )
            runner = ContainerRunner(self._client, self._driver_image, network, self._labels)
            url = f"{scheme}://{service}:{port}{path}"
            return Endpoint(url, runner, runner.where, host, images, guard, facts, costs=costs, counter=counter)
        return Endpoint(
            f"{scheme}://{address}:{port}{path}", None, "host", host, images, guard, facts, costs=costs, counter=counter
        )

    def cost_probe(self) -> SystemProbe:
        """Reads what the stack's running containers spend per round, by service name (replicas
        summed); one-shot services that have exited are not part of it."""
        if self._probe is None:
            members = [
                Member(service, str(c.id), str(c.name))
                for service in self._started
                for c in self.containers(service)
                if c.status == "running"
            ]
            self._probe = SystemProbe(self._client, members)
        return self._probe

    def attach_base(self, base: ComposeStack, changes: str, revision: str = "the base revision") -> None:
        """Pair this (head) stack with its twin at the base revision (``revision``: ``main (3f2a1c9)``);
        ``changes`` describes the input files that differ (``unchanged`` when none do)."""
        self.base, self.base_changes, self.base_revision = base, changes, revision

    def facts(self) -> dict[str, str]:
        """What the report prints per row: the image each service ran and its resource limits."""
        return {
            "images": ", ".join(f"{name}={text}" for name, text in sorted(self._images_ran().items())),
            "resources": P.describe_resources({s: self._resources[s] for s in self._started}, self._split),
        }

    def down(self) -> None:
        """Remove the project: Compose's ``down`` (volumes, built images), then everything still
        carrying its label (driver containers too), then the override's folder."""
        if not self._is_up:
            return
        began = time.monotonic()
        try:
            with contextlib.suppress(ComposeError):  # the label cleanup below removes what it left
                self._project.run(
                    "down",
                    "-v",
                    "--remove-orphans",
                    "--rmi",
                    "local",
                    "-t",
                    str(STOP_GRACE_S),
                    timeout_s=DOWN_TIMEOUT_S,
                )
            clean_network(self.project, self._client)
        finally:
            self._is_up = False
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self.timings["down"] = time.monotonic() - began

    def __enter__(self) -> ComposeStack:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.down()

    def diagnosis(self) -> str:
        """One section per container of the project that exited, restarts or is unhealthy."""
        return diagnostics.diagnosis(self.config, self.file, self._started, self.containers)

    # ----------------------------------------------------------------- endpoints

    def _ensure_port(self, service: str, container: Container, address: str, port: int) -> None:
        if (service, port) in self._ready_ports:
            return
        exposed = (container.attrs.get("Config") or {}).get("ExposedPorts") or {}
        known = P.known_ports(P.services_of(self.config)[service], exposed.keys())
        timeout = self._ready_timeout_s if port in known else UNKNOWN_PORT_PROBE_S
        pid = int((container.attrs.get("State") or {}).get("Pid") or 0)
        watch = ListenWatch(lambda: listening_ports(pid, str(container.id)), port)
        probe = HttpReadiness(address, port, None, timeout, self._poll_interval_s, give_up=watch.problem)
        try:
            probe.wait_until_ready(container)
        except NodeNotReady as exc:
            if watch.gave_up_on:
                shown = ", ".join(str(p) for p in sorted(watch.gave_up_on))
                raise ComposeUsageError(
                    f"endpoint({service!r}, port={port}): service {service!r} of {self.file} listens on {shown}, "
                    f"not on port {port} ({exc}); pass the port its configuration listens on, e.g. "
                    f"endpoint({service!r}, port={min(watch.gave_up_on)})"
                ) from exc
            if port not in known:
                shown = ", ".join(str(p) for p in known) or "none (no ports, expose or EXPOSE)"
                listening = listening_ports(pid, str(container.id))
                heard = f"; it listens on {', '.join(str(p) for p in sorted(listening))}" if listening else ""
                raise ComposeUsageError(
                    f"endpoint({service!r}, port={port}): port {port} is not a known port of service "
                    f"{service!r} and nothing answers on it ({probe.last_problem}); known ports: {shown}{heard}"
                ) from exc
            raise ComposeStartError(
                f"service {service!r} of {self.file}: port {port} not ready: {exc}\n"
                f"{diagnostics.log_section(service, container)}"
            ) from exc
        self._ready_ports.add((service, port))

    def _root_container(self, service: str, container: Container) -> Container:
        """The container holding ``service``'s address (another service's for ``network_mode: service:X``)."""
        mode = str(P.services_of(self.config)[service].get("network_mode") or "")
        if mode.startswith("service:"):
            owner = mode.split(":", 1)[1]
            running = self.service(owner) if owner in self._started else []
            if running:
                return running[0]
        return container

    def _attachment(self, service: str, container: Container) -> tuple[str, str, str, list[str]]:
        """(network name, network id, address, aliases) of ``container`` on the network to use:
        the project's ``default`` network when attached, else the first project network by name."""
        container.reload()
        attached: dict[str, Any] = (container.attrs.get("NetworkSettings") or {}).get("Networks") or {}
        if not attached:
            raise ComposeUsageError(
                f"endpoint({service!r}): the service is on no network (network_mode "
                f"{P.services_of(self.config)[service].get('network_mode')!r}), so the driver cannot reach it"
            )
        details = {name: self._network_attrs(name) for name in attached}

        def rank(name: str) -> tuple[int, str]:
            labels = details[name].get("Labels") or {}
            ours = labels.get(L.NETWORK) == self.project
            is_default = labels.get("com.docker.compose.network") == "default"
            return (0 if ours and is_default else 1 if ours else 2, name)

        chosen = min(attached, key=rank)
        info = attached[chosen] or {}
        address = str(info.get("IPAddress") or "")
        if not address:
            raise ComposeUsageError(f"endpoint({service!r}): the container has no address on network {chosen}")
        aliases = [str(a) for a in (info.get("Aliases") or []) if a]
        return chosen, str(details[chosen].get("Id") or info.get("NetworkID") or chosen), address, aliases

    def _network_attrs(self, name: str) -> dict[str, Any]:
        try:
            return dict(self._client.api.inspect_network(name))
        except (NotFound, APIError):
            return {}

    def _images_ran(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for service in self._started:
            containers = self.containers(service)
            ran = str((containers[0].attrs.get("Config") or {}).get("Image", "?")) if containers else "?"
            original, mapped = self._image_plan.get(service, ("", ""))
            if service not in self._image_plan:
                mapped_from = self.built_from.get(service)
                out[service] = f"{ran} (built, {mapped_from})" if mapped_from else f"{ran} (built)"
            elif mapped != original:
                out[service] = f"{ran} (for {original})"
            else:
                out[service] = ran
        return out

    def _image_ids(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for service in self._started:
            for container in self.containers(service):
                name = (container.attrs.get("Config") or {}).get("Image") or container.attrs.get("Image", "")
                out[str(name)] = str(container.attrs.get("Image", ""))
        return out

    def containers(self, service: str) -> list[Container]:
        """Every container of ``service`` (running or not), in replica order."""
        filters = {"label": [f"{L.NETWORK}={self.project}", f"{L.NODE}={service}"]}
        found = self._client.containers.list(all=True, filters=filters, ignore_removed=True)
        return sorted(found, key=lambda c: (int(c.labels.get("com.docker.compose.container-number", 0) or 0), c.name))

    def _check_known(self, name: str, what: str) -> None:
        services = P.services_of(self.config)
        P.check_services(services, [name], what)
        if name not in self._started:
            if profiles.service_profiles(services[name]):
                why = profiles.inactive_note(name, services[name])
            else:
                why = "pass it in services= or leave services=None"
            raise ComposeUsageError(
                f"{what}: service {name!r} was not started in this stack (started: {', '.join(self._started)}); {why}"
            )
