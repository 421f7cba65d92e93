"""The base revision's twin of a stack when the two revisions name different services.

A pull request that renames, adds or removes a service still has its head measured; the
twin starts the head's services that the base revision has, and a head service missing
there has no base side: its budgets against ``base`` are NEW with :func:`missing_note`.
Pure functions over service names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from pytest_netperf.topology.resources import Resources

__all__ = ["missing_note", "twin_resources", "twin_services"]


def twin_services(
    wanted: Sequence[str] | None, head_started: Sequence[str], base_services: Iterable[str]
) -> tuple[tuple[str, ...] | None, list[str]]:
    """(``services=`` of the twin, the head's started services the base revision lacks).

    ``wanted`` is the head's ``services=`` (None: all, and the twin starts all of its own);
    otherwise the twin starts those of ``wanted`` that exist at the base (possibly none), and
    what they depend on there.
    """
    known = set(base_services)
    missing = [name for name in head_started if name not in known]
    if wanted is None:
        return None, missing
    return tuple(name for name in wanted if name in known), missing


def twin_resources(
    resources: Sequence[tuple[str, Resources]], base_services: Iterable[str]
) -> tuple[tuple[str, Resources], ...]:
    """The head's ``resources=`` entries for services the base revision has."""
    known = set(base_services)
    return tuple((name, limits) for name, limits in resources if name in known)


def missing_note(
    service: str, head_services: Iterable[str], base_services: Iterable[str], revision: str, file: Path | str
) -> str:
    """Why ``service`` has no base side: not in ``file`` at ``revision`` (``main (3f2a1c9)``),
    renamed (one service only at the base, one only at the head) or new in this change."""
    head, base = set(head_services), sorted(set(base_services))
    only_base = [name for name in base if name not in head]
    only_head = sorted(name for name in head if name not in base)
    if len(only_base) == 1 and only_head == [service]:
        why = f"renamed from {only_base[0]!r}?"
    elif only_base:
        why = f"renamed from one of {', '.join(repr(n) for n in only_base)}, or new in this change?"
    else:
        why = "new in this change"
    return (
        f"service {service!r} is not in {file} at the base revision {revision} "
        f"(its services: {', '.join(base)}): {why} nothing to compare with, recorded as NEW"
    )
