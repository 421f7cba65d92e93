"""The verdict vocabulary: what a budget's outcome can be, in one enum."""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """Outcome of one budget; compares equal to its name (``Status.PASS == "PASS"``).

    PASS, FAIL and INCONCLUSIVE come from the statistics; INVALID means the measurement
    cannot be trusted (a saturated driver, an unreachable target, unexpected errors);
    NEW means there was no stored baseline to compare with. ACCEPTED is a FAIL that the
    user accepted explicitly, with a reason (``--netperf-accept``, ``NETPERF_ACCEPT``, the
    ``netperf_accept`` ini key, or a ``Netperf-Accept:`` trailer of the HEAD commit; see
    :mod:`pytest_netperf.verdict.acceptance`): the regression stands in every report, but
    it does not fail the test. Only a FAIL can become ACCEPTED.
    """

    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    INVALID = "INVALID"
    NEW = "NEW"
    ACCEPTED = "ACCEPTED"

    def __str__(self) -> str:
        return self.value

    @property
    def word(self) -> str:
        """The summary-line word: ``passed``, ``failed``, ``accepted``, ``inconclusive``, ``invalid``, ``new``."""
        return _WORDS[self]

    @property
    def judged(self) -> bool:
        """True for the statistical outcomes (PASS, FAIL, INCONCLUSIVE)."""
        return self in (Status.PASS, Status.FAIL, Status.INCONCLUSIVE)

    @property
    def rank(self) -> int:
        """Severity order, worst first (FAIL 0 … PASS 5): for sorting and overall verdicts."""
        return WORST_FIRST.index(self)

    @classmethod
    def parse(cls, value: object) -> Status:
        """``Status`` from a member or its name (any case); ValueError otherwise."""
        if isinstance(value, Status):
            return value
        text = str(getattr(value, "value", value)).upper()
        try:
            return cls(text)
        except ValueError:
            known = ", ".join(s.value for s in cls)
            raise ValueError(f"unknown verdict {value!r}; expected one of {known}") from None


#: Verdicts from worst to best.
WORST_FIRST = (Status.FAIL, Status.INVALID, Status.INCONCLUSIVE, Status.ACCEPTED, Status.NEW, Status.PASS)
#: Order of the summary line.
SUMMARY_ORDER = (Status.PASS, Status.FAIL, Status.ACCEPTED, Status.INCONCLUSIVE, Status.INVALID, Status.NEW)
#: Verdicts the summary line counts only when some row has them (ACCEPTED: a run with no
#: acceptance keeps its summary line as it was).
SUMMARY_WHEN_PRESENT = (Status.ACCEPTED,)
_WORDS = {
    Status.PASS: "passed",
    Status.FAIL: "failed",
    Status.INCONCLUSIVE: "inconclusive",
    Status.INVALID: "invalid",
    Status.NEW: "new",
    Status.ACCEPTED: "accepted",
}
