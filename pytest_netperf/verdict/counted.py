"""Verdicts on counted costs (instructions, system calls per request) from repetitions.

A counting pass repeats each count (at least twice: one repetition has no spread); the counts
barely move, so there is no sampling distribution to test against and the verdict carries
no p-value (NaN; it is ``exact``, so Holm leaves it out). The range of the repetitions bounds
the value (or the ratio of every candidate repetition to every reference repetition): PASS
when the whole range meets the budget, FAIL when none of it does. When the budget lies
inside the range, the range is the count's resolution: narrower than
:data:`~pytest_netperf.defaults.COUNTED_RESOLUTION` the value is within resolution of
the budget (PASS), wider the count is not deterministic enough to decide (INCONCLUSIVE).
A count whose median misses the budget by less than its tool's ``named_floor`` per request
(0.05 system calls: the calls a request's timing moves, such as epoll batching; one
instruction) is within the count's resolution too (PASS, with the miss in the note): no
part of the request's work changed by as much as the report would name.

A ratio whose miss is larger than that floor, where no single part (a system call, a
function) changed against the reference by the floor or more, nor by more than its own
repetitions moved it, is within the count's resolution too (PASS): over TLS keep-alive, a few
reads that split differently and an epoll batch add up to 0.07 system calls per request on an
unchanged edge, each part well under 0.05.

A side whose own repetitions spread wider than that resolution counted work that depends
on timing (reads that split differently, timers): a few repetitions do not bound such a
count, so the range is widened by that side's measured spread before it is judged, and a
difference inside the sides' own spread is undecided rather than a change.

A count that depends on timing may still agree with itself over a few repetitions: were its
values drawn at random, each side's two repetitions would fall wholly above the other side's
one time in six (three: one time in twenty), each side's spread small. So a ratio that fails
by less than :data:`~pytest_netperf.defaults.COUNTED_CONFIRM_MARGIN` times the larger spread
of its sides' repetitions (:data:`~pytest_netperf.defaults.COUNTED_CONFIRM_MARGIN_TWO` times on
two repetitions a side: :func:`needs_confirmation`) is counted again, each side
:data:`~pytest_netperf.defaults.COUNTING_CONFIRM_REPETITIONS` times in turn, and judged on
those counts (measure/counting_step.py): drawn at random, six fall wholly above six one time
in 924, while a change of the request's work does not move with the draw.

For the ``change`` policy (README: red only when the rounds show a harmful change from no
change) a ratio verdict's ``p_change`` is 0 when every (widened) ratio is worse than 1.0x, and
1 otherwise: repetitions that reach no change show no change.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Optional

from pytest_netperf import defaults
from pytest_netperf.budget import metrics
from pytest_netperf.budget.grammar import Budget
from pytest_netperf.results.counted import counting_tool, relative_spread
from pytest_netperf.verdict.stats import Verdict
from pytest_netperf.verdict.status import Status

METHOD = "counted"


def evaluate_repetitions(
    budget: Budget,
    candidate: Sequence[float],
    reference: Optional[Sequence[float]] = None,
    max_spread: float = defaults.COUNTED_RESOLUTION,
    floor: float = 0.0,
    parts: Optional[Sequence[tuple[str, float]]] = None,
) -> Verdict:
    """Judge ``budget`` on the repetitions of a counting pass (``reference`` for a ratio budget);
    ``floor``: the smallest miss per request that is a change (the counting tool's named floor);
    ``parts``: the parts (system calls, functions) that changed against the reference by the
    floor or more (:func:`~pytest_netperf.results.counted.parts_changed`; None: not known)."""
    if not candidate or (budget.form == "ratio" and not reference):
        raise ValueError(f"{budget.text}: no repetitions to judge")
    sides = [candidate, *([reference] if budget.form == "ratio" and reference is not None else [])]
    widen = max((relative_spread(side) for side in sides), default=0.0)
    widen = widen if widen > max_spread else 0.0  # a deterministic count keeps its range
    if budget.form == "ratio":
        assert reference is not None
        if min(reference) <= 0:
            raise ValueError(f"{budget.text}: the reference counted {min(reference):g} per request")
        estimate = statistics.median(candidate) / statistics.median(reference)
        low, high = min(candidate) / max(reference), max(candidate) / min(reference)
        described = (
            f"{len(candidate)} repetitions each side; spread {relative_spread(candidate):.2%} (candidate), "
            f"{relative_spread(reference):.2%} (reference); the interval holds every candidate/reference ratio"
        )
    else:
        estimate = statistics.median(candidate)
        low, high = min(candidate), max(candidate)
        described = (
            f"{len(candidate)} repetitions; spread {relative_spread(candidate):.2%}; the interval is their range"
        )
    if widen:
        low, high = low / (1.0 + widen), high * (1.0 + widen)
        described += (
            f", widened by {widen:.2%}: the count depends on timing (its repetitions spread wider than "
            f"{max_spread:.0%}), so a difference inside that spread is not a change"
        )
    width = (high - low) / abs(estimate) if estimate else math.inf
    note = f"counted: {described}"
    if all(budget.satisfied_by(v) for v in (low, high)):
        status = Status.PASS
    elif not any(budget.satisfied_by(v) for v in (low, high)):
        status = Status.FAIL
        miss = _miss_per_request(budget, float(estimate), reference)
        if miss < floor:
            status = Status.PASS
            note += (
                f"; it misses the budget by {miss:.3g} per request, less than {floor:g}: within the count's "
                "resolution (what a request's timing moves), not a change of the request's work"
            )
        elif parts is not None and not parts and budget.form == "ratio":
            status = Status.PASS
            note += (
                f"; it misses the budget by {miss:.3g} per request, but no one of its "
                f"{counting_tool(metrics.tool_of(budget.metric)).parts} changed by {floor:g} or more per request "
                "(or by more than its own repetitions moved it): the miss is spread thinly over parts that "
                "timing moves, not a change of the request's work"
            )
    elif width <= max_spread:
        # the budget lies within the counts' own resolution of the value: no material change
        status = Status.PASS
        note += f"; the budget lies inside that range, narrower than {max_spread:.0%}: within the count's resolution"
    else:
        status = Status.INCONCLUSIVE
        note += (
            f"; the budget lies inside that range, which is wider than {max_spread:.0%}: "
            "the count is not deterministic enough here to decide"
        )
    p_change = _p_change(budget, low, high) if budget.form == "ratio" else math.nan
    return Verdict(
        budget=budget,
        status=status,
        estimate=float(estimate),
        ci_low=float(low),
        ci_high=float(high),
        threshold=budget.threshold,
        n_rounds=len(candidate),
        p_value=math.nan,  # no sampling distribution: the range of the counts decides, not a test
        method=METHOD,
        note=note,
        exact=True,
        p_change=p_change,
    )


def needs_confirmation(verdict: Verdict, candidate: Sequence[float], reference: Sequence[float]) -> bool:
    """Whether a FAIL of a ratio budget on these repetitions is close enough to their own spread
    to be counted again: the interval clears the budget by less than
    :data:`~pytest_netperf.defaults.COUNTED_CONFIRM_MARGIN` times the larger side's spread
    (:data:`~pytest_netperf.defaults.COUNTED_CONFIRM_MARGIN_TWO` times on two repetitions a
    side). Drawn at random, two a side clear their own spread threefold one time in ninety and
    twelvefold one time in a thousand; three a side clear it threefold one time in four thousand.
    A count whose repetitions all agree is not counted again."""
    if verdict.status is not Status.FAIL or verdict.budget.form != "ratio":
        return False
    spread = max(relative_spread(candidate), relative_spread(reference))
    if spread <= 0.0:
        return False
    margin = confirm_margin(min(len(candidate), len(reference)))
    threshold = verdict.budget.threshold
    upper = verdict.budget.op in ("<", "<=")  # a FAIL lies wholly above an upper bound, below a lower one
    clearance = (verdict.ci_low - threshold) if upper else (threshold - verdict.ci_high)
    return clearance / threshold < margin * spread


def confirm_margin(repetitions: int) -> float:
    """How many times its repetitions' spread a FAIL on ``repetitions`` a side must clear its
    budget by not to be counted again (:func:`needs_confirmation`)."""
    return defaults.COUNTED_CONFIRM_MARGIN_TWO if repetitions < 3 else defaults.COUNTED_CONFIRM_MARGIN


def _miss_per_request(budget: Budget, estimate: float, reference: Optional[Sequence[float]]) -> float:
    """How far the median ``estimate`` misses ``budget``, per request (a ratio's miss times the
    reference's median count)."""
    miss = abs(estimate - budget.threshold)
    if budget.form == "ratio" and reference:
        miss *= float(statistics.median(reference))
    return miss


def _p_change(budget: Budget, low: float, high: float) -> float:
    """0 when every ratio in [low, high] is worse than no change (1.0x), else 1: the counted
    stand-in for the one-sided p-value of "no change" that the ``change`` policy reads."""
    worse = high < 1.0 if metrics.get(budget.metric).higher_is_better else low > 1.0
    return 0.0 if worse else 1.0
