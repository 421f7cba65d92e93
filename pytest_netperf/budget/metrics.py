"""The metrics registry: every metric's name, family, unit, direction, extractor and format.

This is the one place that knows what ``p90`` or ``rps`` means. The budget grammar,
the statistics, baselines, reports, plots and the CLI read it; adding a metric is one
:class:`Metric` entry in :data:`REGISTRY` plus its extractor.

Values are canonical: latency and CPU time in nanoseconds, throughput in responses per
second, fractions as fractions (0.1 for 10%), counts as counts, cores as cores, memory in
bytes.

What the system under test spent is read per node and scoped in the name:
``cpu_per_request[edge]``, ``mem[envoy-*]``, ``cpu[*]`` (:data:`SYSTEM_METRICS`); :func:`get`
builds such a metric from its name.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Optional

from pytest_netperf.budget.families import COUNTED_FAMILIES, FAMILY_UNITS, Better, Family, format_value
from pytest_netperf.results.counted import COUNTING_TOOLS, CountedCost
from pytest_netperf.results.model import RoundResult, SystemCosts

Extractor = Callable[["RoundResult"], float]


@dataclass(frozen=True)
class Metric:
    """One metric: how it is read from a round, which way is better, how it is shown."""

    name: str
    family: Family
    better: Better
    extract: Extractor
    description: str
    #: Kept in readable form in baseline files next to the full rounds.
    stored: bool = True
    #: For a latency percentile: which one (0-100); None for every other metric.
    percentile: Optional[float] = None
    #: For a metric of the system under test: the node-name patterns it sums over.
    scope: tuple[str, ...] = ()
    #: Read from the round's latency histogram (so a round needs samples for it).
    from_histogram: bool = False
    #: For a fraction: what it is a share of in a round (requests attempted, datagrams sent),
    #: so the rounds are pooled (the sum of the parts over the sum of the wholes) when judged.
    weight: Optional[Extractor] = None

    @property
    def unit(self) -> str:
        """Canonical unit: ``ns``, ``responses/s``, ``count`` or ``fraction``."""
        return FAMILY_UNITS[self.family]

    @property
    def exact(self) -> bool:
        """Counts and fractions are judged exactly, without a confidence interval."""
        return self.family in (Family.COUNT, Family.FRACTION)

    @property
    def counted(self) -> bool:
        """Counted by a counting pass (instructions, system calls), not read per round."""
        return self.family in COUNTED_FAMILIES

    @property
    def higher_is_better(self) -> bool:
        """True for throughput-like metrics (a ratio below 1 is a regression)."""
        return self.better is Better.HIGHER

    def value(self, round_result: RoundResult) -> float:
        """This metric's value in one round."""
        return float(self.extract(round_result))

    def format(self, value: Optional[float]) -> str:
        """A value for people, e.g. ``1.25ms``, ``12,345 rps``, ``0.10%``, ``3``."""
        return format_value(self.family, value)


# ----- extractors ---------------------------------------------------------------------
def _percentile(q: float) -> Extractor:
    return lambda r: r.latency.percentile_ns(q)


def _errors(r: RoundResult) -> float:
    return float(r.error_count)


def _transport(r: RoundResult, name: str) -> Any:
    if r.transport is None:
        raise MetricUnavailable(f"{name}: an L4 metric; this round is HTTP (measure an iperf3:// or tcp:// target)")
    return r.transport


def _gbps(r: RoundResult) -> float:
    t = _transport(r, "gbps")
    if t.protocol == "tcp-rr":
        raise MetricUnavailable("gbps: a throughput metric of iperf3 rounds; a tcp:// round measures latency")
    return float(t.received_bps) / 1e9


def _pps(r: RoundResult) -> float:
    t = _transport(r, "pps")
    if t.protocol == "udp" and t.received_pps is not None:
        return float(t.received_pps)
    if t.wire is None or t.wire.span_s <= 0:
        raise MetricUnavailable("pps: no interface counters of the server were read in this round")
    return t.wire.packets_per_s


def _udp_only(name: str, field_name: str, scale: float = 1.0) -> Extractor:
    def extract(r: RoundResult) -> float:
        value = getattr(_transport(r, name), field_name)
        if value is None:
            raise MetricUnavailable(
                f"{name}: a UDP metric; this round is {r.transport.protocol if r.transport else '?'}"
            )
        return float(value) * scale

    return extract


_LATENCY = [
    ("p50", 50.0, True),
    ("p75", 75.0, False),
    ("p90", 90.0, True),
    ("p95", 95.0, False),
    ("p99", 99.0, True),
    ("p999", 99.9, True),
]

#: Every metric, by name, in the order reports list them.
REGISTRY: dict[str, Metric] = {
    "rps": Metric("rps", Family.RATE, Better.HIGHER, lambda r: r.achieved_rps, "responses per second"),
    **{
        name: Metric(
            name,
            Family.LATENCY,
            Better.LOWER,
            _percentile(q),
            f"{q:g}th percentile latency from the intended send time",
            stored=stored,
            percentile=q,
            from_histogram=True,
        )
        for name, q, stored in _LATENCY
    },
    "mean": Metric(
        "mean", Family.LATENCY, Better.LOWER, lambda r: r.latency.mean_ns, "mean latency", from_histogram=True
    ),
    "max": Metric(
        "max", Family.LATENCY, Better.LOWER, lambda r: r.latency.max_ns, "largest latency", from_histogram=True
    ),
    "errors": Metric("errors", Family.COUNT, Better.LOWER, _errors, "errors of every kind"),
    "error_rate": Metric(
        "error_rate",
        Family.FRACTION,
        Better.LOWER,
        lambda r: r.error_rate,
        "errors over attempted requests",
        weight=lambda r: float(r.ok + r.error_count),
    ),
    "sockets": Metric(
        "sockets",
        Family.COUNT,
        Better.LOWER,
        lambda r: float(r.sockets_opened),
        "sockets the driver opened",
    ),
    "gbps": Metric(
        "gbps",
        Family.BITRATE,
        Better.HIGHER,
        _gbps,
        "payload gigabits per second the receiver got (iperf3)",
        stored=False,
    ),
    "pps": Metric(
        "pps",
        Family.PACKET_RATE,
        Better.HIGHER,
        _pps,
        "packets per second: UDP datagrams the iperf3 server received, else packets (both ways) "
        "the server's interface counted",
        stored=False,
    ),
    "loss": Metric(
        "loss",
        Family.FRACTION,
        Better.LOWER,
        _udp_only("loss", "loss"),
        "UDP datagrams lost over those sent (iperf3)",
        stored=False,
        weight=_udp_only("loss", "packets_sent"),
    ),
    "jitter": Metric(
        "jitter",
        Family.LATENCY,
        Better.LOWER,
        _udp_only("jitter", "jitter_ns"),
        "UDP inter-arrival jitter at the receiver (iperf3, RFC 3550)",
        stored=False,
    ),
}


#: Metrics that count errors: a test with a budget on one of them allows errors.
ERROR_METRICS = ("errors", "error_rate")


# ----- what the system under test spent, per node ----------------------------------------
class MetricUnavailable(KeyError):
    """A round cannot give this metric: no costs were read, or the scope matches no node."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class SystemMetric:
    """A metric of the system under test, before it is scoped to nodes."""

    name: str
    family: Family
    description: str


#: The metrics read from the cgroups of the system under test; written ``name[scope]``.
SYSTEM_METRICS: dict[str, SystemMetric] = {
    m.name: m
    for m in (
        SystemMetric(
            "cpu_per_request",
            Family.CPU_TIME,
            "CPU time (user + system) of the scoped nodes per response served",
        ),
        SystemMetric("cpu", Family.CORES, "cores the scoped nodes kept busy while serving the round's rate"),
        SystemMetric("mem", Family.BYTES, "working set of the scoped nodes at the end of the round"),
        SystemMetric("mem_peak", Family.BYTES, "largest working set of the scoped nodes sampled during the round"),
    )
}
SYSTEM_METRICS.update(
    {
        tool.metric: SystemMetric(
            tool.metric,
            Family(tool.family),
            f"{tool.family} per request of the scoped node, counted under {tool.program} by a counting pass",
        )
        for tool in COUNTING_TOOLS.values()
    }
)
#: The tool of the counting pass that counts each counted metric.
COUNTED_BY = {tool.metric: tool.name for tool in COUNTING_TOOLS.values()}
_SCOPED = re.compile(r"^(?P<base>[a-z_]+)\[(?P<scope>[^\[\]]*)\]$")
_SCOPE_PATTERN = re.compile(r"^[A-Za-z0-9_.*?-]+$")


def split_scoped(name: str) -> Optional[tuple[str, tuple[str, ...]]]:
    """``cpu[edge,envoy-*]`` -> ``("cpu", ("edge", "envoy-*"))``; None for any other name.
    ValueError when the brackets hold no valid node pattern."""
    match = _SCOPED.match(name.strip())
    if match is None or match.group("base") not in SYSTEM_METRICS:
        return None
    patterns = tuple(p.strip() for p in match.group("scope").split(","))
    bad = [p for p in patterns if not _SCOPE_PATTERN.match(p)]
    if bad or not patterns:
        raise ValueError(
            f"{name!r}: the brackets name nodes or services, e.g. [edge], [envoy-*], [app,db] or [*]; "
            f"not {', '.join(repr(p) for p in bad) or 'nothing'}"
        )
    base = match.group("base")
    if base in COUNTED_BY and (len(patterns) > 1 or any(c in patterns[0] for c in "*?")):
        raise ValueError(
            f"{name!r}: a counting pass counts one node: the one the target enters, run under "
            f"{COUNTING_TOOLS[COUNTED_BY[base]].program}; name it, e.g. {base}[edge] ([*], a list or a "
            "pattern would mean every matching node, as for cpu[*], which a counting pass does not count)"
        )
    return base, patterns


def scope_nodes(system: SystemCosts, scope: tuple[str, ...]) -> list[str]:
    """The nodes of ``system`` that ``scope``'s patterns match (shell-style, case-sensitive)."""
    return [node for node in system.nodes if any(fnmatchcase(node, pattern) for pattern in scope)]


def _system_extractor(base: str, scope: tuple[str, ...], name: str) -> Extractor:
    def extract(r: RoundResult) -> float:
        if base in COUNTED_BY:
            raise MetricUnavailable(f"{name}: counted by a counting pass, not in a round")
        system = r.system
        if system is None:
            raise MetricUnavailable(f"{name}: this round has no system-under-test costs (a plain URL target)")
        nodes = scope_nodes(system, scope)
        if not nodes:
            raise MetricUnavailable(f"{name}: no node matches; the nodes are {', '.join(system.nodes) or 'none'}")
        spent = [system.nodes[n] for n in nodes]
        cpu_ns = float(sum(n.cpu_ns for n in spent))
        if base == "mem":
            return float(sum(n.mem_bytes for n in spent))
        if base == "mem_peak":
            return float(sum(n.mem_peak_bytes for n in spent))
        if base == "cpu" and (not system.served or r.achieved_rps <= 0):
            return cpu_ns / 1e9 / system.span_s if system.span_s > 0 else math.nan
        if not system.served:
            raise MetricUnavailable(f"{name}: no response was served in the round")
        per_request = cpu_ns / system.served
        # cores at the round's rate; the sampled span also holds the driver's start and exit
        return per_request * r.achieved_rps / 1e9 if base == "cpu" else per_request

    return extract


@functools.lru_cache(maxsize=512)
def _scoped_metric(name: str) -> Optional[Metric]:
    parts = split_scoped(name)
    if parts is None:
        return None
    base, scope = parts
    system = SYSTEM_METRICS[base]
    canonical = f"{base}[{','.join(scope)}]"
    return Metric(
        canonical,
        system.family,
        Better.LOWER,
        _system_extractor(base, scope, canonical),
        f"{system.description} ({', '.join(scope)})",
        stored=False,
        scope=scope,
    )


def get(name: str) -> Metric:
    """The metric called ``name`` (``cpu_per_request[edge]`` too); KeyError listing the known
    names otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        pass
    try:
        scoped = _scoped_metric(name)
    except ValueError as exc:
        raise KeyError(str(exc)) from None
    if scoped is None:
        known = ", ".join([*REGISTRY, *(f"{m}[node]" for m in SYSTEM_METRICS)])
        raise KeyError(f"unknown metric {name!r}; known: {known}")
    return scoped


def tool_of(name: str) -> str:
    """The cost-pass tool (``instructions``, ``syscalls``) that counts counted metric ``name``."""
    parts = split_scoped(name)
    if parts is None or parts[0] not in COUNTED_BY:
        raise KeyError(f"{name!r} is not counted by a counting pass")
    return COUNTED_BY[parts[0]]


def scoped_costs(name: str, costs: Mapping[str, CountedCost]) -> dict[str, CountedCost]:
    """node -> marginal cost of the nodes counted metric ``name`` is scoped to
    (MetricUnavailable when none of ``costs`` matches)."""
    metric = get(name)
    scoped = {node: cost for node, cost in costs.items() if any(fnmatchcase(node, p) for p in metric.scope)}
    if not scoped:
        raise MetricUnavailable(f"{name}: no counted node matches; counted: {', '.join(costs) or 'none'}")
    return scoped


def counted_values(name: str, costs: Mapping[str, CountedCost]) -> list[float]:
    """Per-repetition values of counted metric ``name`` from node -> marginal cost of its
    tool: the scoped nodes' costs summed repetition by repetition."""
    scoped = list(scoped_costs(name, costs).values())
    repetitions = min(len(cost.per_request) for cost in scoped)
    return [sum(cost.per_request[i] for cost in scoped) for i in range(repetitions)]


def metric_value(round_result: RoundResult, name: str) -> float:
    """A scalar metric of one round by name (``rps``, ``p90``, ``cpu_per_request[edge]`` …)."""
    return get(name).value(round_result)


def names(*families: Family) -> tuple[str, ...]:
    """Metric names, optionally only of the given families, in registry order."""
    return tuple(m.name for m in REGISTRY.values() if not families or m.family in families)


def stored_names() -> tuple[str, ...]:
    """Metrics kept in readable form in baseline files."""
    return tuple(m.name for m in REGISTRY.values() if m.stored)


def judged_names() -> tuple[str, ...]:
    """Metrics judged with confidence intervals (whose A/A noise calibration measures)."""
    return tuple(m.name for m in REGISTRY.values() if not m.exact)


def units() -> dict[str, str]:
    """``{metric: canonical unit}`` for every metric (written into baseline files)."""
    return {m.name: m.unit for m in REGISTRY.values()}


def format_metric(name: str, value: Any) -> str:
    """Format a value of metric ``name`` (``n/a`` for a missing value)."""
    return get(name).format(None if value is None else float(value))
