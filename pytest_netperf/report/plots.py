"""PNG plots of one test's measurements (matplotlib, no pyplot, no display needed).

Three kinds:

* per-round values of each series (throughput and a latency percentile), to see drift
  and outliers between interleaved rounds;
* latency distributions: a percentile curve per series, from the merged per-round
  HdrHistograms;
* latency versus call depth for chains: series named ``depth=N`` or ``hops=N``,
  optionally with a label (``depth=3/sidecar``, ``hops=3/reference``), one line per label;
* latency versus payload size for L4 request/response: series named ``payload=N[/label]``;
* what the system under test spent: CPU per request and memory per node, one bar per series.

Figures are built with :class:`matplotlib.figure.Figure` directly, which renders with
the Agg canvas and leaves the global pyplot backend of the user's session alone.
"""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from pytest_netperf.budget import metrics as registry
from pytest_netperf.budget.families import FAMILY_UNITS, Family
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.budget.metrics import metric_value
from pytest_netperf.results.model import RoundResult

#: How each family is drawn: factor from canonical units and the axis unit.
_AXIS = {
    Family.LATENCY: (1e-6, "ms"),
    Family.RATE: (1.0, FAMILY_UNITS[Family.RATE]),
    Family.FRACTION: (100.0, "%"),
    Family.COUNT: (1.0, "count"),
    Family.CPU_TIME: (1e-3, "us"),
    Family.CORES: (1.0, "cores"),
    Family.BYTES: (1.0 / 2**20, "MiB"),
    Family.BITRATE: (1.0, FAMILY_UNITS[Family.BITRATE]),
    Family.PACKET_RATE: (1e-3, "kpps"),
    Family.INSTRUCTIONS: (1.0, "instructions/request"),
    Family.SYSCALLS: (1.0, "syscalls/request"),
}
#: Families a rounds plot draws when a budget judges them.
_PLOTTED = (
    Family.RATE,
    Family.LATENCY,
    Family.CPU_TIME,
    Family.CORES,
    Family.BYTES,
    Family.BITRATE,
    Family.PACKET_RATE,
)
_DEPTH_NAME = re.compile(r"^(?:depth|hops)=(\d+)(?:/(.+))?$")
_PAYLOAD_NAME = re.compile(r"^payload=(\d+)(?:/(.+))?$")
_PERCENTILE_TICKS = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)

SeriesRounds = Mapping[str, Sequence[RoundResult]]
#: The label suffix of a stored baseline's series drawn beside this run's.
STORED_SERIES = "stored baseline"
#: Series a relative budget's line is drawn from, by the budget's comparison.
_COMPARED = {"reference": ("reference",), "baseline": ("base", f"candidate ({STORED_SERIES})")}


def write_plots(
    report_dir: Path,
    test_id: str,
    series: SeriesRounds,
    metrics: Sequence[str] = ("rps", "p90"),
    depth_metric: str = "p90",
    budgets: Sequence[Budget] = (),
) -> list[Path]:
    """Write every plot that applies to ``series`` (name -> rounds); returns the files.
    ``budgets`` choose the rounds plot's metrics (those they judge, where plottable) and are
    drawn on it as lines (see :func:`budget_lines`)."""
    from pytest_netperf.baseline.store import safe_name

    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    stem = report_dir / safe_name(test_id)
    judged = [b.metric for b in budgets if registry.get(b.metric).family in _PLOTTED]
    metrics = list(dict.fromkeys(judged))[:3] or list(metrics)
    rounds_png = stem.with_name(stem.name + "-rounds.png")
    written = [plot_rounds(series, rounds_png, metrics, test_id, budgets)]
    distribution = plot_latency_distribution(series, stem.with_name(stem.name + "-latency.png"), test_id)
    depth = plot_latency_by_depth(series, stem.with_name(stem.name + "-depth.png"), depth_metric, test_id)
    payload = plot_latency_by_payload(series, stem.with_name(stem.name + "-payload.png"), depth_metric, test_id)
    system = plot_system_costs(series, stem.with_name(stem.name + "-system.png"), test_id)
    return written + [p for p in (distribution, depth, payload, system) if p is not None]


def budget_lines(budget: Budget, series: SeriesRounds) -> list[tuple[float, str]]:
    """Where ``budget`` lies on its metric's axis (canonical units), with a legend label:
    an absolute budget at its threshold; a relative one at the mean of what it compares with
    (``reference``, the base twin or the stored baseline) moved by the budget. A per-hop
    budget has no single line (the hops differ per measurement)."""
    if budget.per_hop:
        return []
    if budget.comparison == "absolute":
        return [(budget.threshold, f"budget {budget.text}")]
    lines = []
    for name, rounds in series.items():
        if not rounds or name.split("/")[-1] not in _COMPARED[budget.comparison]:
            continue
        values = _values(rounds, budget.metric)
        if not any(math.isfinite(v) for v in values):
            continue
        mean = statistics.fmean(v for v in values if math.isfinite(v))
        if budget.form == "ratio":
            value = mean * budget.threshold
        elif budget.form == "loss":
            value = mean * (1.0 - budget.threshold)
        else:  # added
            value = mean + budget.threshold
        lines.append((value, f"budget {budget.text} (from {name} mean)"))
    return lines


def plot_rounds(
    series: SeriesRounds,
    path: Path,
    metrics: Sequence[str] = ("rps", "p90"),
    title: str = "",
    budgets: Sequence[Budget] = (),
) -> Path:
    """One panel per metric: the value of every round, one line per series (the compared
    ones too: reference, base, stored baseline), and each budget on that metric as a dashed
    horizontal line."""
    fig = _figure(width=7.0, height=2.6 * len(metrics) + 0.6)
    axes = fig.subplots(len(metrics), 1, sharex=True, squeeze=False)[:, 0]
    for ax, metric in zip(axes, metrics, strict=False):
        scale, unit = _scale(metric)
        for name, rounds in series.items():
            xs = list(range(1, len(rounds) + 1))
            ys = [v * scale for v in _values(rounds, metric)]
            ax.plot(xs, ys, marker="o", markersize=4, linewidth=1.2, label=name)
        for budget in (b for b in budgets if b.metric == metric):
            for value, label in budget_lines(budget, series):
                ax.axhline(value * scale, linestyle="--", linewidth=1.1, color="#cf222e", label=label)
        ax.set_ylabel(f"{metric} ({unit})")
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[-1].set_xlabel("round")
    axes[-1].xaxis.get_major_locator().set_params(integer=True)
    for ax in axes:
        ax.legend(loc="best", fontsize="x-small")
    return _save(fig, path, title or "per-round values")


def plot_latency_distribution(series: SeriesRounds, path: Path, title: str = "") -> Optional[Path]:
    """Latency by percentile per series (rounds merged); ``None`` without histograms."""
    curves = {}
    for name, rounds in series.items():
        merged = merge_latency_histograms(rounds)
        if merged is not None and merged.get_total_count() > 0:
            curves[name] = _percentile_curve(merged)
    if not curves:
        return None
    fig = _figure(width=7.0, height=4.2)
    ax = fig.subplots()
    for name, (xs, ys) in curves.items():
        ax.plot(xs, ys, linewidth=1.4, label=name)
    ax.set_xscale("log")
    top = max(max(xs) for xs, _ in curves.values())
    ticks = [t for t in _PERCENTILE_TICKS if _odds(t) <= top * 1.0001]
    ax.set_xticks([_odds(t) for t in ticks])
    ax.set_xticklabels([f"{t:g}%" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    return _save(fig, path, title or "latency distribution")


def plot_latency_by_depth(series: SeriesRounds, path: Path, metric: str = "p90", title: str = "") -> Optional[Path]:
    """Median ``metric`` per call depth, min–max over rounds as error bars, one line per
    label; ``None`` unless at least two series are named ``depth=N[/label]``."""
    return _plot_by_number(series, path, metric, _DEPTH_NAME, "call depth", title or f"{metric} by call depth")


def plot_latency_by_payload(series: SeriesRounds, path: Path, metric: str = "p90", title: str = "") -> Optional[Path]:
    """Median ``metric`` per request payload size (L4 request/response), min–max over rounds
    as error bars, one line per label (path); ``None`` unless at least two series are named
    ``payload=N[/label]``."""
    return _plot_by_number(series, path, metric, _PAYLOAD_NAME, "payload (bytes)", title or f"{metric} by payload size")


def _plot_by_number(
    series: SeriesRounds, path: Path, metric: str, pattern: re.Pattern[str], xlabel: str, title: str
) -> Optional[Path]:
    groups: dict[str, list[tuple[int, list[float]]]] = {}
    for name, rounds in series.items():
        match = pattern.match(name)
        if match and rounds:
            label = match.group(2) or "default"
            groups.setdefault(label, []).append((int(match.group(1)), [metric_value(r, metric) for r in rounds]))
    if sum(len(points) for points in groups.values()) < 2:
        return None
    scale, unit = _scale(metric)
    fig = _figure(width=7.0, height=4.2)
    ax = fig.subplots()
    for label, points in sorted(groups.items()):
        points.sort()
        depths = [d for d, _ in points]
        medians = [statistics.median(v) * scale for _, v in points]
        low = [m - min(v) * scale for m, (_, v) in zip(medians, points, strict=False)]
        high = [max(v) * scale - m for m, (_, v) in zip(medians, points, strict=False)]
        ax.errorbar(depths, medians, yerr=[low, high], marker="o", capsize=3, label=label)
    ax.set_xticks(sorted({d for points in groups.values() for d, _ in points}))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"{metric} ({unit}), median of rounds")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    return _save(fig, path, title)


def plot_system_costs(series: SeriesRounds, path: Path, title: str = "") -> Optional[Path]:
    """CPU per request and memory per node of the system under test (median of rounds), one
    bar per series; ``None`` when no round recorded what the system under test spent."""
    from pytest_netperf.report.system_costs import node_costs

    table = {name: node_costs(rounds) for name, rounds in series.items()}
    table = {name: nodes for name, nodes in table.items() if nodes}
    if not table:
        return None
    nodes = list(dict.fromkeys(node for per_series in table.values() for node in per_series))
    fig = _figure(width=7.0, height=5.4)
    cpu_ax, mem_ax = fig.subplots(2, 1, sharex=True)
    width = 0.8 / len(table)
    for index, (name, per_series) in enumerate(table.items()):
        xs = [i + (index - (len(table) - 1) / 2) * width for i in range(len(nodes))]
        cpu = [per_series[n].cpu_per_request_ns / 1e3 if n in per_series else 0.0 for n in nodes]
        mem = [per_series[n].mem_bytes / 2**20 if n in per_series else 0.0 for n in nodes]
        cpu_ax.bar(xs, cpu, width=width, label=name)
        mem_ax.bar(xs, mem, width=width, label=name)
    cpu_ax.set_ylabel("CPU per request (us)")
    mem_ax.set_ylabel("working set (MiB)")
    mem_ax.set_xticks(range(len(nodes)))
    mem_ax.set_xticklabels(nodes, rotation=30 if len(nodes) > 6 else 0, fontsize="small")
    for ax in (cpu_ax, mem_ax):
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="best", fontsize="x-small")
    return _save(fig, path, title or "system under test: CPU per request and memory per node")


def _values(rounds: Sequence[RoundResult], metric: str) -> list[float]:
    """Per-round values, NaN where a round cannot give the metric (a stored round recorded
    without system costs)."""
    out = []
    for r in rounds:
        try:
            out.append(metric_value(r, metric))
        except KeyError:
            out.append(math.nan)
    return out


def merge_latency_histograms(rounds: Sequence[RoundResult]) -> Optional[Any]:
    """All rounds' latency HdrHistograms added together; ``None`` if none is stored."""
    merged = None
    for r in rounds:
        if not r.latency.histogram:
            continue
        histogram = _decode(r.latency.histogram)
        if merged is None:
            merged = histogram
        else:
            merged.add(histogram)
    return merged


def _decode(encoded: str) -> Any:
    from pytest_netperf.results.histogram import decode_histogram

    return decode_histogram(encoded)


def _percentile_curve(histogram: Any, points: int = 200) -> tuple[list[float], list[float]]:
    """x = 1/(1-p) (so 90%, 99%, 99.9% are evenly spaced), y = latency in ms."""
    count = histogram.get_total_count()
    # Do not draw beyond the resolution of the data: the top is 1 - 1/count.
    decades = max(1.0, min(5.0, math.log10(max(count, 10))))
    xs = [10 ** (decades * i / points) for i in range(points + 1)]
    percentiles = [100.0 * (1.0 - 1.0 / odds) for odds in xs]
    # one pass over the counts for all the points (a query per point scans them each time:
    # 2.4 s a test of two series here, half of a short gate's time)
    values = histogram.get_percentile_to_value_dict(percentiles)
    return xs, [(values[p] if p in values else histogram.get_value_at_percentile(p)) / 1e6 for p in percentiles]


def _odds(percentile: float) -> float:
    return 1.0 / (1.0 - percentile / 100.0)


def _scale(metric: str) -> tuple[float, str]:
    """Factor and unit to show ``metric`` with (latencies in ms)."""
    return _AXIS[registry.get(metric).family]


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=110, layout="constrained")


def _save(fig: Any, path: Path, title: str) -> Path:
    fig.suptitle(title, fontsize="medium")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path
