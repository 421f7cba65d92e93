"""One session's Compose stacks: the same arguments give the same running stack.

Under ``--netperf-base`` each stack is stood up twice: the head from the working tree and
its twin from the base revision's files (its own project, network and built images), and
the head's endpoints carry the twin's (:attr:`Endpoint.base`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from docker import DockerClient

from pytest_netperf.errors import ComposeError, StackUnchanged
from pytest_netperf.revision import BaseCheckout, changed_files, stack_inputs, unchanged
from pytest_netperf.revision.diff import UNCHANGED
from pytest_netperf.runtime.compose.cli import ComposeCli, find_compose
from pytest_netperf.runtime.compose.launcher import ComposeLauncher, StackSpec
from pytest_netperf.runtime.compose.project import services_of
from pytest_netperf.runtime.compose.stack import ComposeStack
from pytest_netperf.runtime.compose.twin import missing_note, twin_resources, twin_services
from pytest_netperf.runtime.resources import CoreSplit

__all__ = ["ComposeStacks"]


class ComposeStacks:
    """``stacks(path, services, env, project_dir, resources)`` -> a running :class:`ComposeStack`.

    Relative paths resolve against ``root``. A stack stays up until :meth:`down_all`; a
    bring-up that fails leaves nothing behind and is tried again by the next call. The
    Compose implementation is looked up at the first call (``ComposeUnavailable`` when none).
    ``split`` and ``service_keys`` are the launcher's (:class:`ComposeLauncher`).
    """

    def __init__(
        self,
        client: DockerClient,
        session_id: str,
        root: Path,
        image_overrides: Mapping[str, str] | None = None,
        driver_image: str | None = None,
        find: Callable[[], ComposeCli] = find_compose,
        on_started: Callable[[str, float], None] | None = None,
        base: Callable[[], BaseCheckout] | None = None,
        skip_unchanged: bool = False,
        split: CoreSplit | Literal["auto"] | None = "auto",
        service_keys: Mapping[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.root = root
        self.image_overrides = dict(image_overrides or {})
        self.driver_image = driver_image
        self._find = find
        self._on_started = on_started
        self._launcher: ComposeLauncher | None = None
        self._stacks: dict[tuple[str, StackSpec], ComposeStack] = {}
        self._base = base
        self._skip_unchanged = skip_unchanged
        self._split = split
        self._service_keys = dict(service_keys or {})

    @property
    def launcher(self) -> ComposeLauncher:
        """The launcher (finds the Compose implementation the first time)."""
        if self._launcher is None:
            self._launcher = ComposeLauncher(
                self._find(),
                self.client,
                self.session_id,
                worker=os.environ.get("PYTEST_XDIST_WORKER", "main"),
                image_overrides=self.image_overrides,
                driver_image=self.driver_image,
                split=self._split,
                service_keys=self._service_keys,
            )
        return self._launcher

    def __call__(
        self,
        path: str | Path,
        services: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        project_dir: str | Path | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> ComposeStack:
        spec = StackSpec.build(path, services, env, project_dir, resources, root=self.root)
        stack = self._stacks.get(("head", spec))
        if stack is not None:
            return stack
        if self._base is not None and self._skip_unchanged:
            self._skip_if_unchanged(spec, self._base())
        stack = self.launcher.up(spec)
        self._stacks[("head", spec)] = stack
        if self._on_started is not None:
            self._on_started(f"compose:{spec.stem}", stack.startup_s)
        if self._base is not None:
            self._pair_with_base(stack, spec, self._base())
        return stack

    def _skip_if_unchanged(self, spec: StackSpec, checkout: BaseCheckout) -> None:
        """StackUnchanged when every input file of ``spec`` is the same at the base revision."""
        if not checkout.exists(spec.file):
            return
        inputs = stack_inputs(spec.file, self.launcher.config_of(spec), checkout.root)
        if unchanged(changed_files(checkout.root, checkout.commit, inputs)):
            shown = spec.file.relative_to(checkout.root) if spec.file.is_relative_to(checkout.root) else spec.file
            raise StackUnchanged(
                f"{shown} and the files it uses are the same at the base revision {checkout.ref} ({checkout.short}): "
                "nothing to compare (--netperf-base-skip-unchanged)"
            )

    def _pair_with_base(self, stack: ComposeStack, spec: StackSpec, checkout: BaseCheckout) -> None:
        """Stand up ``spec``'s twin from the base revision's files and attach it to ``stack``;
        a Compose file that is not at the base revision leaves a note instead (NEW budgets)."""
        shown = spec.file.relative_to(checkout.root) if spec.file.is_relative_to(checkout.root) else spec.file
        if not checkout.exists(spec.file):
            stack.base_note = (
                f"{shown} does not exist at the base revision {checkout.ref} ({checkout.short}): "
                "nothing to compare with, recorded as NEW"
            )
            return
        revision = f"{checkout.ref} ({checkout.short})"
        twin = replace(
            spec,
            file=checkout.map_path(spec.file),
            project_dir=None if spec.project_dir is None else checkout.map_path(spec.project_dir),
        )
        try:
            chosen = self._twin_spec(stack, spec, twin, shown, revision)
            if chosen is None:
                return
            base = self.launcher.up(chosen, side="base")
        except ComposeError as exc:
            # the head is still measured; its budgets against the base are INVALID with this log
            stack.base_error = f"the base revision's stack ({checkout.ref}, {checkout.short}) did not come up: {exc}"
            return
        self._stacks[("base", spec)] = base
        if self._on_started is not None:
            self._on_started(f"compose:{spec.stem}@base", base.startup_s)
        inputs = stack_inputs(spec.file, stack.config, checkout.root)
        changes = changed_files(checkout.root, checkout.commit, inputs)
        described = "; ".join(change.describe() for change in changes)
        stack.attach_base(base, f"{revision}: {described or UNCHANGED}", revision=revision)

    def _twin_spec(
        self, stack: ComposeStack, spec: StackSpec, twin: StackSpec, shown: Path, revision: str
    ) -> StackSpec | None:
        """``twin`` with the head's ``services=`` and ``resources=`` the base revision has (a
        renamed service is not there); None, with the stack's base note, when it has none of them."""
        if spec.services is None and not spec.resources:
            return twin  # the twin starts its own services; endpoint() notes a head service it lacks
        base_services = list(services_of(self.launcher.config_of(twin)))
        services, missing = twin_services(spec.services, stack.services, base_services)
        if services == ():
            stack.base_note = "; ".join(
                missing_note(name, services_of(stack.config), base_services, revision, shown) for name in missing
            )
            return None
        return replace(twin, services=services, resources=twin_resources(spec.resources, base_services))

    @property
    def stacks(self) -> list[ComposeStack]:
        """The stacks brought up and not yet taken down, oldest first."""
        return list(self._stacks.values())

    def down_all(self) -> None:
        """Take every stack down (newest first); raise the first failure after trying all."""
        failures: list[Exception] = []
        while self._stacks:
            _, stack = self._stacks.popitem()
            try:
                stack.down()
            except Exception as exc:
                failures.append(exc)
        if failures:
            raise failures[0]
