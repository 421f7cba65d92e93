"""Call stacks per request: the marginal of two profiled runs, kept to the heaviest stacks.

A profiled run gives instructions by folded call stack (``root;…;leaf``, see
runtime/callgrind_output.py). Like a counted total, a stack's cost per request is the marginal
of a short and a long run, (stack(high) - stack(low)) / (high - low), so start-up cancels; of
several repetitions the median is kept. Only the :data:`STACK_LIMIT` heaviest stacks (by
absolute value) are kept; the rest are summed into :data:`OTHER_STACK`, so a baseline or a
report stays small and the stacks still add up to the total.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

#: At most this many stacks are kept per node and tool.
STACK_LIMIT = 2000
#: The one frame that stands for every stack left out.
OTHER_STACK = "[other stacks]"
#: A stack whose cost per request is smaller than this (in absolute value) is dropped as zero.
ZERO = 1e-9


def marginal_stacks(pairs: Sequence[tuple[Mapping[str, float], Mapping[str, float], int]]) -> dict[str, float]:
    """stack -> cost per extra request: the median over ``(low stacks, high stacks, extra
    requests)`` repetitions of (high - low) / extra; a stack a run did not have counted 0 in it."""
    names = {name for low, high, _ in pairs for name in (*low, *high)}
    out: dict[str, float] = {}
    for name in names:
        values = [(high.get(name, 0.0) - low.get(name, 0.0)) / extra for low, high, extra in pairs if extra > 0]
        value = float(statistics.median(values)) if values else 0.0
        if abs(value) > ZERO:
            out[name] = value
    return out


def heaviest(stacks: Mapping[str, float], limit: int = STACK_LIMIT) -> dict[str, float]:
    """The ``limit`` stacks of largest absolute cost (ties by name), the rest summed into
    :data:`OTHER_STACK` (left out when nothing is left out)."""
    ranked = sorted(stacks.items(), key=lambda item: (-abs(item[1]), item[0]))
    kept = dict(ranked[:limit])
    rest = ranked[limit:]
    if rest:
        kept[OTHER_STACK] = kept.get(OTHER_STACK, 0.0) + sum(value for _, value in rest)
    return kept


def folded(stacks: Mapping[str, float], scale: float = 1.0) -> str:
    """``frame;frame;leaf COUNT`` lines (counts × ``scale``, rounded to whole numbers; stacks
    that round to zero or below are left out: a flame graph draws only positive widths)."""
    lines = []
    for stack, value in sorted(stacks.items()):
        count = round(value * scale)
        if count > 0:
            lines.append(f"{stack} {count}")
    return "\n".join(lines) + ("\n" if lines else "")
