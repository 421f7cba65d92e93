"""pytest-netperf: performance-regression gates for network infrastructure, as pytest tests.

The public API for test code; everything else is internal and may move::

    from pytest_netperf import Budget, with_query, Topology, Node, Resources, builders

A :class:`Node` may run the team's own files: ``Node("edge", "nginx", 80,
image="nginx:1.27", config="nginx/edge.conf", config_path="/etc/nginx/conf.d/default.conf",
resources=Resources(cpus=1))``.
"""

from __future__ import annotations

from pytest_netperf.budget.grammar import Budget, parse_budget
from pytest_netperf.errors import (
    BaselineError,
    BudgetSyntaxError,
    ComposeError,
    DriverError,
    ImageMissingError,
    InvalidMeasurement,
    NetperfError,
)
from pytest_netperf.measure.targets import with_query
from pytest_netperf.topology import builders
from pytest_netperf.topology.builders import (
    access_modes_topology,
    echo_topology,
    gateway_topology,
    sidecar_chain_topology,
)
from pytest_netperf.topology.model import Node, NodeKind, Target, Topology
from pytest_netperf.topology.render.files import ConfigPathError
from pytest_netperf.topology.resources import Resources
from pytest_netperf.topology.tls import TlsTermination
from pytest_netperf.verdict.status import Status
from pytest_netperf.version import __version__

__all__ = [
    "BaselineError",
    "Budget",
    "BudgetSyntaxError",
    "ComposeError",
    "ConfigPathError",
    "DriverError",
    "ImageMissingError",
    "InvalidMeasurement",
    "NetperfError",
    "Node",
    "NodeKind",
    "Resources",
    "Status",
    "Target",
    "TlsTermination",
    "Topology",
    "__version__",
    "access_modes_topology",
    "builders",
    "echo_topology",
    "gateway_topology",
    "parse_budget",
    "sidecar_chain_topology",
    "with_query",
]
