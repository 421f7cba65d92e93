"""Accepting a regression: the grammar of an acceptance and what it does to a verdict.

An intended regression gets through the gate by saying so, with a reason, in one of
these sources (each an :class:`Acceptance`):

- the option ``--netperf-accept REASON`` (default: the environment variable
  ``NETPERF_ACCEPT``, then the ini key ``netperf_accept``); an empty ``NETPERF_ACCEPT``
  accepts nothing;
- a ``Netperf-Accept: REASON`` trailer of the HEAD commit of the repository under test
  (one acceptance per trailer).

The value's grammar::

    VALUE  := [SCOPE ":" SPACE] REASON
    SCOPE  := TEST | 'BUDGET' | TEST SPACE 'BUDGET'      (the budget in '…' or "…")
    TEST   := test_name[params] | path.py::[Class::]name[params]

``REASON`` is any non-empty text. A value is scoped only when what stands before its
first ``:`` is a test (a name starting with ``test``, or a node id with ``::``) or a
quoted budget; anything else is all reason (``label netperf:accept-regression``,
``JIRA-12: slower TLS``). A scope names the test by its function name (any
parametrization of it) or by its node id; a budget is matched by meaning
(``'p50<1ms'`` is ``'p50 < 1ms'``). Unscoped, an acceptance covers every budget.

Its effect (:func:`accepted_status`): a budget whose verdict is FAIL and which an
acceptance covers becomes ACCEPTED. INVALID and INCONCLUSIVE never do: only a measured
regression can be accepted. Nothing here imports pytest or runs git.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional, Sequence

from pytest_netperf.budget.grammar import Budget
from pytest_netperf.errors import BudgetSyntaxError
from pytest_netperf.verdict.status import Status

#: The option, its environment variable and ini key, and the commit trailer.
ACCEPT_OPTION = "--netperf-accept"
ACCEPT_ENV = "NETPERF_ACCEPT"
ACCEPT_INI = "netperf_accept"
ACCEPT_TRAILER = "Netperf-Accept"

_PARAMS = r"(?:\[[^\]\s]*\])?"
#: A test: ``test…`` (a pytest function name) or a node id ``file.py::[Class::]name``.
_TEST = re.compile(rf"(?:test\w*{_PARAMS}|[\w./-]+\.py(?:::\w+)+{_PARAMS})")
_QUOTES = ("'", '"')


class AcceptanceError(ValueError):
    """A malformed acceptance; the message names its source and the text."""


@dataclass(frozen=True)
class Acceptance:
    """One explicit acceptance of regressions: why, where it was given, and what it covers."""

    reason: str
    #: Where it was given: ``--netperf-accept``, ``NETPERF_ACCEPT``, ``ini netperf_accept``,
    #: ``trailer Netperf-Accept of commit 1a2b3c4``.
    source: str
    #: The test it is scoped to (a function name or a node id), None: every test.
    test: Optional[str] = None
    #: The budget it is scoped to, None: every budget.
    budget: Optional[Budget] = None

    def covers(self, test_id: str, budget: Budget) -> bool:
        """Whether this acceptance applies to ``budget`` of the test ``test_id`` (a node id)."""
        if self.test is not None and not names_test(self.test, test_id):
            return False
        return self.budget is None or same_budget(self.budget, budget)

    @property
    def scope(self) -> str:
        """The scope as written back (``test_x 'p50 < 1ms'``), "" for every budget."""
        parts = [self.test or "", f"'{self.budget.text}'" if self.budget is not None else ""]
        return " ".join(p for p in parts if p)

    def describe(self) -> str:
        """``--netperf-accept: slower TLS handshake`` (the scope, when there is one, in brackets)."""
        scope = f" [{self.scope}]" if self.scope else ""
        return f"{self.source}{scope}: {self.reason}"


def parse_acceptance(text: str, source: str) -> Acceptance:
    """The :class:`Acceptance` that ``text`` (given in ``source``) says; AcceptanceError naming
    the source and the text when it is malformed (empty, a scope without a reason, an
    unclosed quote, a quoted budget that is no budget)."""
    value = text.strip()
    if not value:
        raise AcceptanceError(f"{source}: empty; give the reason the regression is accepted (got {text!r})")
    test: Optional[str] = None
    rest = value
    head = re.match(r"[^\s'\":]+(?:::[^\s'\":]+)*", value)
    if head and _TEST.fullmatch(head.group()):
        after = value[head.end() :]
        if after.startswith(":") or after.lstrip().startswith(_QUOTES):
            test, rest = head.group(), after.lstrip()
    budget: Optional[Budget] = None
    if rest.startswith(_QUOTES):
        quote = rest[0]
        end = rest.find(quote, 1)
        if end < 0:
            raise AcceptanceError(f"{source}: unclosed {quote} around the budget in {value!r}")
        budget_text = rest[1:end]
        try:
            budget = Budget.parse(budget_text)
        except BudgetSyntaxError as exc:
            raise AcceptanceError(f"{source}: {budget_text!r} in {value!r} is not a budget: {exc}") from None
        rest = rest[end + 1 :].lstrip()
        if not rest.startswith(":"):
            raise AcceptanceError(f"{source}: expected ': REASON' after the scope in {value!r}")
    elif test is None:
        return Acceptance(_one_line(value), source)
    reason = _one_line(rest[1:])
    if not reason:
        raise AcceptanceError(f"{source}: no reason after the scope in {value!r}; write SCOPE: REASON")
    return Acceptance(reason, source, test, budget)


def parse_acceptances(texts: Sequence[tuple[str, str]]) -> list[Acceptance]:
    """:func:`parse_acceptance` of each (text, source) pair, in order."""
    return [parse_acceptance(text, source) for text, source in texts]


def names_test(selector: str, test_id: str) -> bool:
    """Whether the scope ``selector`` names the test ``test_id``: its node id, or its function
    name (``test_x`` matches ``f.py::test_x`` and every ``f.py::test_x[param]``), each with
    or without the parametrization."""
    if "::" in selector:
        return test_id == selector or _without_params(test_id) == selector
    name = test_id.rsplit("::", 1)[-1]
    return name == selector or _without_params(name) == selector


def same_budget(a: Budget, b: Budget) -> bool:
    """Whether two budgets say the same (their texts may differ in spacing or units)."""
    return replace(a, text="") == replace(b, text="")


def accepted_status(
    status: Status, test_id: str, budget: Budget, acceptances: Sequence[Acceptance]
) -> tuple[Status, Optional[Acceptance]]:
    """The status after acceptance, and the acceptance that changed it (the first that covers
    the budget): a covered FAIL becomes ACCEPTED; every other status stays as it is."""
    if status is not Status.FAIL:
        return status, None
    for acceptance in acceptances:
        if acceptance.covers(test_id, budget):
            return Status.ACCEPTED, acceptance
    return status, None


#: How the note of an ACCEPTED budget begins (:func:`accepted_note`).
ACCEPTED_NOTE_PREFIX = "FAIL accepted as an intended regression"


def accepted_note(acceptance: Acceptance) -> str:
    """The note of an ACCEPTED budget: ``FAIL accepted as an intended regression by
    --netperf-accept: why``."""
    return f"{ACCEPTED_NOTE_PREFIX} by {acceptance.describe()}"


def _without_params(name: str) -> str:
    return name.split("[", 1)[0]


def _one_line(text: str) -> str:
    return " ".join(text.split())
