"""Bringing a team's Compose stack up under the session's labels: config, images, override, build, up, ready.

:class:`ComposeLauncher` reads the project (``compose config``), checks its images, writes
the override file (:func:`project.override_document`), builds, runs ``up -d``, and waits
until every started service runs (and is healthy where it has a healthcheck); it returns a
running :class:`~pytest_netperf.runtime.compose.stack.ComposeStack`. A bring-up that fails
leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from docker import DockerClient
from docker.errors import APIError, ImageNotFound

from pytest_netperf.engine import labels as L
from pytest_netperf.engine.session_folders import session_folder
from pytest_netperf.errors import ComposeFileError, ComposeStartError, ComposeUsageError, ImageMissingError
from pytest_netperf.images.resolve import map_image, pulling_enabled
from pytest_netperf.runtime.compose import dockerfile as D
from pytest_netperf.runtime.compose import project as P
from pytest_netperf.runtime.compose.cli import ComposeCli
from pytest_netperf.runtime.compose.commands import (
    OUTPUT_TAIL_LINES,
    ComposeVariableWarning,
    ProjectCommands,
    tail,
    unset_variables,
    unset_variables_message,
)
from pytest_netperf.runtime.compose.diagnostics import last_probe, log_section, problem
from pytest_netperf.runtime.compose.profiles import active_profiles
from pytest_netperf.runtime.compose.stack import ComposeStack
from pytest_netperf.runtime.resources import CoreSplit, default_split
from pytest_netperf.topology.resources import Resources

__all__ = ["ComposeLauncher", "StackSpec"]

#: Seconds allowed for each Compose command.
CONFIG_TIMEOUT_S = 60.0
BUILD_TIMEOUT_S = 900.0
UP_TIMEOUT_S = 300.0
#: After ``up``, how long a service may take to show that it exits at start.
SETTLE_S = 0.3


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


class ComposeLauncher:
    """Brings Compose stacks up for one session; every resource carries the session's labels.

    ``split`` ("auto": :func:`default_split`; None: none) puts services without a cpuset on the
    system-under-test cores.
    """

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
        split: CoreSplit | Literal["auto"] | None = "auto",
        service_keys: Mapping[str, Any] | None = None,
    ) -> None:
        self.cli = cli
        self.client = client
        self.session_id = session_id
        self.worker = worker
        self.image_overrides = dict(image_overrides or {})
        self.driver_image = driver_image
        self.ready_timeout_s = ready_timeout_s
        self.poll_interval_s = poll_interval_s
        self.split: CoreSplit | None = default_split() if split == "auto" else split
        #: Keys every service gets in the override file (the weighted cgroup: ``cgroup_parent``).
        self.service_keys = dict(service_keys or {})
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
        project = ProjectCommands(self.cli, spec.file, None, name, spec.project_dir, dict(spec.env))
        timings: dict[str, float] = {}
        config = self._read_config(project, timings)
        services = P.started_services(config, spec.services, self.active_profiles(spec))
        resources = P.effective_resources(config, dict(spec.resources), self.split)
        plan = P.image_plan(config, services, self.image_overrides)
        self._check_images(spec.file, plan)
        labels = L.resource_labels(self.session_id, topology=name, network=name)
        temp = session_folder(self.session_id, name.removeprefix(f"netperf-{self.session_id}-"))
        try:
            builds = D.mapped_builds(config, services, self.image_overrides, temp)
            self._check_base_images(spec.file, builds)
            dockerfiles = {service: build.dockerfile for service, build in builds.items()}
            document = P.override_document(
                config, name, labels, self.image_overrides, resources, dockerfiles, self.service_keys
            )
            project.override = temp / "netperf-override.yml"
            project.override.write_text(P.override_yaml(document))
            if P.publishing_services(config):
                project.run_file = self._unpublished_copy(project, temp, timings, config)
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
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
        stack.built_from = {
            service: ", ".join(f"FROM {mapped} for {original}" for original, mapped, _ in build.changed)
            for service, build in builds.items()
        }
        try:
            self._bring_up(stack, project, spec)
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

    @staticmethod
    def active_profiles(spec: StackSpec) -> frozenset[str]:
        """The Compose profiles active for ``spec``: ``COMPOSE_PROFILES`` of its ``env``, this
        process's environment or the project's ``.env`` file, as Compose reads them."""
        folder = spec.project_dir or spec.file.parent
        return active_profiles({**os.environ, **dict(spec.env)}, folder / ".env")

    def config_of(self, spec: StackSpec) -> dict[str, Any]:
        """The normalised configuration of ``spec`` (``compose config``), nothing started."""
        if not spec.file.is_file():
            raise ComposeFileError(f"Compose file {spec.file} does not exist")
        project = ProjectCommands(
            self.cli, spec.file, None, f"netperf-{self.session_id}-config", spec.project_dir, dict(spec.env)
        )
        return self._read_config(project, {})

    def _read_config(self, project: ProjectCommands, timings: dict[str, float]) -> dict[str, Any]:
        began = time.monotonic()
        done = project.execute("config", timeout_s=CONFIG_TIMEOUT_S)
        timings["config"] = time.monotonic() - began
        if done.returncode != 0:
            said = tail((done.stderr or "") + (done.stdout or ""), OUTPUT_TAIL_LINES) or "(nothing)"
            raise ComposeFileError(
                f"invalid Compose file {project.file}: `{' '.join(project.cli.argv)} config` "
                f"(exit status {done.returncode}) said:\n{said}"
            )
        unset = unset_variables(done.stderr or "")
        if unset:
            warnings.warn(ComposeVariableWarning(unset_variables_message(project.file, unset)), stacklevel=3)
        return P.parse_config(done.stdout, project.file)

    def _unpublished_copy(
        self, project: ProjectCommands, temp: Path, timings: dict[str, float], config: Mapping[str, Any]
    ) -> Path:
        """The stack's configuration with no port published on the host
        (:func:`~pytest_netperf.runtime.compose.project.without_host_ports`): as ``config
        --no-interpolate`` prints it (Compose interpolates at ``up`` with the same environment),
        or, where that cannot be printed (Compose v1 refuses a port written with a variable,
        ``"${HTTP_PORT:-80}:80"``, before interpolation), the interpolated ``config`` as Compose
        printed it (literal ``$`` escaped as ``$$``)."""
        began = time.monotonic()
        done = project.execute("config", "--no-interpolate", timeout_s=CONFIG_TIMEOUT_S)
        timings["config"] = timings.get("config", 0.0) + time.monotonic() - began
        raw = (yaml.safe_load(done.stdout) or {}) if done.returncode == 0 else dict(config)
        copy = temp / "netperf-stack.yml"
        copy.write_text(P.override_yaml(P.without_host_ports(raw)))
        if project.project_dir is None:  # relative paths and .env as from the team's file
            project.project_dir = project.file.parent
        return copy

    def _present_or_pulled(self, image: str) -> bool:
        """True when ``image`` is here, or pulled now (only with NETPERF_PULL=1)."""
        if _image_present(self.client, image):
            return True
        if pulling_enabled():
            with contextlib.suppress(APIError, ImageNotFound):
                self.client.images.pull(image)
            return _image_present(self.client, image)
        return False

    def _check_images(self, file: Path, plan: Mapping[str, tuple[str, str]]) -> None:
        missing: list[str] = []
        for service, (original, mapped) in sorted(plan.items()):
            if self._present_or_pulled(mapped):
                continue
            missing.append(P.missing_image_message(service, original, mapped, pulling_enabled()))
        if missing:
            raise ImageMissingError(f"Compose file {file}: " + "\n".join(missing))

    def _check_base_images(self, file: Path, builds: Mapping[str, D.MappedBuild]) -> None:
        """ImageMissingError when an image the mapping put in a Dockerfile is absent (and cannot be
        pulled: only with NETPERF_PULL=1 is it tried)."""
        missing = [
            D.missing_base_message(service, build.source, original, mapped, line)
            for service, build in sorted(builds.items())
            for original, mapped, line in build.changed
            if not self._present_or_pulled(mapped)
        ]
        if missing:
            raise ImageMissingError(f"Compose file {file}: " + "\n".join(missing))

    def _build_diagnosis(self, config: Mapping[str, Any], buildable: Sequence[str]) -> str:
        """Why a failed build may have failed: Dockerfile images absent here (not mapped, not
        pullable) and FROM lines the image mapping cannot reach; "" when none."""
        notes: list[str] = []
        services = P.services_of(config)
        for name in buildable:
            service = services[name]
            unmappable = D.unmappable_note(name, service, self.image_overrides)
            if unmappable:
                notes.append(unmappable)
            source = D.dockerfile_of(service)
            try:
                text = source.read_text(encoding="utf-8") if source is not None else ""
            except (OSError, UnicodeDecodeError):
                continue
            args = D.build_args(service.get("build") or {})
            for image, line in D.image_references(text, args):
                mapped = map_image(image, self.image_overrides)
                if source is not None and not _image_present(self.client, mapped):
                    notes.append(D.missing_base_message(name, source, image, mapped, line))
        return "\n".join(dict.fromkeys(notes))

    def _bring_up(self, stack: ComposeStack, project: ProjectCommands, spec: StackSpec) -> None:
        """Build, ``up -d``, then wait until every started service runs (and is healthy)."""
        began = time.monotonic()
        buildable = [s for s in stack.services if P.services_of(stack.config)[s].get("build") is not None]
        if buildable:
            # --force-rm: a failing build step leaves no intermediate container behind
            code, output = project.run("build", "--force-rm", *buildable, timeout_s=BUILD_TIMEOUT_S)
            if code != 0:
                diagnosis = self._build_diagnosis(stack.config, buildable)
                raise ComposeStartError(
                    f"building service(s) {', '.join(buildable)} of {stack.file} failed (exit status {code})"
                    + (f":\n{diagnosis}\nCompose said:\n{output}" if diagnosis else f":\n{output}")
                )
        stack.timings["build"] = time.monotonic() - began
        began = time.monotonic()
        code, output = project.run("up", "-d", "--no-build", *(spec.services or ()), timeout_s=UP_TIMEOUT_S)
        stack.timings["up"] = time.monotonic() - began
        began = time.monotonic()
        if code != 0:
            raise ComposeStartError(
                f"`up` of {stack.file} (project {stack.project}) failed (exit status {code}):\n{output}"
                + (f"\n{diagnosis}" if (diagnosis := stack.diagnosis()) else "")
            )
        self._check_running(stack)
        self._wait_healthy(stack)
        remaining = SETTLE_S - (time.monotonic() - began)
        if remaining > 0:
            time.sleep(remaining)
        self._check_running(stack)
        stack.timings["ready"] = time.monotonic() - began

    def _check_running(self, stack: ComposeStack) -> None:
        """ComposeStartError for the first started service with no container or an exited one."""
        for service in stack.services:
            containers = stack.containers(service)
            if not containers:
                raise ComposeStartError(f"service {service!r} of {stack.file} has no container after `up`")
            for container in containers:
                found = problem(stack.config, stack.file, service, container)
                if found:
                    raise ComposeStartError(found)

    def _wait_healthy(self, stack: ComposeStack) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        for service in stack.services:
            for container in stack.containers(service):
                while True:
                    container.reload()
                    state = container.attrs.get("State") or {}
                    health = state.get("Health")
                    if not health or health.get("Status") == "healthy":
                        break
                    found = problem(stack.config, stack.file, service, container)
                    if found:
                        raise ComposeStartError(found)
                    status = str(health.get("Status"))
                    if status == "unhealthy" or time.monotonic() >= deadline:
                        why = (
                            "is unhealthy"
                            if status == "unhealthy"
                            else (f"not healthy after {self.ready_timeout_s:g}s (health status {status})")
                        )
                        raise ComposeStartError(
                            f"service {service!r} of {stack.file} {why}; last health check output: "
                            f"{last_probe(health)}\n{log_section(service, container)}"
                        )
                    time.sleep(self.poll_interval_s)


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
