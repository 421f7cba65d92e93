"""The endpoint contract: what a runtime hands the gate for one target.

A target is a URL string or an :class:`Endpoint`. Every runtime (built-in topologies,
Compose stacks, the L4 paths) returns :class:`pytest_netperf.runtime.endpoints.Endpoint`,
which satisfies this protocol structurally; mypy checks that below, so a fourth runtime
knows what it must provide and the gate reads endpoints without probing attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Optional, Protocol, Union

from pytest_netperf.measure.counting_pass import CountingNode
from pytest_netperf.measure.system_costs import CostProbe
from pytest_netperf.results.model import WireCounters
from pytest_netperf.runtime.commands import CommandRunner
from pytest_netperf.tls_options import TlsOptions


class WireCounter(Protocol):
    """Reads a server interface's packet counters around an L4 round."""

    def read(self) -> Any:
        """The counters now (opaque to the gate)."""
        ...

    def between(self, first: Any, last: Any) -> WireCounters:
        """What went over the wire between two readings."""
        ...


class Endpoint(Protocol):
    """Where to send load for one target, where the driver runs, and what to read around a round."""

    @property
    def url(self) -> str:
        """The URL the driver loads (``http://``, ``tcp://``, ``iperf3://``)."""
        ...

    @property
    def runner(self) -> Optional[CommandRunner]:
        """Where the driver command runs; None runs it on the host."""
        ...

    @property
    def where(self) -> str:
        """Human description of where the driver runs (``host``, ``container on <network>``)."""
        ...

    @property
    def host_header(self) -> Optional[str]:
        """The Host header the target asks for, if any."""
        ...

    @property
    def images(self) -> Mapping[str, str]:
        """Image -> image id of every container of the system under test (the fingerprint)."""
        ...

    @property
    def facts(self) -> Mapping[str, str]:
        """Facts the report prints with each row (images, resources, changed files)."""
        ...

    @property
    def base(self) -> Optional[Endpoint]:
        """The same target at the base revision (``--netperf-base``), measured beside this one."""
        ...

    @property
    def base_note(self) -> str:
        """Why there is no base twin although one was asked for (the stack is new): NEW."""
        ...

    @property
    def base_error(self) -> str:
        """Why the base twin could not be stood up (its log): the base budgets are INVALID."""
        ...

    @property
    def costs(self) -> Optional[CostProbe]:
        """Reads what the system under test spends in each round (None: nothing to read)."""
        ...

    @property
    def wire(self) -> Optional[WireCounter]:
        """Counts packets on the server's interface around L4 rounds (None for HTTP)."""
        ...

    @property
    def counter(self) -> Optional[CountingNode]:
        """Runs the node the URL enters under valgrind or strace (the counting pass); None: cannot."""
        ...

    @property
    def tls(self) -> Optional[TlsOptions]:
        """How to speak TLS to an ``https://`` URL (the CA to trust); a test's ``tls=`` adds to it."""
        ...

    def guard(self) -> Optional[str]:
        """None while the URL still reaches the running system, else the reason (no load is sent)."""
        ...

    def map_urls(self, change: Callable[[str], str]) -> Endpoint:
        """A copy whose URL, and its base twin's, went through ``change`` (a query, a path)."""
        ...


#: The members of the contract, for the check of what a test hands the gate.
ENDPOINT_MEMBERS = tuple(name for name in vars(Endpoint) if not name.startswith("_"))

#: What ``netperf.measure`` and ``netperf.compare`` accept.
TargetLike = Union[str, Endpoint]


if TYPE_CHECKING:  # a static check: the runtimes' endpoint is one of ours
    from pytest_netperf.runtime.endpoints import Endpoint as RuntimeEndpoint

    def _runtime_endpoint_conforms(endpoint: RuntimeEndpoint) -> Endpoint:
        return endpoint
