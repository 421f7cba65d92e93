"""One test's gate: measure targets in rounds, count what they cost, then judge the test's budgets.

A :class:`Gate` is created per test by the plugin. The test calls :meth:`Gate.measure`
(one target) or :meth:`Gate.compare` (candidate vs reference). Each call builds a
:class:`~pytest_netperf.measure.model.Measurement`, runs its timed rounds
(:mod:`~pytest_netperf.measure.rounds`) and then its counting passes
(:mod:`~pytest_netperf.measure.counting_step`); :meth:`Gate.finish` turns the verdicts into
outcomes (:mod:`~pytest_netperf.measure.outcomes`). Nothing here imports pytest.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Mapping, Optional, Sequence

from pytest_netperf import defaults
from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.budget.metrics import ERROR_METRICS
from pytest_netperf.drivers import driver_for_target
from pytest_netperf.drivers.base import Driver, LoadShape
from pytest_netperf.errors import NetperfError
from pytest_netperf.measure.capacity import CapacityMemory, resolve_capacity_share
from pytest_netperf.measure.counting_pass import CountingPlan
from pytest_netperf.measure.counting_step import CountingStep
from pytest_netperf.measure.design import choose_design
from pytest_netperf.measure.endpoint import ENDPOINT_MEMBERS, TargetLike
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.load_options import SHAPE_ALIASES, CapacityShare, LoadOptionError, check_load_option
from pytest_netperf.measure.model import BASE_LABEL, BaselineLookup, CountedLookup, Measurement, Series
from pytest_netperf.measure.outcomes import (
    MISSING_BASELINE_NOTE,
    BudgetOutcome,
    corrected,
    measurement_outcomes,
    unjudged_outcomes,
)
from pytest_netperf.measure.rounds import ProgressFn, TimedRounds
from pytest_netperf.measure.speed_excuse import SlowerMachine
from pytest_netperf.measure.system_costs import check_probes, system_budgets
from pytest_netperf.measure.targets import host_header, target_tls
from pytest_netperf.runtime.commands import CommandRunner
from pytest_netperf.verdict.calibration import NoiseFloor, check_budget_against_noise

DriverFactory = Callable[[Optional[str], Optional[CommandRunner]], Driver]
#: The fact the gate adds when the driver runs on some cores only.
DRIVER_CORES_FACT = "driver cores"


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
        stacks: bool = False,
        baseline_slower: Optional[SlowerMachine] = None,
        budget_slower: Optional[SlowerMachine] = None,
        baseline_counted: Optional[CountedLookup] = None,
        capacities: Optional[CapacityMemory] = None,
    ) -> None:
        """``stacks``: the counting pass also profiles the instructions' call stacks (one
        callgrind pair per side) for the HTML report's flame graph, where a budget can have
        one (measure/counting_step.py); ``baseline_slower``: how
        much slower this machine measured than the stored baseline's (its wall-clock misses
        are judged again with that speed given back, measure/speed_excuse.py);
        ``budget_slower``: than the machine the absolute budgets were set on (the same for
        their misses); ``baseline_counted``: the stored baseline's counted costs (a thin miss
        of a counted budget against it is judged on their parts, as against a twin);
        ``capacities``: the session's measured capacities, taken again for ``rate="N%"`` on a
        series measured just before (measure/capacity.py)."""
        self.test_id = test_id
        self.budgets = list(budgets)
        self.settings = settings
        self._driver_factory = driver_factory
        self._default_driver = default_driver
        self._missing_baseline_note = missing_baseline_note
        self._progress = progress or (lambda _msg: None)
        self.measurements: list[Measurement] = []
        #: Test-level notes (fingerprint warnings, baseline writes) shown with every outcome.
        self.notes: list[str] = list(notes or [])
        self._noise = noise  # from an earlier A/A run (--netperf-calibrate), if any
        self._capacities = capacities
        self.implicit_error_budget = not any(b.metric in ERROR_METRICS for b in self.budgets)
        self._system_budgets = system_budgets(self.budgets)
        #: every budget counted: the timed rounds only check for errors (defaults.COUNTED_ONLY_ROUNDS)
        self._counted_only = bool(self.budgets) and all(metrics.get(b.metric).counted for b in self.budgets)
        self.counting_plan = CountingPlan.of(
            settings.counting_requests, settings.counting_repetitions, settings.counting_time_limit_s, stacks
        )
        self._rounds = TimedRounds(
            test_id,
            settings,
            [b for b in self.budgets if not metrics.get(b.metric).counted],
            read_costs=bool(self._system_budgets),
            baseline_lookup=baseline_lookup,
            progress=self._progress,
            notes=self.notes,
            started=time.monotonic(),
            slower=baseline_slower,
            budget_slower=budget_slower,
        )
        self._counting = CountingStep(
            test_id, self.budgets, self.counting_plan, self._progress, baseline_lookup, baseline_counted
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
        shape, share = self._shape(shape_args)
        cand = self._series("candidate", target, shape, driver)
        m = self._new_measurement(key, cand, None, hops)
        self._attach_base(m, target, shape, driver)
        return self._run(m, rounds, share)

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
        shape, share = self._shape(shape_args)
        if self.settings.calibrate:
            candidate = reference  # A/A: the reference measured against itself
        cand = self._series("candidate", candidate, shape, driver)
        ref = self._series("reference", reference, shape, driver)
        m = self._new_measurement(key, cand, ref, hops)
        self._attach_base(m, candidate, shape, driver)
        return self._run(m, rounds, share)

    def finish(self) -> list[BudgetOutcome]:
        """Final verdicts for every budget and measurement (Holm within the test)."""
        outcomes: list[BudgetOutcome] = []
        for m in self.measurements:
            outcomes.extend(
                measurement_outcomes(
                    self.test_id,
                    m,
                    self.budgets,
                    implicit_error_budget=self.implicit_error_budget,
                    confidence=self.settings.confidence,
                    missing_baseline_note=self._missing_baseline_note,
                    test_notes=self.notes,
                )
            )
        last_key = self.measurements[-1].key if self.measurements else "default"
        outcomes.extend(unjudged_outcomes(self.test_id, self.budgets, outcomes, last_key))
        return corrected(outcomes, self.settings.confidence, self.settings.inconclusive, self._noise)

    def image_digests(self) -> dict[str, str]:
        """Image -> digest of every container measured by this test (for the fingerprint)."""
        return {k: v for m in self.measurements for s in m.series() for k, v in s.images.items()}

    def measurement(self, key: str) -> Measurement:
        """The measurement called ``key``."""
        return next(m for m in self.measurements if m.key == key)

    # ------------------------------------------------------------------ internals
    def _run(self, m: Measurement, rounds: Optional[int], share: Optional[CapacityShare] = None) -> Measurement:
        """Check, plan, measure and count ``m`` (its rate first, when it is a share of the capacity)."""
        for budget in self._system_budgets:  # every cost budget can be read from the series it judges
            check_probes(self.test_id, [budget], [(s.label, s.url, s.costs) for s in m.judged(budget)])
        self._counting.prepare(m)  # counting images built before any load
        if share is not None:
            m.rate_note = resolve_capacity_share(m, share, self._capacities, f"{self.test_id} [{m.key}]")
            self._progress(f"{self.test_id} [{m.key}] {m.rate_note}")
        self._choose_design(m)
        if rounds is None and self._counted_only:
            rounds = defaults.COUNTED_ONLY_ROUNDS
        self._rounds.run(m, rounds)
        self._counting.run(m)
        return m

    def _shape(self, args: Mapping[str, Any]) -> tuple[LoadShape, Optional[CapacityShare]]:
        """The load shape of ``args``, and the share of the capacity when ``rate`` is one ("25%")."""
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
        share = values.pop("rate") if isinstance(values.get("rate"), CapacityShare) else None
        if self.settings.realtime and (values.get("rate") or share):
            values["extra"] = {**values["extra"], "realtime": True}
        return LoadShape(**values), share

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
        tls = target_tls(target, shape.tls)
        if tls != shape.tls:  # the endpoint's CA (a topology's test CA), the test's options in front
            shape = replace(shape, tls=tls)
        name = driver_for_target(url, driver, self._default_driver)
        drv = self._driver_factory(name, runner)
        images = {} if isinstance(target, str) else dict(target.images)
        guard = None if isinstance(target, str) else target.guard
        costs = None if isinstance(target, str) else target.costs
        wire = None if isinstance(target, str) else target.wire
        counter = None if isinstance(target, str) else target.counter
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
            counter=counter,
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

    def _choose_design(self, m: Measurement) -> None:
        """Which series are loaded together in each round: the settings' design, as far as the series allow."""
        twin = m.reference is None and m.base is not None
        choice = choose_design(self.settings.design, m.series(), bool(self._system_budgets), m.candidate.shape, twin)
        m.groups, m.turn_s, m.design_note = choice.groups, choice.turn_s, choice.note

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
