"""The gate on a busy runner: an unchanged stack stays green beside ``busy-neighbor --level busy``.

``shared/noise/busy-neighbor`` (found as benchmarks/_neighbour.py finds it: ``$NETPERF_BUSY_NEIGHBOR``,
``../shared/noise/busy-neighbor`` beside the repository, or PATH) burns half of every core in
random bursts for the whole run. Beside it, one echo container is measured as its own reference
at a fixed moderate rate (A/A) against ``cpu_per_request[echo] <= 1.05x``, ``rps >= 0.95x`` and
``p90 <= 1.10x`` the reference. Nothing changed, so nothing may be red: no FAIL and no INVALID
(a neighbour the runner has is said in words, not turned red). An INCONCLUSIVE that the default
final-INCONCLUSIVE policy (``change``, verdict/policy.py) keeps green is allowed. Real
containers, the real driver; about two minutes.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from docker_helpers import skip_without_images
from pytester_helpers import json_report, netperf_args

pytestmark = pytest.mark.docker

#: benchmarks/_neighbour.py: finds, starts and always stops busy-neighbor (stdlib only).
NEIGHBOUR_MODULE = Path(__file__).resolve().parents[2] / "benchmarks" / "_neighbour.py"

BUDGETS = ("cpu_per_request[echo] <= 1.05x reference", "rps >= 0.95x reference", "p90 <= 1.10x reference")

GATE = f"""
import pytest
from pytest_netperf.topology import builders


@pytest.mark.netperf(*{BUDGETS!r})
def test_echo_against_itself_beside_a_busy_neighbour(netperf, netperf_topology):
    echo = netperf_topology(builders.echo_topology()).endpoint("direct")
    netperf.compare(echo, reference=echo, connections=8, rate=1000)
"""

# as tests/integration/test_system_costs.py: many short rounds (CPU per request moves ~8% from
# round to round on this 2-core runner even when idle), up to 40 a side
RUN = netperf_args(8, 40, "0.5", "0.5", "--netperf-json=results.json", "-rA")
#: busy-neighbor's own bound: longer than the run may take (the test stops it sooner).
NEIGHBOUR_SECONDS = 240.0
#: The pytester run's bound, so that the test stays under about three minutes.
RUN_TIMEOUT_S = 180.0


def load_neighbour() -> ModuleType:
    """benchmarks/_neighbour.py as the module ``_neighbour`` (what the benchmarks import)."""
    loaded = sys.modules.get("_neighbour")
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location("_neighbour", NEIGHBOUR_MODULE)
    assert spec is not None and spec.loader is not None, NEIGHBOUR_MODULE
    module = importlib.util.module_from_spec(spec)
    sys.modules["_neighbour"] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def neighbour() -> ModuleType:
    """The helper module, once Docker, the echo image and busy-neighbor are all here."""
    skip_without_images("echo")
    module = load_neighbour()
    try:
        module.find_program()
    except module.NeighbourMissing as exc:
        pytest.skip(f"no busy runner to measure beside: {exc}")
    return module


def test_an_unchanged_stack_is_not_red_beside_a_busy_neighbour(
    pytester: pytest.Pytester, neighbour: ModuleType
) -> None:
    pytester.makepyfile(test_busy=GATE)
    with neighbour.Neighbour(neighbour.parse_scenario("busy"), seconds=NEIGHBOUR_SECONDS, seed=1) as busy:
        result = pytester.runpytest_subprocess(*RUN, timeout=RUN_TIMEOUT_S)
        still_running = busy.running
    # the neighbour really ran beside the whole gate, at about its duty
    assert still_running, f"busy-neighbor ended before the gate did: {busy.report.output[-1000:]}"
    assert busy.report.busy, f"busy-neighbor printed no worker line: {busy.report.output[-1000:]}"
    assert busy.report.mean_busy >= 0.3, busy.report.summary()

    rows = {row["budget"]: row for row in json_report(pytester)["rows"]}
    seen = {
        budget: {"verdict": row["verdict"], "measured": row["measured"], "notes": row["notes"]}
        for budget, row in rows.items()
    }
    context = f"beside busy-neighbor ({busy.report.summary()}):\n{json.dumps(seen, indent=1)}"
    assert set(BUDGETS) <= set(rows), context
    red = {budget: row["verdict"] for budget, row in rows.items() if row["verdict"] in ("FAIL", "INVALID")}
    assert not red, f"an unchanged stack went red {red} {context}"
    # INCONCLUSIVE is green only as the default policy keeps it: the run itself says so
    assert result.ret == 0, result.stdout.str()[-3000:]
