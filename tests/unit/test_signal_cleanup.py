"""The session's signal handlers leave alone a signal the process was started ignoring."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from pytest_netperf.plugin.docker_fixtures import _install_signal_cleanup


@pytest.fixture
def sigint_ignored() -> Iterator[None]:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


@pytest.mark.usefixtures("sigint_ignored")
def test_an_ignored_sigint_stays_ignored_and_sigterm_is_hooked() -> None:
    term_before = signal.getsignal(signal.SIGTERM)
    restore = _install_signal_cleanup("unit-test-session")
    try:
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN, "a background job's Ctrl-C must not clean up"
        assert signal.getsignal(signal.SIGTERM) not in (term_before, signal.SIG_IGN)
    finally:
        restore()
    assert signal.getsignal(signal.SIGTERM) == term_before
