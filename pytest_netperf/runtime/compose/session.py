"""One session's Compose stacks: the same arguments give the same running stack."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from docker import DockerClient

from pytest_netperf.runtime.compose.cli import ComposeCli, find_compose
from pytest_netperf.runtime.compose.stack import ComposeLauncher, ComposeStack, StackSpec

__all__ = ["ComposeStacks"]


class ComposeStacks:
    """``stacks(path, services, env, project_dir, resources)`` -> a running :class:`ComposeStack`.

    Relative paths resolve against ``root``. A stack stays up until :meth:`down_all`; a
    bring-up that fails leaves nothing behind and is tried again by the next call. The
    Compose implementation is looked up at the first call (``ComposeUnavailable`` when none).
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
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.root = root
        self.image_overrides = dict(image_overrides or {})
        self.driver_image = driver_image
        self._find = find
        self._on_started = on_started
        self._launcher: ComposeLauncher | None = None
        self._stacks: dict[StackSpec, ComposeStack] = {}

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
        stack = self._stacks.get(spec)
        if stack is not None:
            return stack
        stack = self.launcher.up(spec)
        self._stacks[spec] = stack
        if self._on_started is not None:
            self._on_started(f"compose:{spec.stem}", stack.startup_s)
        return stack

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
