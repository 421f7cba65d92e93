"""Gateway overhead: client -> echo directly, through nginx, and through Kong.

What the original study (a Kong evaluation) measured: ApacheBench against an echo service
directly, through nginx and through Kong, at concurrency 1 and 100. Kong cost about
9-10% of the requests per second at c=100. The study also found that ApacheBench speaks
HTTP/1.0, so keep-alive silently failed through Kong and those numbers were meaningless.

What this suite measures on the machine it runs on: the same three paths in one Docker
network, with the Rust driver on the host speaking HTTP/1.1 keep-alive, in interleaved
rounds (reference, candidate, candidate, reference, ...). Every round reports the sockets
it opened: with keep-alive working that is exactly the connection count, so
``sockets <= 100`` fails loudly if a gateway starts closing client connections.

On a 2-core machine the driver, the gateway and the echo server share two cores, so the
throughput loss measures CPU contention as much as the gateway: see the README's example
section for the figures measured here. The budgets below are set from those figures
with margin; the baseline budgets catch a regression of the gateway config itself.
Kong runs only from its official image: without it, the Kong cases skip with the reason.
"""

import pytest

GATEWAYS = ["nginx", "kong"]


@pytest.mark.parametrize("gateway_topology", GATEWAYS, indirect=True)
@pytest.mark.netperf("rps_loss <= 80%", "rps >= 0.7x baseline", "sockets <= 100")
def test_throughput_c100(netperf, gateway_topology):
    """Closed loop, 100 connections: the gateway's cost in requests per second.

    Each machine records its own baseline on its first run (examples/pytest.ini); on one
    machine the same config measured 0.87x [0.80x, 0.94x] of its own, too close to a 0.8x
    budget to stay green.
    """
    netperf.compare(
        gateway_topology.endpoint("gateway"),
        reference=gateway_topology.endpoint("direct"),
        connections=100,
    )


@pytest.mark.parametrize("gateway_topology", GATEWAYS, indirect=True)
@pytest.mark.netperf("p50_added <= 1ms", "p99_added <= 3ms", "sockets <= 1")
def test_latency_c1(netperf, gateway_topology):
    """One connection at a fixed 500 requests/s (open loop): the latency a gateway adds."""
    netperf.compare(
        gateway_topology.endpoint("gateway"),
        reference=gateway_topology.endpoint("direct"),
        connections=1,
        rate=500,
    )


@pytest.mark.parametrize("gateway_topology", ["nginx"], indirect=True)
@pytest.mark.netperf(
    "instructions_per_request[gw] <= 30k",
    "syscalls_per_request[gw] <= 8",
    "instructions_per_request[gw] <= 1.02x baseline",
    "syscalls_per_request[gw] <= 1.05x baseline",
)
def test_nginx_cost_per_request(netperf, gateway_topology):
    """What nginx does to proxy one request, counted under valgrind and strace: about 18k
    instructions and 7 system calls with the upstream keep-alive pool (without it, 13).

    The counted costs also gate against the committed baseline (``.netperf/``): they do not
    depend on the machine's speed or make (two Intel Xeon VMs counted 18,357 and 18,425
    instructions, an AMD EPYC VM 18,409: within 0.3%), so a machine of another class judges
    them against it too, while its wall-clock figures are its own."""
    netperf.measure(gateway_topology.endpoint("gateway"), connections=1, rate=500)
