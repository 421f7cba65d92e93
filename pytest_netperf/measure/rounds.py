"""The timed-rounds pass: a measurement's series driven in interleaved rounds until its budgets are decided.

Rounds go R C C R … (ABBA over the groups of series loaded together); a round whose driver's
saturation spoils a budget is measured again, and kept out of the budgets it spoils when it
saturates every time (measure/validity.py). After each batch of rounds the timed budgets are judged
(:func:`~pytest_netperf.verdict.sequential.run_sequential`) and more rounds are added while
one is INCONCLUSIVE, up to the maximum.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, Optional, Sequence

from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.errors import DriverError, InvalidMeasurement
from pytest_netperf.measure.contention import shared_cores, starved_by_each_other, starved_by_stack
from pytest_netperf.measure.design import SHARE_THE_RUNNER, queue_outlasts_turn, run_side_by_side
from pytest_netperf.measure.gate_settings import GateSettings
from pytest_netperf.measure.load_options import round_seed
from pytest_netperf.measure.model import BaselineLookup, Measurement, Series
from pytest_netperf.measure.runner_watch import outside_when_idle, run_with_runner_state
from pytest_netperf.measure.speed_excuse import (
    SlowerMachine,
    budget_speed_given_back,
    explains_budget_speed,
    explains_speed,
    speed_given_back,
)
from pytest_netperf.measure.system_costs import run_with_costs
from pytest_netperf.measure.validity import (
    MIN_KEPT_ROUNDS,
    Disturbance,
    contention_matters,
    disturbance,
    explains_rates,
    given_back,
    judged_on_even_pairs,
    left_out_note,
    scaled_up,
    taken_cores,
    taken_text,
    undecided_on_this_runner,
)
from pytest_netperf.measure.wire_counts import run_with_wire
from pytest_netperf.results.model import RoundResult
from pytest_netperf.results.runner import MEASURED_AGAIN
from pytest_netperf.verdict import stats
from pytest_netperf.verdict.error_control import alpha_for_look
from pytest_netperf.verdict.sequential import SequentialPlan, run_sequential
from pytest_netperf.verdict.status import Status

ProgressFn = Callable[[str], None]


def round_plan(settings: GateSettings, rounds: Optional[int] = None) -> SequentialPlan:
    """The sequential plan of ``settings``; ``rounds`` fixes the count (one look)."""
    if rounds is not None:
        return SequentialPlan.fixed(rounds)
    return SequentialPlan(settings.rounds_min, settings.rounds_max, settings.round_batch)


def pooled_weights(metric: str, rounds: Sequence[RoundResult]) -> Optional[list[float]]:
    """What ``metric``, a fraction, is a share of in each round (so the rounds are pooled), or None."""
    weight = metrics.get(metric).weight
    return None if weight is None else [weight(r) for r in rounds]


class _GoAlternate(Exception):
    """A round of series loaded together cannot be kept together; the text says why, as the
    note of the design from that round on."""


class _SaturatedTogether(_GoAlternate):
    """A round of series loaded together saturated a driver on every attempt."""


class _QueueOutlastsTurn(_GoAlternate):
    """A round in fine turns queued longer than a turn (measure/design.py)."""


class TimedRounds:
    """Runs the rounds of a test's measurements and judges its timed budgets on them."""

    def __init__(
        self,
        test_id: str,
        settings: GateSettings,
        budgets: Sequence[Budget],
        *,
        read_costs: bool,
        baseline_lookup: Optional[BaselineLookup],
        progress: ProgressFn,
        notes: list[str],
        started: float,
        slower: Optional[SlowerMachine] = None,
        budget_slower: Optional[SlowerMachine] = None,
    ) -> None:
        """``budgets``: the timed budgets (judged on rounds); ``read_costs``: read what the
        system under test spends around each round; ``notes``: the test's notes, to which a
        round measured again adds why; ``slower``: how much slower this machine measured than
        the stored baseline's (None: not slower, or no baseline); ``budget_slower``: than the
        machine the absolute budgets were set on (None: not slower, or not said)."""
        self.test_id = test_id
        self.settings = settings
        self.budgets = list(budgets)
        self.read_costs = read_costs
        self._baseline_lookup = baseline_lookup
        self._progress = progress
        self._notes = notes
        self._started = started
        self._slower = slower
        self._budget_slower = budget_slower

    def run(self, m: Measurement, rounds: Optional[int] = None) -> None:
        """The sequential procedure over interleaved rounds of ``m``; leaves the verdicts in ``m.verdicts``."""
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
                    except _GoAlternate as exc:
                        # e.g. a head that burns CPU starves its base twin's driver as well: from
                        # here on each side alone, as the alternating design measures it
                        m.groups, m.turn_s = [[s] for s in m.series()], None
                        m.design_note = f"measured in alternating rounds from round {i + 1}: {exc}"
                        for series in group:
                            self._run_group(m, [series], i, done + k, plan.max_rounds)

        def more(undecided: list[str], total: int) -> None:
            self._progress(
                f"{self.test_id} [{m.key}] inconclusive ({', '.join(undecided)}) after {len(m.candidate.rounds)} "
                f"rounds: measuring up to {total} (max {plan.max_rounds}), {self._elapsed()}"
            )

        m.verdicts = dict(
            run_sequential(plan, measure_more, lambda look, looks: self.verdicts(m, look, looks, plan.max_rounds), more)
        )

    def verdicts(
        self, m: Measurement, look: int, looks: int, max_rounds: Optional[int] = None
    ) -> dict[str, stats.Verdict]:
        """The timed budgets of ``m`` judged on the rounds so far, at look ``look`` of ``looks``
        (Holm-corrected within the look); budgets without data or baseline are left out."""
        out: dict[str, stats.Verdict] = {}
        for b in self.budgets:
            if not m.applies(b) or m.data_problem(b):
                continue  # INVALID: decided in finish()
            spoiled = {i: d for i, (_, d) in m.spoiled_rounds(b).items()}
            if b.comparison == "baseline" and m.judged_values(b, self._baseline_lookup)[1] is None:
                continue  # NEW: decided in finish()
            total = len(m.candidate.rounds)
            if spoiled and total - len(spoiled) < MIN_KEPT_ROUNDS:
                why = left_out_note(b.metric, spoiled, total)
                out[b.text] = undecided_on_this_runner(b, why, self.settings.confidence)
                continue
            verdict = self._judge(m, b, set(spoiled), look, looks, max_rounds)
            if verdict.status is not Status.PASS:
                verdict = self._excused_by_runner(m, b, set(spoiled), verdict, (look, looks, max_rounds))
            out[b.text] = verdict
        if len(out) > 1:
            # the same Holm correction as finish(), at this look's level: a FAIL that stops the
            # rounds early must survive the final correction, else it would end INCONCLUSIVE
            # with rounds left unmeasured
            level = alpha_for_look(1.0 - self.settings.confidence, look, looks)
            out = dict(zip(out, stats.apply_holm(list(out.values()), level), strict=True))
        return out

    def _judge(
        self, m: Measurement, b: Budget, skip: set[int], look: int, looks: int, max_rounds: Optional[int]
    ) -> stats.Verdict:
        """``b`` judged on the rounds of ``m`` but those in ``skip``, at look ``look`` of ``looks``."""
        candidate, against = m.judged_values(b, self._baseline_lookup, skip=skip)
        attempts = pooled_weights(b.metric, m.candidate.kept_rounds(skip))
        return self._evaluate(m, b, candidate, against, look, looks, max_rounds, attempts)

    def _evaluate(
        self,
        m: Measurement,
        b: Budget,
        candidate: Sequence[float],
        against: Optional[Sequence[float]],
        look: int,
        looks: int,
        max_rounds: Optional[int],
        attempts: Optional[Sequence[float]] = None,
    ) -> stats.Verdict:
        """``b`` judged on ``candidate`` against ``against``: the other side's values when ``m``
        measured one in this run (paired rounds), else a stored baseline's (or None)."""
        paired = m.judged_series(b) is not None  # measured in the same interleaved rounds
        return stats.evaluate(
            replace(b, comparison="reference") if paired else b,
            list(candidate),
            reference=list(against) if paired and against is not None else None,
            baseline=None if paired or against is None else list(against),
            confidence=self.settings.confidence,
            looks=looks,
            look_index=look,
            hops=m.hops if b.per_hop else None,
            attempts=attempts,
            max_rounds=max_rounds,
        )

    def _excused_by_runner(
        self, m: Measurement, b: Budget, skip: set[int], verdict: stats.Verdict, look: tuple[int, int, Optional[int]]
    ) -> stats.Verdict:
        """``verdict`` of ``b`` (not a PASS) judged again where the runner's contention can
        explain the miss: first without the rounds a busy runner spoiled (or, for a rate
        against a side measured in turns, the pairs whose turns met different neighbours);
        then, for a rate with no side of this run to compare with, with the cores that others
        took given back; last, for a wall-clock figure against a stored baseline on a machine
        that measured slower than the baseline's, with that speed given back. Each step says
        in the verdict's note what it left out or gave back."""
        other = m.judged_series(b)
        together = m.design in SHARE_THE_RUNNER  # in whole rounds by turns, each side met neighbours of its own
        even_pairs = other is not None and judged_on_even_pairs(b, together)
        if even_pairs:
            assert other is not None
            busy = {i: why for i, why in m.uneven_rounds(other).items() if i not in skip}
        else:
            busy = {i: why for i, why in m.busy_rounds(also=None if together else other).items() if i not in skip}
        every_round_busy = False  # then the quiet-round step gave the taken cores back itself
        if busy and contention_matters(b, other is not None, together):
            every_round_busy = _too_few_quiet(m, skip, busy)
            verdict = self._judge_quiet_rounds(m, b, skip, busy, look, even_pairs, measured=verdict)
        if (
            verdict.status is not Status.PASS
            and not verdict.excused
            and not every_round_busy
            and explains_rates(b, other is not None)
        ):
            verdict = self._judge_given_back(m, b, skip, verdict, look)
        # as a machine of the baseline's speed, then of the budgets' machine's, would have
        # measured it, at most (measure/speed_excuse.py)
        excuses = (
            (self._slower if explains_speed(b, other is not None) else None, False),
            (self._budget_slower if explains_budget_speed(b) else None, True),
        )
        for slower, budgets_machine in excuses:
            if slower is None or verdict.status is Status.PASS or verdict.excused:
                continue
            candidate, against = m.judged_values(b, self._baseline_lookup, skip=skip)
            if budgets_machine:
                adjusted, against = budget_speed_given_back(b, candidate, against, slower)
            else:
                adjusted = speed_given_back(b.metric, candidate, slower)
            unexplained = "the speed difference does not explain the miss"
            verdict = self._rejudged(m, b, verdict, adjusted, against, look, slower.text(), unexplained, busy=False)
        return verdict

    def _judge_quiet_rounds(
        self,
        m: Measurement,
        b: Budget,
        skip: set[int],
        busy: dict[int, str],
        look: tuple[int, int, Optional[int]],
        even_pairs: bool = False,
        measured: Optional[stats.Verdict] = None,
    ) -> stats.Verdict:
        """A wall-clock budget a busy runner can make miss (validity.contention_matters) that did
        not pass, judged again without the rounds measured while the runner was busy (or, for a
        rate against a side measured in turns, ``even_pairs``: without the pairs of rounds
        whose turns met different neighbours): the rounds left decide, and with fewer than
        :data:`MIN_KEPT_ROUNDS` of them it is undecided on this runner (never a FAIL the
        neighbours may have caused: a rate floor FAILs only where the cores they took, given
        back, cannot explain the miss, :meth:`_judge_unexplained_miss`), showing ``measured``,
        its verdict on every round."""
        total = len(m.candidate.rounds)
        last = busy[max(busy)]
        kind = "whose two turns met different neighbours" if even_pairs else "measured while the runner was busy"
        why = f"{len(busy)} of {total} round(s) {kind} ({last})"
        if _too_few_quiet(m, skip, busy):
            unexplained = None
            if even_pairs or explains_rates(b, m.judged_series(b) is not None):
                unexplained = self._judge_unexplained_miss(m, b, skip, look, why, in_turns=even_pairs)
            return unexplained or undecided_on_this_runner(b, why, self.settings.confidence, measured=measured)
        verdict = self._judge(m, b, skip | set(busy), *look)
        rest = "alike-contended rounds" if even_pairs else "quiet rounds"
        note = f"judged on the {rest}: {why} left out"
        return replace(verdict, note=f"{verdict.note}; {note}" if verdict.note else note)

    def _judge_unexplained_miss(
        self,
        m: Measurement,
        b: Budget,
        skip: set[int],
        look: tuple[int, int, Optional[int]],
        why: str,
        in_turns: bool = True,
    ) -> Optional[stats.Verdict]:
        """A rate floor left with too few rounds to judge on: against a side measured in turns
        (``in_turns``), too few alike-contended pairs; with no side of this run (absolute, or
        against a stored baseline), no quiet round. Its FAIL over every round when the miss
        stays with each of the change's rounds given the cores that other processes and steal
        took from it (:func:`validity.scaled_up`; with no side of this run, the larger of that
        and what others wanted while the test sent no load, :func:`validity.given_back`), the
        most the runner can explain in the change's favour (a turn of the other side that met
        the neighbour only measured it lower). None when that does not FAIL: the budget stays
        undecided on this runner."""
        if b.op not in (">=", ">"):
            return None
        known = _candidate_taken(m, skip)
        verdict = self._judge(m, b, skip, *look)
        if not known or verdict.status is not Status.FAIL:
            return None
        candidate, against = m.judged_values(b, self._baseline_lookup, skip=skip)
        adjusted = None if in_turns else given_back(candidate, known, outside_when_idle())
        adjusted = adjusted or scaled_up(candidate, known)
        if adjusted is None:
            return None
        again = self._evaluate(m, b, adjusted, against, *look)
        if again.status is not Status.FAIL:
            return None
        where = "in the change's turns" if in_turns else f"during its {len(known)} round(s)"
        figure = f"given back, {b.metric} would measure {b.format_value(again.estimate)}"
        note = f"{why} kept: {taken_text(known)} {where}; {figure}: the runner does not explain the miss"
        return replace(verdict, note=f"{verdict.note}; {note}" if verdict.note else note)

    def _judge_given_back(
        self,
        m: Measurement,
        b: Budget,
        skip: set[int],
        verdict: stats.Verdict,
        look: tuple[int, int, Optional[int]],
    ) -> stats.Verdict:
        """A rate budget with no side of this run to compare with (absolute, or against a
        stored baseline) that did not pass, judged again as if the CPU other processes and steal
        took during its rounds had been the test's (validity.given_back). Where that puts it
        within the budget, the runner's contention explains the miss: undecided on this
        runner, with the figures. Otherwise ``verdict`` stands, saying that the contention does
        not explain it."""
        known = _candidate_taken(m, skip)
        if known is None:
            return verdict
        candidate, against = m.judged_values(b, self._baseline_lookup, skip=skip)
        adjusted = given_back(candidate, known)
        why = f"{taken_text(known)} during its {len(known)} round(s)"
        if adjusted is None and scaled_up(candidate, known) is not None:
            # quiet during the rounds: or a neighbour the stack's CPU weight held back?
            idle = outside_when_idle()  # what others take with no load of ours: 1 s, only here
            adjusted = given_back(candidate, known, idle)
            if adjusted is not None and idle is not None:
                why += f", and wanted {idle[0]:.2f} while the test sent no load (given back where a round lost less)"
        if adjusted is None:
            return verdict
        return self._rejudged(m, b, verdict, adjusted, against, look, why, "the runner does not explain the miss")

    def _rejudged(
        self,
        m: Measurement,
        b: Budget,
        verdict: stats.Verdict,
        adjusted: Sequence[float],
        against: Optional[Sequence[float]],
        look: tuple[int, int, Optional[int]],
        why: str,
        unexplained: str,
        busy: bool = True,
    ) -> stats.Verdict:
        """``b`` judged again on ``adjusted``, the candidate's figures with what the runner took
        (``why`` says what) given back: within the budget, undecided on this runner (``busy``:
        by its neighbours, else by its speed); otherwise ``verdict`` stands, noted ``unexplained``."""
        again = self._evaluate(m, b, adjusted, against, *look)
        figure = f"given back, {b.metric} would measure {b.format_value(again.estimate)}"
        if again.status is Status.PASS or (again.status is Status.INCONCLUSIVE and b.satisfied_by(again.estimate)):
            within = f"{why}; {figure}, within the budget"
            return undecided_on_this_runner(b, within, self.settings.confidence, busy, measured=verdict)
        note = f"{why}; {figure}: {unexplained}"
        return replace(verdict, note=f"{verdict.note}; {note}" if verdict.note else note)

    def _elapsed(self) -> str:
        return f"{time.monotonic() - self._started:.0f}s elapsed"

    def _run_group(
        self, m: Measurement, group: Sequence[Series], index: int, total: int, most: Optional[int] = None
    ) -> None:
        """Round ``index + 1`` of every series of ``group`` (of ``total`` planned so far, at most
        ``most``), loaded at the same moment when the group has more than one series.

        A round whose driver's saturation spoils a budget of ``m`` is measured again (the whole
        group, so the sides stay simultaneous). When every attempt saturated, the round is kept:
        judged with a note when the stack under test held the shared cores each time (the
        change did it), else left out of the budgets it spoils (measure/validity.py)."""
        cap = f" (max {most})" if most is not None and most > total else ""
        labels = " + ".join(s.label for s in group)
        self._progress(
            f"{self.test_id} [{m.key}] round {index + 1}/{total}{cap} {labels} "
            f"({group[0].shape.describe()}, {self._elapsed()})"
        )
        wheres = {id(s): f"{s.label} {s.url} (round {index + 1})" for s in group}
        for series in group:
            problem = series.guard() if series.guard is not None else None
            if problem:
                raise InvalidMeasurement(f"{wheres[id(series)]}: {problem}; no load was sent")
        turns = m.turn_s if len(group) > 1 else None
        # in fine turns the sides swap their slots from round to round, so neither keeps the first
        tasks = [self._round_task(s, wheres[id(s)], turns, (i + index) % 2) for i, s in enumerate(group)]
        held_every_time = {id(s): True for s in group}
        starved_now: set[int] = set()
        results: list[RoundResult] = []
        for attempt in range(self.settings.saturated_retries + 1):
            results = run_side_by_side(tasks)
            saturated = [
                (s, r, d)
                for s, r in zip(group, results, strict=True)
                if (d := disturbance(r)) is not None and self._spoils_a_budget(m, s, d)
            ]
            if not saturated:
                break
            held = {id(s): starved_by_stack(r, shared_cores(s.driver_or_fail())) for s, r, _ in saturated}
            for series, _, _ in saturated:
                held_every_time[id(series)] = held_every_time[id(series)] and held[id(series)] is not None
            if attempt == self.settings.saturated_retries:
                if len(group) > 1 and m.turn_s is None:  # in fine turns the sides never load at once
                    runner_held = all(d.by_runner for _, _, d in saturated)
                    own_load = starved_by_each_other(results, [s.driver_or_fail().cpus for s in group], runner_held)
                    if own_load is not None:  # loaded together they starve each other's drivers: one at a time
                        saturations = "; ".join(f"{s.label}: {d.describe()}" for s, _, d in saturated)
                        raise _SaturatedTogether(
                            f"loaded at once, the load drivers were saturated in "
                            f"{self.settings.saturated_retries + 1} attempts ({saturations}; {own_load})"
                        )
                    # the runner held the CPUs (steal, other processes): taking turns would not
                    # give them back, and would lose what loading together cancels; the round
                    # stays together, left out of the budgets it spoils (below)
                    self._progress(
                        f"{self.test_id} [{m.key}] round {index + 1}: {labels} saturated on every attempt "
                        "while the runner held the CPUs, not the sides: kept together, left out where it spoils"
                    )
                for series, _, _ in saturated:  # the stack under test kept the driver's CPUs: what it measured
                    if held_every_time[id(series)]:
                        series.starved.append(held[id(series)] or "")
                        starved_now.add(id(series))
                break
            for series, _, spoiler in saturated:
                where = wheres[id(series)]
                self._notes.append(f"{where}{MEASURED_AGAIN}{spoiler.describe()}")
                self._progress(f"{self.test_id} [{m.key}] {where}{MEASURED_AGAIN}{spoiler.describe()}")
        if turns is not None:  # a queue longer than a turn runs into the other side's: not apart
            medians = {s.label: r.latency.p50_ns / 1e9 for s, r in zip(group, results, strict=True)}
            overlap = queue_outlasts_turn(medians, turns)
            if overlap is not None:
                raise _QueueOutlastsTurn(overlap)
        for series, result in zip(group, results, strict=True):
            gone = series.guard() if series.guard is not None else None
            if gone:  # vanished during the round: what answered may not have been the target
                raise InvalidMeasurement(f"{wheres[id(series)]}: {gone} (during the round)")
            found = disturbance(result)
            if found is not None and id(series) not in starved_now:
                series.disturbed[len(series.rounds)] = found
            series.rounds.append(result)

    def _spoils_a_budget(self, m: Measurement, series: Series, found: Disturbance) -> bool:
        """Whether ``found`` spoils the figure of a timed budget judged on ``series`` (worth
        measuring the round again)."""
        return any(
            m.applies(b) and any(s is series for s in m.judged(b)) and found.spoils(b.metric) for b in self.budgets
        )

    def _round_task(
        self, series: Series, where: str, turn_s: Optional[float] = None, side: int = 0
    ) -> Callable[[], RoundResult]:
        """One attempt at a round of ``series``: the driver's run with the wire and cost counters
        around it; ``turn_s``: sending only in slots of this length, as side ``side`` (design ``turns``)."""
        shape = series.shape
        if turn_s is not None:  # read by the Rust driver (--turn, --turn-side)
            shape = replace(shape, extra={**shape.extra, "turn": f"{turn_s * 1000:g}ms", "turn_side": str(side)})
        if series.rounds or series.warm:  # warm already: the new connections only need to settle
            shape = replace(shape, warmup_s=min(shape.warmup_s, self.settings.round_warmup_s))
        if shape.rate and shape.arrival == "poisson":  # read by the Rust driver (--seed)
            shape = replace(shape, extra={**shape.extra, "seed": round_seed(series.label, len(series.rounds))})
        driver = series.driver_or_fail(where)

        def drive() -> RoundResult:
            started_at = time.time()
            try:
                result = driver.run(series.url, shape)
            except DriverError as exc:
                raise InvalidMeasurement(f"{series.label} {series.url}: {exc}") from exc
            return replace(result, started_at=started_at)

        def run() -> RoundResult:
            return run_with_wire(drive, series.wire, self._notes)

        return lambda: run_with_runner_state(
            lambda: run_with_costs(run, series.costs, where, self.read_costs, self._notes)
        )


def _too_few_quiet(m: Measurement, skip: set[int], busy: dict[int, str]) -> bool:
    """Whether fewer than :data:`MIN_KEPT_ROUNDS` of ``m``'s rounds are left once those in
    ``skip`` and the ``busy`` ones are left out."""
    return len(m.candidate.rounds) - len(skip) - len(busy) < MIN_KEPT_ROUNDS


def _candidate_taken(m: Measurement, skip: set[int]) -> Optional[list[tuple[float, int]]]:
    """The cores that other processes and steal took during each of the candidate's rounds
    but those in ``skip`` (validity.taken_cores), or None when any round's is unknown."""
    others = [s for s in m.series() if s is not m.candidate]  # their overlap is read off the clock
    taken = [
        taken_cores(m.candidate.rounds[i], [s.rounds[i] for s in others if len(s.rounds) > i])
        for i in range(len(m.candidate.rounds))
        if i not in skip
    ]
    known = [t for t in taken if t is not None]
    return known if len(known) == len(taken) else None
