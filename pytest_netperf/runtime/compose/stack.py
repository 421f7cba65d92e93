"""A team's Compose stack, brought up by a Compose implementation under the session's labels.

:class:`ComposeLauncher` reads the project (``compose config``), checks its images, writes
the override file (:func:`project.override_document`), builds, runs ``up -d``, and waits
until every started service runs (and is healthy where it has a healthcheck). The
:class:`ComposeStack` it returns gives endpoints for the gate and the containers of each
service; :meth:`ComposeStack.down` removes everything (Compose's ``down``, then whatever
still carries the project's label). A bring-up that fails leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from docker import DockerClient
from docker.errors import APIError, ImageNotFound, NotFound
from docker.models.containers import Container

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.session_folders import session_folder
from pytest_netperf.errors import (
    ComposeError,
    ComposeFileError,
    ComposeStartError,
    ComposeUsageError,
    ImageMissingError,
)
from pytest_netperf.images.resolve import pulling_enabled
from pytest_netperf.revision.diff import CHANGES_FACT
from pytest_netperf.runtime.cleanup import clean_network
from pytest_netperf.runtime.compose import project as P
from pytest_netperf.runtime.compose.cli import ComposeCli
from pytest_netperf.runtime.costs import Member, SystemProbe
from pytest_netperf.runtime.docker import LOG_TAIL_LINES, Endpoint, TopologyGuard
from pytest_netperf.runtime.listening import ListenWatch, listening_ports
from pytest_netperf.runtime.readiness import HttpReadiness, NodeNotReady
from pytest_netperf.runtime.resources import CoreSplit, default_split
from pytest_netperf.runtime.runners import ContainerRunner
from pytest_netperf.runtime.traced_clone import NodeTracer
from pytest_netperf.topology.resources import Resources

__all__ = ["ComposeLauncher", "ComposeStack", "StackSpec"]

#: Seconds allowed for each Compose command.
CONFIG_TIMEOUT_S = 60.0
BUILD_TIMEOUT_S = 900.0
UP_TIMEOUT_S = 300.0
DOWN_TIMEOUT_S = 120.0
#: Seconds ``down`` gives each container to stop before it is killed.
STOP_GRACE_S = 2
#: Seconds a port that is not known to be open gets to answer before ``endpoint()`` refuses it.
UNKNOWN_PORT_PROBE_S = 2.0
#: After ``up``, how long a service may take to show that it exits at start.
SETTLE_S = 0.3
#: Lines of Compose's own output quoted in an error.
OUTPUT_TAIL_LINES = 40


@dataclass(frozen=True)
class StackSpec:
    """What to stand up: the same spec gives the same stack within a session."""

    file: Path
    services: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    project_dir: Path | None = None
    resources: tuple[tuple[str, Resources], ...] = ()

    @classmethod
    def build(
        cls,
        file: str | Path,
        services: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        project_dir: str | Path | None = None,
        resources: Mapping[str, Any] | None = None,
        root: Path | None = None,
    ) -> StackSpec:
        """A spec with paths resolved against ``root`` (default: the working directory)."""
        base = root or Path.cwd()
        if isinstance(services, str):
            raise ComposeUsageError(f"services= must be a list of service names, not the string {services!r}")
        return cls(
            file=(base / Path(file)).resolve(),
            services=None if services is None else tuple(dict.fromkeys(str(s) for s in services)),
            env=tuple(sorted((str(k), str(v)) for k, v in (env or {}).items())),
            project_dir=None if project_dir is None else (base / Path(project_dir)).resolve(),
            resources=tuple(sorted(P.resources_from(resources).items())),
        )

    @property
    def stem(self) -> str:
        """The short name of the stack (``project.stack_stem``)."""
        return P.stack_stem(self.file)


@dataclass
class _Project:
    """The arguments every Compose command of one project shares."""

    cli: ComposeCli
    file: Path
    override: Path | None
    name: str
    project_dir: Path | None
    env: dict[str, str] = field(default_factory=dict)
    #: The file Compose runs instead of ``file`` (its normalised copy without host ports);
    #: ``file`` stays the team's, for every message.
    run_file: Path | None = None

    def args(self, *command: str) -> list[str]:
        main = self.run_file or self.file
        files = ["-f", str(main)] + (["-f", str(self.override)] if self.override else [])
        directory = ["--project-directory", str(self.project_dir)] if self.project_dir else []
        return [*files, "-p", self.name, *directory, *command]

    def run(self, *command: str, timeout_s: float) -> tuple[int, str]:
        """(exit status, the last lines of stdout and stderr) of ``<compose> <project args> command``."""
        done = self.execute(*command, timeout_s=timeout_s)
        return done.returncode, _tail((done.stdout or "") + (done.stderr or ""), OUTPUT_TAIL_LINES)

    def execute(self, *command: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
        """``<compose> <project args> command``, its output kept whole."""
        return self.cli.run(self.args(*command), timeout_s, env=self.env)


class ComposeLauncher:
    """Brings Compose stacks up for one session; every resource carries the session's labels."""

    def __init__(
        self,
        cli: ComposeCli,
        client: DockerClient,
        session_id: str,
        worker: str = "main",
        image_overrides: Mapping[str, str] | None = None,
        driver_image: str | None = None,
        ready_timeout_s: float = 60.0,
        poll_interval_s: float = 0.1,
        split: CoreSplit | None = None,
    ) -> None:
        self.cli = cli
        self.client = client
        self.session_id = session_id
        self.worker = worker
        self.image_overrides = dict(image_overrides or {})
        self.driver_image = driver_image
        self.ready_timeout_s = ready_timeout_s
        self.poll_interval_s = poll_interval_s
        self.split = split if split is not None else default_split()
        self._serial = 0

    def project_name(self, spec: StackSpec, side: str = "") -> str:
        """A new project name for ``spec`` (``project.project_name``); ``side`` (``base``) is
        added to the stem of a base revision's twin."""
        self._serial += 1
        stem = f"{spec.stem}-{side}" if side else spec.stem
        return P.project_name(self.session_id, self.worker, stem, self._serial)

    def up(self, spec: StackSpec, side: str = "") -> ComposeStack:
        """Stand ``spec`` up and return it running; on any failure nothing of it remains."""
        started = time.monotonic()
        if not spec.file.is_file():
            what = "is a directory, not a file" if spec.file.is_dir() else "does not exist"
            raise ComposeFileError(f"Compose file {spec.file} {what}")
        if spec.project_dir is not None and not spec.project_dir.is_dir():
            raise ComposeFileError(f"project_dir {spec.project_dir} (for {spec.file}) is not a directory")
        name = self.project_name(spec, side)
        project = _Project(self.cli, spec.file, None, name, spec.project_dir, dict(spec.env))
        timings: dict[str, float] = {}
        config = self._read_config(project, timings)
        services = P.started_services(config, spec.services)
        resources = P.effective_resources(config, dict(spec.resources), self.split)
        plan = P.image_plan(config, services, self.image_overrides)
        self._check_images(spec.file, plan)
        labels = L.resource_labels(self.session_id, topology=name, network=name)
        document = P.override_document(config, name, labels, self.image_overrides, resources)
        temp = session_folder(self.session_id, name.removeprefix(f"netperf-{self.session_id}-"))
        project.override = temp / "netperf-override.yml"
        project.override.write_text(P.override_yaml(document))
        if P.publishing_services(config):
            project.run_file = self._unpublished_copy(project, temp, timings)
        stack = ComposeStack(
            project=project,
            client=self.client,
            config=config,
            services=services,
            resources=resources,
            split=self.split,
            image_plan=plan,
            labels=labels,
            driver_image=self.driver_image,
            temp_dir=temp,
            ready_timeout_s=self.ready_timeout_s,
            poll_interval_s=self.poll_interval_s,
        )
        stack.timings = timings
        try:
            stack._bring_up(spec)
        except BaseException as failure:
            try:
                stack.down()
            except Exception as cleanup_failure:  # keep the original error in front
                add_note = getattr(failure, "add_note", None)  # Python 3.11+
                if add_note is not None:
                    add_note(f"cleanup after the failure also failed: {cleanup_failure}")
            raise
        stack.startup_s = time.monotonic() - started
        return stack

    def config_of(self, spec: StackSpec) -> dict[str, Any]:
        """The normalised configuration of ``spec`` (``compose config``), nothing started."""
        if not spec.file.is_file():
            raise ComposeFileError(f"Compose file {spec.file} does not exist")
        project = _Project(
            self.cli, spec.file, None, f"netperf-{self.session_id}-config", spec.project_dir, dict(spec.env)
        )
        return self._read_config(project, {})

    def _read_config(self, project: _Project, timings: dict[str, float]) -> dict[str, Any]:
        began = time.monotonic()
        done = project.execute("config", timeout_s=CONFIG_TIMEOUT_S)
        timings["config"] = time.monotonic() - began
        if done.returncode != 0:
            said = _tail((done.stderr or "") + (done.stdout or ""), OUTPUT_TAIL_LINES) or "(nothing)"
            raise ComposeFileError(
                f"invalid Compose file {project.file}: `{' '.join(project.cli.argv)} config` "
                f"(exit status {done.returncode}) said:\n{said}"
            )
        return P.parse_config(done.stdout, project.file)

    def _unpublished_copy(self, project: _Project, temp: Path, timings: dict[str, float]) -> Path:
        """The stack's configuration, variables not yet interpolated (Compose does that at ``up``
        with the same environment), with no port published on the host
        (:func:`~pytest_netperf.runtime.compose.project.without_host_ports`)."""
        began = time.monotonic()
        done = project.execute("config", "--no-interpolate", timeout_s=CONFIG_TIMEOUT_S)
        timings["config"] = timings.get("config", 0.0) + time.monotonic() - began
        if done.returncode != 0:
            said = _tail((done.stderr or "") + (done.stdout or ""), OUTPUT_TAIL_LINES) or "(nothing)"
            raise ComposeFileError(
                f"Compose file {project.file}: `{' '.join(project.cli.argv)} config --no-interpolate` "
                f"(exit status {done.returncode}), needed to leave its published host ports out, said:\n{said}"
            )
        raw = yaml.safe_load(done.stdout) or {}
        copy = temp / "netperf-stack.yml"
        copy.write_text(P.override_yaml(P.without_host_ports(raw)))
        if project.project_dir is None:  # relative paths and .env as from the team's file
            project.project_dir = project.file.parent
        return copy

    def _check_images(self, file: Path, plan: Mapping[str, tuple[str, str]]) -> None:
        missing: list[str] = []
        for service, (original, mapped) in sorted(plan.items()):
            if _image_present(self.client, mapped):
                continue
            if pulling_enabled():
                with contextlib.suppress(APIError, ImageNotFound):
                    self.client.images.pull(mapped)
                if _image_present(self.client, mapped):
                    continue
            missing.append(P.missing_image_message(service, original, mapped, pulling_enabled()))
        if missing:
            raise ImageMissingError(f"Compose file {file}: " + "\n".join(missing))


class ComposeStack:
    """A running Compose project: endpoints for the gate, the containers of each service, ``down()``."""

    def __init__(
        self,
        project: _Project,
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
        return [c for c in self._containers(name) if c.status == "running"]

    def logs(self, name: str) -> str:
        """stdout and stderr of every container of service ``name`` so far."""
        self._check_known(name, "logs()")
        return "".join(c.logs().decode(errors="replace") for c in self._containers(name))

    def endpoint(
        self, service: str, port: int = 80, path: str = "/", host: str | None = None, via_dns: bool = False
    ) -> Endpoint:
        """A target for ``netperf.measure``/``compare``: ``http://<address>:<port><path>`` from the host,
        or ``http://<service>:<port><path>`` from a driver container on the project's network
        (``via_dns=True``). ``host`` becomes the Host header. The port must be one the service
        is known to listen on or answer a probe; otherwise the error lists the known ports."""
        if not self._is_up:
            raise ComposeUsageError(f"stack {self.project} ({self.file}) is down")
        self._check_known(service, "endpoint()")
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise ComposeUsageError(f"endpoint({service!r}): port must be an integer in 1..65535, got {port!r}")
        if not path.startswith("/"):
            raise ComposeUsageError(f"endpoint({service!r}): path must start with '/', got {path!r}")
        containers = self.service(service)
        if not containers:
            raise ComposeStartError(f"service {service!r} of {self.file} is not running\n{self._diagnosis()}")
        container = containers[0]
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
        if self.base is not None:
            twin = self.base.endpoint(service, port, path, host, via_dns)
            return replace(
                self._endpoint(service, port, path, host, via_dns, guard, address, network),
                base=twin,
                facts={**self.facts(), CHANGES_FACT: self.base_changes},
            )
        endpoint = self._endpoint(service, port, path, host, via_dns, guard, address, network)
        return replace(endpoint, base_note=self.base_note, base_error=self.base_error)

    def tracer(self, service: str, port: int) -> NodeTracer:
        """Traced clones of ``service``'s first container serving on ``port`` (the cost pass). A
        service in another's network namespace (``network_mode: service:X``, a sidecar) is
        traced in a clone that joins a plain clone of X, as it joins X itself."""
        container = self.service(service)[0]
        root = self._root_container(service, container)
        network, _, _, _ = self._attachment(service, root)
        companion = root if root.id != container.id else None
        return NodeTracer(self._client, container, service, network, port, companion=companion)

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
    ) -> Endpoint:
        images, facts, costs = self._image_ids(), self.facts(), self.cost_probe()
        tracer = self.tracer(service, port)
        if via_dns:
            if self._driver_image is None:
                raise ComposeUsageError(
                    f"endpoint({service!r}, via_dns=True) runs the driver in a container, but no echo "
                    "(driver) image is known; build it with `netperf images build`"
                )
            runner = ContainerRunner(self._client, self._driver_image, network, self._labels)
            url = f"http://{service}:{port}{path}"
            return Endpoint(url, runner, runner.where, host, images, guard, facts, costs=costs, tracer=tracer)
        return Endpoint(
            f"http://{address}:{port}{path}", None, "host", host, images, guard, facts, costs=costs, tracer=tracer
        )

    def cost_probe(self) -> SystemProbe:
        """Reads what the stack's running containers spend per round, by service name (replicas
        summed); one-shot services that have exited are not part of it."""
        if self._probe is None:
            members = [
                Member(service, str(c.id), str(c.name))
                for service in self._started
                for c in self._containers(service)
                if c.status == "running"
            ]
            self._probe = SystemProbe(self._client, members)
        return self._probe

    def attach_base(self, base: ComposeStack, changes: str) -> None:
        """Pair this (head) stack with its twin at the base revision; ``changes`` describes the
        input files that differ (``unchanged`` when none do)."""
        self.base, self.base_changes = base, changes

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

    # ----------------------------------------------------------------- bring-up

    def _bring_up(self, spec: StackSpec) -> None:
        began = time.monotonic()
        buildable = [s for s in self._started if P.services_of(self.config)[s].get("build") is not None]
        if buildable:
            # --force-rm: a failing build step leaves no intermediate container behind
            code, output = self._project.run("build", "--force-rm", *buildable, timeout_s=BUILD_TIMEOUT_S)
            if code != 0:
                raise ComposeStartError(
                    f"building service(s) {', '.join(buildable)} of {self.file} failed (exit status {code}):\n{output}"
                )
        self.timings["build"] = time.monotonic() - began
        began = time.monotonic()
        code, output = self._project.run("up", "-d", "--no-build", *(spec.services or ()), timeout_s=UP_TIMEOUT_S)
        self.timings["up"] = time.monotonic() - began
        began = time.monotonic()
        if code != 0:
            raise ComposeStartError(
                f"`up` of {self.file} (project {self.project}) failed (exit status {code}):\n{output}"
                + (f"\n{diagnosis}" if (diagnosis := self._diagnosis()) else "")
            )
        self._check_running()
        self._wait_healthy()
        remaining = SETTLE_S - (time.monotonic() - began)
        if remaining > 0:
            time.sleep(remaining)
        self._check_running()
        self.timings["ready"] = time.monotonic() - began

    def _check_running(self) -> None:
        """ComposeStartError for the first started service with no container or an exited one."""
        for service in self._started:
            containers = self._containers(service)
            if not containers:
                raise ComposeStartError(f"service {service!r} of {self.file} has no container after `up`")
            for container in containers:
                problem = self._problem(service, container)
                if problem:
                    raise ComposeStartError(problem)

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self._ready_timeout_s
        for service in self._started:
            for container in self._containers(service):
                while True:
                    container.reload()
                    state = container.attrs.get("State") or {}
                    health = state.get("Health")
                    if not health or health.get("Status") == "healthy":
                        break
                    problem = self._problem(service, container)
                    if problem:
                        raise ComposeStartError(problem)
                    status = str(health.get("Status"))
                    if status == "unhealthy" or time.monotonic() >= deadline:
                        why = (
                            "is unhealthy"
                            if status == "unhealthy"
                            else (f"not healthy after {self._ready_timeout_s:g}s (health status {status})")
                        )
                        raise ComposeStartError(
                            f"service {service!r} of {self.file} {why}; last health check output: "
                            f"{_last_probe(health)}\n{_log_section(service, container)}"
                        )
                    time.sleep(self._poll_interval_s)

    def _problem(self, service: str, container: Container) -> str | None:
        """Why ``container`` does not count as started (None when it runs, or finished as meant)."""
        with contextlib.suppress(NotFound):
            container.reload()
        state = container.attrs.get("State") or {}
        status = str(state.get("Status", "?"))
        code = state.get("ExitCode")
        if status in ("exited", "dead"):
            if status == "exited" and code == 0 and P.completed_ok(self.config, service):
                return None
            return (
                f"service {service!r} of {self.file} exited at start with exit code {code}"
                f"{' (' + state['Error'] + ')' if state.get('Error') else ''}\n{_log_section(service, container)}"
            )
        if state.get("Restarting") or int(container.attrs.get("RestartCount") or 0) > 0:
            return (
                f"service {service!r} of {self.file} keeps restarting "
                f"({container.attrs.get('RestartCount')} restarts, last exit code {code})\n"
                f"{_log_section(service, container)}"
            )
        return None

    def _diagnosis(self) -> str:
        """One section per container of the project that exited, restarts or is unhealthy."""
        sections: list[str] = []
        for service in self._started:
            for container in self._containers(service):
                problem = self._problem(service, container)
                health = (container.attrs.get("State") or {}).get("Health") or {}
                if problem:
                    sections.append(problem)
                elif health.get("Status") == "unhealthy":
                    sections.append(
                        f"service {service!r} is unhealthy; last health check output: {_last_probe(health)}\n"
                        f"{_log_section(service, container)}"
                    )
        return "\n".join(sections)

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
                f"service {service!r} of {self.file}: port {port} not ready: {exc}\n{_log_section(service, container)}"
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
            containers = self._containers(service)
            ran = str((containers[0].attrs.get("Config") or {}).get("Image", "?")) if containers else "?"
            original, mapped = self._image_plan.get(service, ("", ""))
            if service not in self._image_plan:
                out[service] = f"{ran} (built)"
            elif mapped != original:
                out[service] = f"{ran} (for {original})"
            else:
                out[service] = ran
        return out

    def _image_ids(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for service in self._started:
            for container in self._containers(service):
                name = (container.attrs.get("Config") or {}).get("Image") or container.attrs.get("Image", "")
                out[str(name)] = str(container.attrs.get("Image", ""))
        return out

    def _containers(self, service: str) -> list[Container]:
        filters = {"label": [f"{L.NETWORK}={self.project}", f"{L.NODE}={service}"]}
        found = self._client.containers.list(all=True, filters=filters, ignore_removed=True)
        return sorted(found, key=lambda c: (int(c.labels.get("com.docker.compose.container-number", 0) or 0), c.name))

    def _check_known(self, name: str, what: str) -> None:
        services = P.services_of(self.config)
        P.check_services(services, [name], what)
        if name not in self._started:
            raise ComposeUsageError(
                f"{what}: service {name!r} was not started in this stack (started: {', '.join(self._started)}); "
                "pass it in services= or leave services=None"
            )


def _image_present(client: DockerClient, image: str) -> bool:
    try:
        client.images.get(image)
    except ImageNotFound:
        return False
    except APIError as exc:
        if exc.status_code == 404:
            return False
        raise
    return True


def _last_probe(health: Mapping[str, Any]) -> str:
    log = health.get("Log") or []
    if not log:
        return "(no health check has run yet)"
    last = log[-1] or {}
    output = str(last.get("Output", "")).strip() or "(no output)"
    return f"exit code {last.get('ExitCode')}: {output[-1000:]}"


def _log_section(service: str, container: Container) -> str:
    try:
        text = container.logs(tail=LOG_TAIL_LINES).decode(errors="replace").rstrip("\n") or "(no output)"
    except Exception as exc:  # the container is already gone
        text = f"(logs unavailable: {exc})"
    return f"--- last {LOG_TAIL_LINES} log lines of {service} ({container.name}) ---\n{text}"


def _tail(text: str, lines: int) -> str:
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])
