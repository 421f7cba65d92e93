"""The ``netperf`` fixture: the test's gate."""

from __future__ import annotations

import pytest

from pytest_netperf.errors import NetperfError
from pytest_netperf.measure.gate import Gate
from pytest_netperf.plugin.markers import MARKER
from pytest_netperf.plugin.session import STASH_GATE, session_of


@pytest.fixture
def netperf(request: pytest.FixtureRequest) -> Gate:
    """Measure targets for this test's ``@pytest.mark.netperf`` budgets.

    ``netperf.measure(url, connections=.., rate=.., duration=..)`` or
    ``netperf.compare(candidate, reference, ...)``; budgets are judged when the test ends.
    """
    item = request.node
    if item.get_closest_marker(MARKER) is None:
        raise NetperfError(f"{item.nodeid} uses the netperf fixture without @pytest.mark.netperf(...)")
    gate = session_of(request.config).new_gate(item)
    item.stash[STASH_GATE] = gate
    return gate
