"""One test's gate: measure targets in rounds, then judge the test's budgets.

A :class:`Gate` is created per test by the plugin.  The test calls :meth:`Gate.measure`
(one target) or :meth:`Gate.compare` (candidate vs reference, interleaved rounds
R C C R R C …).  Rounds are added while a budget is INCONCLUSIVE, up to the maximum.
:meth:`Gate.finish` applies Holm within the test and the final-INCONCLUSIVE policy.
Nothing here imports pytest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Optional, Sequence

from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.budget.metrics import ERROR_METRICS, metric_value
from pytest_netperf.drivers import driver_for_target
from pytest_netperf.drivers.base import Driver, LoadShape
from pytest_netperf.errors import DriverError, InvalidMeasurement, NetperfError
from pytest_netperf.measure.contention import both_sides_starved, shared_cores, starved_by_stack, starved_note
from pytest_netperf.measure.cost_pass import (
    COST_FACT,
    CostPassPlan,
    Tracer,
    cost_fact,
    cost_pass_notes,
    cost_pass_problem,
    run_cost_pass,
)
from pytest_netperf.measure.design import ALTERNATE, SIMULTANEOUS, round_groups, run_side_by_side
from pytest_netperf.measure.endpoint import ENDPOINT_MEMBERS, TargetLike, WireCounter
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.load_options import SHAPE_ALIASES, LoadOptionError, check_load_option, round_seed
from pytest_netperf.measure.system_costs import (
    CostProbe,
    check_probes,
    closed_loop_note,
    run_with_costs,
    system_budgets,
)
from pytest_netperf.measure.targets import host_header
from pytest_netperf.measure.validity import samples_problem, saturation_problem
from pytest_netperf.measure.wire_counts import run_with_wire
from pytest_netperf.results.model import RoundResult
from pytest_netperf.results.traced import MarginalCost
from pytest_netperf.runtime.commands import CommandRunner
from pytest_netperf.runtime.resources import usable_cores
from pytest_netperf.verdict import stats
from pytest_netperf.verdict.calibration import NoiseFloor, check_budget_against_noise
from pytest_netperf.verdict.deterministic import evaluate_repetitions
from pytest_netperf.verdict.error_control import alpha_for_look
from pytest_netperf.verdict.sequential import SequentialPlan, run_sequential
from pytest_netperf.verdict.status import Status

ProgressFn = Callable[[str], None]
DriverFactory = Callable[[Optional[str], Optional[CommandRunner]], Driver]
BaselineLookup = Callable[[str, str, str], Optional[list[float]]]


def series_name(measurement_key: str, label: str) -> str:
    """Name of a measured series in baselines and plots (``candidate``, ``hops=3/reference``)."""
    return label if measurement_key == "default" else f"{measurement_key}/{label}"


@dataclass
class Series:
    """All rounds of one target within one measurement."""

    label: str
    url: str
    where: str
    driver: str
    shape: LoadShape
    rounds: list[RoundResult] = field(default_factory=list)
    #: Image -> digest of the containers behind the target (empty for a plain URL).
    images: dict[str, str] = field(default_factory=dict)
    #: The driver that measures this series.
    driver_instance: Optional[Driver] = None
    #: Says why the target may no longer be measured (its topology is gone), or None.
    guard: Optional[Callable[[], Optional[str]]] = None
    #: What the report prints with the rows of this series: the target's own facts
    #: (``images``, ``resources``) and the gate's (``driver cores`` when the driver is pinned).
    facts: dict[str, str] = field(default_factory=dict)
    #: Reads what the target's system under test spends per round (None for a plain URL).
    costs: Optional[CostProbe] = None
    #: Reads the server interface's packet counters around each L4 round (None: not counted).
    wire: Optional[WireCounter] = None
    #: Why each kept round whose driver was saturated was the stack's doing (see measure/contention.py).
    starved: list[str] = field(default_factory=list)
    #: Runs the target's entry node under a counting tool (the cost pass); None: it cannot.
    tracer: Optional[Tracer] = None
    #: tool -> node -> cost per request the cost pass counted (``instructions``, ``syscalls``)
    traced: dict[str, dict[str, MarginalCost]] = field(default_factory=dict)
    #: Why the cost pass of this series could not count (its budgets are INVALID), or "".
    trace_error: str = ""

    def values(self, metric: str) -> list[float]:
        """Per-round values of ``metric``; per-repetition values of a deterministic cost."""
        if metrics.get(metric).deterministic:
            if self.trace_error:
                raise metrics.MetricUnavailable(f"{metric}: the cost pass could not count: {self.trace_error}")
            return metrics.traced_values(metric, self.traced.get(metrics.tool_of(metric), {}))
        return [metric_value(r, metric) for r in self.rounds]


@dataclass
class Measurement:
    """One ``measure()`` or ``compare()`` call of a test."""

    key: str
    candidate: Series
    reference: Optional[Series] = None
    hops: Optional[int] = None
    verdicts: dict[str, stats.Verdict] = field(default_factory=dict)
    invalid_reason: Optional[str] = None
    #: The candidate's twin at the base revision (``--netperf-base``), measured in the same
    #: interleaved rounds; budgets against the baseline are judged on these pairs.
    base: Optional[Series] = None
    #: Why the candidate has no twin at the base revision (its stack is not there): the
    #: budgets against the baseline are NEW with this note.
    base_note: str = ""
    #: Why the candidate's twin at the base revision could not be measured (its stack failed
    #: to start, with its log): the budgets against the baseline are INVALID, never PASS.
    base_error: str = ""
    #: The series loaded together in each round (measure/design.py): one group per series when
    #: they alternate (ABBA over the groups); empty until the rounds are planned.
    groups: list[list[Series]] = field(default_factory=list)
    #: Why series alternated although the settings asked for simultaneous rounds ("" when not).
    design_note: str = ""

    def series(self) -> list[Series]:
        """Candidate first, then the reference and the base twin when there are any."""
        return [s for s in (self.candidate, self.reference, self.base) if s is not None]

    @property
    def design(self) -> str:
        """``simultaneous`` when any series were loaded together, else ``alternate``."""
        return SIMULTANEOUS if any(len(group) > 1 for group in self.groups) else ALTERNATE


@dataclass
class BudgetOutcome:
    """The final word on one budget for one measurement."""

    test_id: str
    measurement: str
    budget: Budget
    status: Status
    verdict: Optional[stats.Verdict]
    notes: list[str] = field(default_factory=list)
    reference_label: str = ""

    def __post_init__(self) -> None:
        self.status = Status.parse(self.status)


#: The label of the base revision's twin series (``--netperf-base``) and of what its budgets were judged against.
BASE_LABEL = "base"
#: Why a budget against the stored baseline is NEW when there is no baseline at all.
MISSING_BASELINE_NOTE = "no stored baseline: recorded as NEW (update with --netperf-update-baseline)"
#: The fact the gate adds when the driver runs on some cores only.
DRIVER_CORES_FACT = "driver cores"


def round_plan(settings: GateSettings, rounds: Optional[int] = None) -> SequentialPlan:
    """The sequential plan of ``settings``; ``rounds`` fixes the count (one look)."""
    if rounds is not None:
        return SequentialPlan.fixed(rounds)
    return SequentialPlan(settings.rounds_min, settings.rounds_max, settings.round_batch)


def series_facts(target: TargetLike, driver: Driver) -> dict[str, str]:
    """The facts of a series: the target's ``facts`` mapping (a plain URL has none), plus
    ``driver cores`` when ``driver`` is pinned (its ``cpus``). Raises NetperfError naming the
    target when its ``facts`` is not a mapping."""
    facts: dict[str, str] = {}
    if not isinstance(target, str):
        given = target.facts
        if not isinstance(given, Mapping):
            raise NetperfError(
                f"target {target.url}: facts must be a mapping of names to text, got {type(given).__name__}"
            )
        facts = {str(k): str(v) for k, v in given.items()}
    cores = driver.cpus
    if cores:
        facts[DRIVER_CORES_FACT] = str(cores)
    return facts


def _weights(metric: str, rounds: Sequence[RoundResult]) -> Optional[list[float]]:
    """What ``metric``, a fraction, is a share of in each round (so the rounds are pooled), or None."""
    weight = metrics.get(metric).weight
    return None if weight is None else [weight(r) for r in rounds]


class _SaturatedTogether(Exception):
    """A round of series loaded together saturated a driver on every attempt (the text says which)."""


def _driver_of(series: Series, where: str) -> Driver:
    """The driver of ``series``; NetperfError for a series rebuilt from a record (it measures nothing)."""
    if series.driver_instance is None:
        raise NetperfError(f"{where or series.label}: this series has no driver to measure with")
    return series.driver_instance


def checked_target(target: object) -> TargetLike:
    """``target`` when it is a URL string or satisfies the endpoint contract; TypeError naming
    what it lacks otherwise (a test handed the gate something else)."""
    if isinstance(target, str):
        return target
    missing = [name for name in ENDPOINT_MEMBERS if not hasattr(target, name)]
    if missing:
        raise TypeError(
            f"a netperf target is a URL string or an endpoint (a topology's or stack's .endpoint(...)), "
            f"not {target!r}: it has no {', '.join(missing)}"
        )
    return target  # type: ignore[return-value]  # checked member by member above


class Gate:
    """Measures and judges one test."""

    def __init__(
        self,
        test_id: str,
        budgets: Sequence[Budget],
        settings: GateSettings,
        driver_factory: DriverFactory,
        default_driver: Optional[str] = None,
        baseline_lookup: Optional[BaselineLookup] = None,
        progress: Optional[ProgressFn] = None,
        notes: Optional[list[str]] = None,
        noise: Optional[NoiseFloor] = None,
        missing_baseline_note: str = MISSING_BASELINE_NOTE,
    ) -> None:
        self.test_id = test_id
        self.budgets = list(budgets)
        self.settings = settings
        self._driver_factory = driver_factory
        self._default_driver = default_driver
        self._baseline_lookup = baseline_lookup
        self._missing_baseline_note = missing_baseline_note
        self._progress = progress or (lambda _msg: None)
        self.measurements: list[Measurement] = []
        #: Test-level notes (fingerprint warnings, baseline writes) shown with every outcome.
        self.notes: list[str] = list(notes or [])
        self._noise = noise  # from an earlier A/A run (--netperf-calibrate), if any
        self._started = time.monotonic()
        self.implicit_error_budget = not any(b.metric in ERROR_METRICS for b in self.budgets)
        self._system_budgets = system_budgets(self.budgets)
        self._traced_budgets = [b for b in self.budgets if metrics.get(b.metric).deterministic]
        self.cost_pass_plan = CostPassPlan.of(
            settings.cost_requests, settings.cost_repetitions, settings.cost_time_limit_s
        )

    # ------------------------------------------------------------------ public API
    def noise_warnings(self) -> list[str]:
        """Before measuring: the budgets that even the maximum rounds cannot decide on this
        machine's stored noise floor (``--netperf-calibrate``); empty without one."""
        if self._noise is None:
            return []
        out = []
        for budget in self.budgets:
            warning = check_budget_against_noise(budget, self._noise, self.settings.rounds_max)
            if warning:
                out.append(f"before measuring, '{budget.text}' at {self.settings.rounds_max} rounds: {warning}")
        return out

    def measure(
        self,
        target: TargetLike,
        *,
        key: Optional[str] = None,
        hops: Optional[int] = None,
        driver: Optional[str] = None,
        rounds: Optional[int] = None,
        **shape_args: Any,
    ) -> Measurement:
        """Measure one target in rounds; returns the measurement (rounds included)."""
        self._check_call(hops, rounds)
        needs_ref = [b.text for b in self.budgets if b.comparison == "reference"]
        if needs_ref:
            raise NetperfError(
                f"budget {needs_ref[0]!r} compares with a reference: use netperf.compare(candidate, reference)"
            )
        shape = self._shape(shape_args)
        cand = self._series("candidate", target, shape, driver)
        m = self._new_measurement(key, cand, None, hops)
        self._attach_base(m, target, shape, driver)
        self._check_costs(m)
        self._choose_design(m)
        self._run_rounds(m, rounds)
        self._run_cost_passes(m)
        return m

    def compare(
        self,
        candidate: TargetLike,
        reference: TargetLike,
        *,
        key: Optional[str] = None,
        hops: Optional[int] = None,
        driver: Optional[str] = None,
        rounds: Optional[int] = None,
        **shape_args: Any,
    ) -> Measurement:
        """Measure candidate and reference in interleaved rounds (R C C R …)."""
        self._check_call(hops, rounds)
        shape = self._shape(shape_args)
        if self.settings.calibrate:
            candidate = reference  # A/A: the reference measured against itself
        cand = self._series("candidate", candidate, shape, driver)
        ref = self._series("reference", reference, shape, driver)
        m = self._new_measurement(key, cand, ref, hops)
        self._attach_base(m, candidate, shape, driver)
        self._check_costs(m)
        self._choose_design(m)
        self._run_rounds(m, rounds)
        self._run_cost_passes(m)
        return m

    def finish(self) -> list[BudgetOutcome]:
        """Final verdicts for every budget and measurement (Holm within the test)."""
        outcomes: list[BudgetOutcome] = []
        for m in self.measurements:
            outcomes.extend(self._final_outcomes(m))
        outcomes.extend(self._unjudged_outcomes(outcomes))
        judged = [o for o in outcomes if o.verdict is not None and o.status.judged]
        if len(judged) > 1:
            alpha = 1.0 - self.settings.confidence
            adjusted = stats.apply_holm([o.verdict for o in judged if o.verdict is not None], alpha)
            for o, v in zip(judged, adjusted, strict=True):
                if o.verdict is not None and v.status != o.verdict.status:
                    o.notes.append(f"Holm correction over {len(judged)} budgets: {o.verdict.status} -> {v.status}")
                o.verdict = v
                o.status = v.status
        for o in outcomes:
            if self._noise is not None and o.verdict is not None:
                warning = check_budget_against_noise(o.budget, self._noise, o.verdict.n_rounds)
                if warning:
                    o.notes.append(warning)
            if o.status is Status.INCONCLUSIVE:
                rounds = o.verdict.n_rounds if o.verdict else "?"
                unit = "repetitions of the cost pass" if o.budget in self._traced_budgets else "rounds"
                o.notes.append(f"inconclusive after {rounds} {unit}; policy: {self.settings.inconclusive}")
        return outcomes

    # ------------------------------------------------------------------ internals
    def _shape(self, args: Mapping[str, Any]) -> LoadShape:
        known = set(LoadShape.__dataclass_fields__) - {"extra"}
        values: dict[str, Any] = {
            "duration_s": self.settings.round_duration_s,
            "warmup_s": self.settings.warmup_s,
            "extra": {"max_lag": f"{self.settings.max_lag_ms:g}ms"},
        }
        for given, value in args.items():
            name = SHAPE_ALIASES.get(given, given)
            if name not in known:
                expected = ", ".join(sorted((known - set(SHAPE_ALIASES.values())) | set(SHAPE_ALIASES)))
                raise LoadOptionError(f"unknown load option {given!r}; expected one of {expected}")
            if name == "headers" and isinstance(value, Mapping):
                value = tuple(value.items())
            values[name] = check_load_option(given, name, value)
        if self.settings.realtime and values.get("rate"):
            values["extra"] = {**values["extra"], "realtime": True}
        return LoadShape(**values)

    def _series(self, label: str, target: TargetLike, shape: LoadShape, driver: Optional[str]) -> Series:
        target = checked_target(target)
        if isinstance(target, str):
            url, runner, where = target, None, "host"
        else:
            url, runner = target.url, target.runner
            where = target.where or (runner.where if runner is not None else "host")
        if runner is not None and "realtime" in shape.extra:
            # SCHED_FIFO needs CAP_SYS_NICE and an RT cgroup budget a container rarely has;
            # in a container the lag bound alone guards the schedule.
            shape = replace(shape, extra={k: v for k, v in shape.extra.items() if k != "realtime"})
        host = host_header(target)
        if host and not any(k.lower() == "host" for k, _ in shape.headers):
            shape = replace(shape, headers=shape.headers + (("Host", host),))
        name = driver_for_target(url, driver, self._default_driver)
        drv = self._driver_factory(name, runner)
        images = {} if isinstance(target, str) else dict(target.images)
        guard = None if isinstance(target, str) else target.guard
        costs = None if isinstance(target, str) else target.costs
        wire = None if isinstance(target, str) else target.wire
        tracer = None if isinstance(target, str) else target.tracer
        return Series(
            label=label,
            url=url,
            where=where,
            driver=drv.name,
            shape=shape,
            images=images,
            driver_instance=drv,
            guard=guard,
            facts=series_facts(target, drv),
            costs=costs,
            wire=wire,
            tracer=tracer,
        )

    def _attach_base(self, m: Measurement, target: TargetLike, shape: LoadShape, driver: Optional[str]) -> None:
        """The candidate's twin at the base revision (a target's ``base``), when a budget
        compares with the baseline; or why there is none: ``base_note`` (not at the base
        revision: NEW) or ``base_error`` (it failed to start: INVALID)."""
        if isinstance(target, str) or not any(b.comparison == "baseline" for b in self.budgets):
            return
        target = checked_target(target)
        if isinstance(target, str):
            return
        if target.base is not None:
            m.base = self._series(BASE_LABEL, target.base, shape, driver)
        else:
            m.base_note = target.base_note
            m.base_error = target.base_error

    def _new_measurement(
        self, key: Optional[str], cand: Series, ref: Optional[Series], hops: Optional[int]
    ) -> Measurement:
        if key is None:
            key = "default" if not self.measurements else f"m{len(self.measurements) + 1}"
            if hops is not None:
                key = f"hops={hops}"
        if any(m.key == key for m in self.measurements):
            raise ValueError(f"measurement key {key!r} used twice in {self.test_id}; pass key=...")
        m = Measurement(key=key, candidate=cand, reference=ref, hops=hops)
        self.measurements.append(m)
        return m

    def _run_group(
        self, m: Measurement, group: Sequence[Series], index: int, total: int, most: Optional[int] = None
    ) -> None:
        """Round ``index + 1`` of every series of ``group`` (of ``total`` planned so far, at most
        ``most``), loaded at the same moment when the group has more than one series.

        A round whose driver was saturated is measured again (the whole group, so the sides stay
        simultaneous); when every attempt saturated and the stack under test held the shared
        cores each time, the round is kept with a note, else the measurement is INVALID."""
        cap = f" (max {most})" if most is not None and most > total else ""
        labels = " + ".join(s.label for s in group)
        self._progress(
            f"{self.test_id} [{m.key}] round {index + 1}/{total}{cap} {labels} "
            f"({group[0].shape.describe()}, {time.monotonic() - self._started:.0f}s elapsed)"
        )
        wheres = {id(s): f"{s.label} {s.url} (round {index + 1})" for s in group}
        for series in group:
            problem = series.guard() if series.guard is not None else None
            if problem:
                raise InvalidMeasurement(f"{wheres[id(series)]}: {problem}; no load was sent")
        tasks = [self._round_task(s, wheres[id(s)]) for s in group]
        held_every_time = {id(s): True for s in group}
        results: list[RoundResult] = []
        for attempt in range(self.settings.saturated_retries + 1):
            results = run_side_by_side(tasks)
            saturated = [(s, r, p) for s, r in zip(group, results, strict=True) if (p := saturation_problem(r))]
            if not saturated:
                break
            held = {id(s): starved_by_stack(r, shared_cores(_driver_of(s, ""))) for s, r, _ in saturated}
            for series, _, _ in saturated:
                held_every_time[id(series)] = held_every_time[id(series)] and held[id(series)] is not None
            if attempt == self.settings.saturated_retries:
                if len(group) > 1:  # loaded together they starve each other's drivers: one at a time
                    raise _SaturatedTogether("; ".join(f"{s.label}: {p}" for s, _, p in saturated))
                for series, _, problem in saturated:
                    if not held_every_time[id(series)]:
                        tries = f" in {attempt + 1} attempts" if attempt else ""
                        raise InvalidMeasurement(f"{wheres[id(series)]}: {problem}{tries}")
                for series, _, _ in saturated:  # the stack under test kept the driver's CPUs: what it measured
                    series.starved.append(held[id(series)] or "")
                break
            for series, _, problem in saturated:
                where = wheres[id(series)]
                self.notes.append(f"{where} measured again: {problem}")
                self._progress(f"{self.test_id} [{m.key}] {where} measured again: {problem}")
        for series, result in zip(group, results, strict=True):
            gone = series.guard() if series.guard is not None else None
            if gone:  # vanished during the round: what answered may not have been the target
                raise InvalidMeasurement(f"{wheres[id(series)]}: {gone} (during the round)")
            series.rounds.append(result)

    def _round_task(self, series: Series, where: str) -> Callable[[], RoundResult]:
        """One attempt at a round of ``series``: the driver's run with the wire and cost counters around it."""
        shape = series.shape
        if series.rounds:  # warm already: the new connections only need to settle
            shape = replace(shape, warmup_s=min(shape.warmup_s, self.settings.round_warmup_s))
        if shape.rate and shape.arrival == "poisson":  # read by the Rust driver (--seed)
            shape = replace(shape, extra={**shape.extra, "seed": round_seed(series.label, len(series.rounds))})
        driver = _driver_of(series, where)
        needs_costs = bool(self._system_budgets)

        def drive() -> RoundResult:
            started_at = time.time()
            try:
                result = driver.run(series.url, shape)
            except DriverError as exc:
                raise InvalidMeasurement(f"{series.label} {series.url}: {exc}") from exc
            return replace(result, started_at=started_at)

        def run() -> RoundResult:
            return run_with_wire(drive, series.wire, self.notes)

        return lambda: run_with_costs(run, series.costs, where, needs_costs, self.notes)

    def _choose_design(self, m: Measurement) -> None:
        """Which series are loaded together in each round: the settings' design, as far as the series allow."""
        # auto: a target and its base twin at a fixed rate (measure/design.py AUTO)
        auto_together = m.reference is None and m.base is not None and m.candidate.shape.rate is not None
        m.groups, m.design_note = round_groups(
            self.settings.design, m.series(), bool(self._system_budgets), auto_together
        )

    def _check_costs(self, m: Measurement) -> None:
        """Before any load: every budget on the system under test can be read from the series it
        judges, and every series a cost pass will trace has its cost image."""
        for budget in self._system_budgets:
            other = {"reference": m.reference, "baseline": m.base}.get(budget.comparison)
            judged = [m.candidate] + ([other] if other is not None else [])
            check_probes(self.test_id, [budget], [(s.label, s.url, s.costs) for s in judged])
        for series in self._traced_series(m).values():
            if series.tracer is not None and not cost_pass_problem(series.url, series.tracer, series.driver):
                series.tracer.prepare()

    def _traced_series(self, m: Measurement) -> dict[str, Series]:
        """label -> series a deterministic budget of ``m`` judges."""
        out: dict[str, Series] = {}
        for b in self._applicable(m):
            if b in self._traced_budgets:
                other = {"reference": m.reference, "baseline": m.base}.get(b.comparison)
                for series in [m.candidate] + ([other] if other is not None else []):
                    out[series.label] = series
        return out

    def _run_cost_passes(self, m: Measurement) -> None:
        """Count instructions and system calls per request of each series a deterministic
        budget judges, then judge those budgets on the repetitions."""
        applicable = [b for b in self._applicable(m) if b in self._traced_budgets]
        if not applicable:
            return
        wanted: dict[str, tuple[Series, set[str]]] = {}
        for b in applicable:
            other = {"reference": m.reference, "baseline": m.base}.get(b.comparison)
            for series in [m.candidate] + ([other] if other is not None else []):
                wanted.setdefault(series.label, (series, set()))[1].add(metrics.tool_of(b.metric))
        for series, tools in wanted.values():
            series.trace_error = cost_pass_problem(series.url, series.tracer, series.driver)
            if series.trace_error or series.tracer is None or series.driver_instance is None:
                continue
            self._progress(f"{self.test_id} [{m.key}] {series.label}: cost pass ({', '.join(sorted(tools))})")
            try:
                counted = run_cost_pass(
                    series.tracer,
                    sorted(tools),
                    series.driver_instance.run,
                    series.url,
                    series.shape,
                    self.cost_pass_plan,
                    self._progress,
                    parallel=len(usable_cores()) > 1,
                )
            except (NetperfError, ValueError) as exc:
                series.trace_error = str(exc)
                continue
            for tool, cost in counted.items():
                series.traced.setdefault(tool, {})[cost.node] = cost
            series.facts[COST_FACT] = cost_fact(series.traced)
        for b in applicable:
            if self._data_problem(m, b):
                continue  # INVALID: decided in finish()
            values = self._values(m, b)
            against = values["reference"] if b.comparison == "reference" else values["baseline"]
            if b.comparison == "baseline" and against is None:
                continue  # NEW: decided in finish()
            candidate = values["candidate"]
            assert candidate is not None
            m.verdicts[b.text] = evaluate_repetitions(b, candidate, against if b.form == "ratio" else None)

    def _data_problem(self, m: Measurement, b: Budget) -> Optional[str]:
        """Why budget ``b`` has no data to be judged on in ``m`` (too few samples, no costs), or None."""
        needed = {"reference": m.reference, "baseline": m.base}.get(b.comparison)
        if needed is not None and m.candidate.starved and needed.starved:
            return both_sides_starved(m.candidate.label, needed.label)
        for series in m.series():
            if series is m.candidate or series is needed:
                problem = samples_problem(series.rounds, b.metric)
                if problem:
                    return f"{series.label}: {problem}"
                try:
                    series.values(b.metric)
                except KeyError as exc:  # metrics.MetricUnavailable
                    return f"{series.label}: {exc}"
        return None

    def _run_rounds(self, m: Measurement, rounds: Optional[int]) -> None:
        """The sequential procedure (:func:`run_sequential`) over interleaved rounds."""
        plan = round_plan(self.settings, rounds)

        if not m.groups:
            m.groups = [[s] for s in m.series()]

        def measure_more(k: int) -> None:
            done = len(m.candidate.rounds)
            for i in range(done, done + k):
                order = m.groups if i % 2 else list(reversed(m.groups))
                for group in order:  # R C, C R, R C … (ABBA); a group's series at once
                    try:
                        self._run_group(m, group, i, done + k, plan.max_rounds)
                    except _SaturatedTogether as exc:
                        # e.g. a head that burns CPU starves its base twin's driver as well: from
                        # here on each side alone, as the alternating design measures it
                        m.groups = [[s] for s in m.series()]
                        m.design_note = (
                            f"measured in alternating rounds from round {i + 1}: loaded at once, the load "
                            f"drivers were saturated in {self.settings.saturated_retries + 1} attempts ({exc})"
                        )
                        for series in group:
                            self._run_group(m, [series], i, done + k, plan.max_rounds)

        def more(undecided: list[str], total: int) -> None:
            self._progress(
                f"{self.test_id} [{m.key}] inconclusive ({', '.join(undecided)}) after {len(m.candidate.rounds)} "
                f"rounds: measuring up to {total} (max {plan.max_rounds}), "
                f"{time.monotonic() - self._started:.0f}s elapsed"
            )

        m.verdicts = dict(
            run_sequential(
                plan, measure_more, lambda look, looks: self._verdicts(m, look, looks, plan.max_rounds), more
            )
        )

    def image_digests(self) -> dict[str, str]:
        """Image -> digest of every container measured by this test (for the fingerprint)."""
        return {k: v for m in self.measurements for s in m.series() for k, v in s.images.items()}

    def _check_call(self, hops: Optional[int], rounds: Optional[int]) -> None:
        """Per-hop budgets need a hop count; ``rounds`` needs two rounds for an interval."""
        if hops is not None and (isinstance(hops, bool) or not isinstance(hops, int) or hops < 0):
            raise LoadOptionError(f"hops={hops!r}: expected a whole number >= 0 (0: a depth-0 reference)")
        per_hop = [b.text for b in self.budgets if b.per_hop]
        if per_hop and hops is None:
            raise LoadOptionError(
                f"budget {per_hop[0]!r} is per hop: pass hops=N (the hops this measurement crosses, N >= 1; "
                "hops=0 marks a depth-0 measurement the per-hop budgets skip)"
            )
        if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 2):
            raise LoadOptionError(f"rounds={rounds!r}: expected a whole number >= 2 (an interval needs 2 rounds)")

    def measurement(self, key: str) -> Measurement:
        """The measurement called ``key``."""
        return next(m for m in self.measurements if m.key == key)

    def _applicable(self, m: Measurement) -> list[Budget]:
        out = []
        for b in self.budgets:
            if b.comparison == "reference" and m.reference is None:
                continue
            if b.per_hop and not m.hops:
                continue
            out.append(b)
        return out

    def _unjudged_outcomes(self, outcomes: Sequence[BudgetOutcome]) -> list[BudgetOutcome]:
        """An INVALID outcome for every budget no measurement judged: none goes unreported."""
        judged = {o.budget.text for o in outcomes}
        key = self.measurements[-1].key if self.measurements else "default"
        missing = []
        for b in self.budgets:
            if b.text in judged:
                continue
            if b.per_hop:
                why = "per hop, but every measurement had hops=0: pass hops=N >= 1 where N hops are crossed"
            else:
                why = "no measurement of this test could judge it"
            missing.append(BudgetOutcome(self.test_id, key, b, Status.INVALID, None, [f"never judged: {why}"]))
        return missing

    def _values(self, m: Measurement, b: Budget) -> dict[str, Optional[list[float]]]:
        cand = m.candidate.values(b.metric)
        ref = m.reference.values(b.metric) if (m.reference is not None and b.comparison == "reference") else None
        base = None
        if b.comparison == "baseline":
            if m.base is not None:
                base = m.base.values(b.metric)
            elif self._baseline_lookup is not None and not (m.base_note or m.base_error):
                base = self._baseline_lookup(m.key, "candidate", b.metric)
        return {"candidate": cand, "reference": ref, "baseline": base}

    def _verdicts(
        self, m: Measurement, look: int, looks: int, max_rounds: Optional[int] = None
    ) -> dict[str, stats.Verdict]:
        out: dict[str, stats.Verdict] = {}
        for b in self._applicable(m):
            if b in self._traced_budgets:
                continue  # judged on the cost pass's repetitions (_run_cost_passes)
            if self._data_problem(m, b):
                continue  # INVALID: decided in finish()
            vals = self._values(m, b)
            if b.comparison == "baseline" and vals["baseline"] is None:
                continue  # NEW: decided in finish()
            candidate = vals["candidate"]
            assert candidate is not None
            paired_base = b.comparison == "baseline" and m.base is not None
            out[b.text] = stats.evaluate(
                # the base twin ran in the same interleaved rounds: judged on the pairs
                replace(b, comparison="reference") if paired_base else b,
                candidate,
                reference=vals["baseline"] if paired_base else vals["reference"],
                baseline=None if paired_base else vals["baseline"],
                confidence=self.settings.confidence,
                looks=looks,
                look_index=look,
                hops=m.hops if b.per_hop else None,
                attempts=_weights(b.metric, m.candidate.rounds),
                max_rounds=max_rounds,
            )
        if len(out) > 1:
            # the same Holm correction as finish(), at this look's level: a FAIL that stops the
            # rounds early must survive the final correction, else it would end INCONCLUSIVE
            # with rounds left unmeasured
            level = alpha_for_look(1.0 - self.settings.confidence, look, looks)
            out = dict(zip(out, stats.apply_holm(list(out.values()), level), strict=True))
        return out

    def _error_note(self, m: Measurement) -> Optional[str]:
        parts = []
        for s in m.series():
            errs = sum(r.error_count for r in s.rounds)
            if errs:
                kinds: dict[str, int] = {}
                for r in s.rounds:
                    for k, v in r.errors.items():
                        kinds[k] = kinds.get(k, 0) + v
                    for code, v in r.status_codes.items():
                        if not code.startswith("2"):
                            kinds[f"HTTP {code}"] = kinds.get(f"HTTP {code}", 0) + v
                desc = ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items()))
                parts.append(f"{s.label} had {errs} errors ({desc})")
        return "; ".join(parts) or None

    def _final_outcomes(self, m: Measurement) -> list[BudgetOutcome]:
        outcomes = []
        error_note = self._error_note(m)
        ref_label = "reference" if m.reference is not None else ""
        for b in self._applicable(m):
            # the base revision judges (or should have judged) when its twin exists or failed to start
            baseline_label = BASE_LABEL if m.base is not None or m.base_error else "baseline"
            label = (
                baseline_label
                if b.comparison == "baseline"
                else (ref_label if b.comparison == "reference" else "absolute")
            )
            v = m.verdicts.get(b.text)
            no_data = self._data_problem(m, b)
            if b.comparison == "baseline" and m.base_error:
                no_data = f"{BASE_LABEL} side INVALID: {m.base_error}"
            if no_data:
                outcomes.append(BudgetOutcome(self.test_id, m.key, b, Status.INVALID, None, [no_data], label))
                continue
            if b.comparison == "baseline" and v is None:
                outcomes.append(
                    BudgetOutcome(
                        self.test_id,
                        m.key,
                        b,
                        Status.NEW,
                        None,
                        [m.base_note or self._missing_baseline_note],
                        label,
                    )
                )
                continue
            assert v is not None
            o = BudgetOutcome(self.test_id, m.key, b, v.status, v, [], label)
            if v.note:
                o.notes.append(v.note)
            if v.undecidable:
                o.notes.append(v.undecidable)
            if b in self._traced_budgets:
                other = m.reference if b.comparison == "reference" else m.base
                o.notes.extend(
                    cost_pass_notes(b, m.candidate.traced, other.traced if other else None, label or "reference")
                )
            elif m.design_note:
                o.notes.append(m.design_note)
            o.notes.extend(starved_note(s.label, s.starved, len(s.rounds)) for s in m.series() if s.starved)
            closed_loop = closed_loop_note(b, m.candidate.rounds)
            if closed_loop:
                o.notes.append(closed_loop)
            if error_note and self.implicit_error_budget:
                o.status = Status.INVALID
                o.notes.append(f"{error_note}; no errors are allowed unless a budget says so (e.g. 'error_rate <= 1%')")
            outcomes.append(o)
        if self.implicit_error_budget and error_note:
            implicit = Budget.parse("errors == 0")
            v = stats.evaluate(implicit, m.candidate.values("errors"), confidence=self.settings.confidence)
            outcomes.append(
                BudgetOutcome(
                    self.test_id, m.key, implicit, v.status, v, [error_note + " (implicit budget)"], "absolute"
                )
            )
        for o in outcomes:
            o.notes.extend(self.notes)
        return outcomes
