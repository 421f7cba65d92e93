"""The ``netperf_base`` fixture: the pull request's base revision (``--netperf-base REF``).

The revision is materialised once per session, when the first stack asks for it, in a
folder the session's cleanup removes (crashes included); the terminal summary names REF,
its commit and what the head side is (the working tree, with its uncommitted changes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Optional

import pytest

from pytest_netperf.plugin.session import session_of
from pytest_netperf.revision import BaseCheckout, dirty_paths, repo_root
from pytest_netperf.runtime.docker import DockerRuntime


class BaseRevision:
    """``base()`` -> the session's :class:`BaseCheckout` of ``ref``, made at the first call."""

    def __init__(self, ref: str, root: Path, session_id: str, say: Callable[[str], None]) -> None:
        self.ref = ref
        self.root = root
        self.session_id = session_id
        self._say = say
        self._checkout: Optional[BaseCheckout] = None

    def __call__(self) -> BaseCheckout:
        if self._checkout is None:
            checkout = BaseCheckout(self.root, self.ref, self.session_id)
            self._checkout = checkout
            dirty = dirty_paths(repo_root(self.root))
            head = f"the working tree with {len(dirty)} uncommitted change(s)" if dirty else "the working tree"
            self._say(f"base revision {checkout.resolved.describe()}; head: {head}")
        return self._checkout

    def close(self) -> None:
        """Remove the materialised files (nothing when they were never needed)."""
        if self._checkout is not None:
            self._checkout.close()


@pytest.fixture(scope="session")
def netperf_base(request: pytest.FixtureRequest, netperf_docker: DockerRuntime) -> Iterator[Optional[BaseRevision]]:
    """The base revision of ``--netperf-base`` (None without the option), made on first use."""
    plugin = session_of(request.config)
    if not plugin.settings.base:
        yield None
        return
    base = BaseRevision(
        plugin.settings.base, request.config.rootpath, netperf_docker.session_id, plugin.report.notes.append
    )
    try:
        yield base
    finally:
        base.close()
