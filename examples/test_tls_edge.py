"""TLS edge: what the server certificate's key costs per handshake.

The claim: an edge that terminates TLS with an ECDSA P-256 certificate spends far less CPU
per new connection than one with an RSA-2048 certificate (the server signs each full
handshake with its key; an ECDSA P-256 signature is much cheaper than an RSA-2048 one), so
it also takes more new connections per second on the same cores.

What this suite measures on the machine it runs on: two nginx edges, each in front of its
own echo server, identical but for the key type of the certificate (minted by the
session's test CA; the gate trusts that CA without the test naming it). The driver opens a
new connection for every request and resumes no session, so every request is a full TLS
handshake. ``cpu_per_request[gw]`` is the CPU the edge's container spends per request.

Measured here (2 cores, 4 rounds of 1 s a side, ``pytest -m netperf
examples/test_tls_edge.py``; six runs idle and five beside ``busy-neighbor --level busy``):
ECDSA's CPU per handshake was 0.44x-0.49x RSA-2048's, and it took 1.8x-2.2x the
handshakes per second, every run green (docs/tls.md has the table). On a machine of half
the CPU (``benchmarks/slow_machine.py --cpus 1``: the driver shares the one CPU with the
edges, and it verifies an ECDSA signature more slowly than an RSA one) the handshake rate
came to 1.236x [1.204x, 1.269x] and 1.334x, the CPU per handshake to 0.641x [0.607x, 0.677x].
The budgets leave room on both sides: at most 0.8x the CPU per handshake, at least 1.1x the
handshakes per second.
"""

import pytest

from pytest_netperf import builders

KEY_TYPES = ("ecdsa-p256", "rsa-2048")
#: A handshake per request, none resumed: every request pays the full handshake.
FULL_HANDSHAKES = {"new_connection_per_request": True, "tls": {"resumption": False}}


@pytest.fixture(scope="module")
def edges(netperf_docker):
    """An nginx TLS edge per key type (each in front of its own echo server), by key type."""
    with (
        netperf_docker.up(builders.gateway_topology("nginx", tls={"key_type": KEY_TYPES[0]})) as ecdsa,
        netperf_docker.up(builders.gateway_topology("nginx", tls={"key_type": KEY_TYPES[1]})) as rsa,
    ):
        yield {KEY_TYPES[0]: ecdsa, KEY_TYPES[1]: rsa}


@pytest.mark.netperf("cpu_per_request[gw] <= 0.8x reference", "rps >= 1.1x reference", "errors == 0")
def test_ecdsa_edge_spends_less_cpu_per_handshake(netperf, edges):
    """As many new connections as the edges take (closed loop, 4 connections), every one a
    full handshake: the edge's CPU per handshake and the handshakes per second with ECDSA
    P-256 against RSA-2048, in rounds that take turns between the two edges."""
    netperf.compare(
        edges["ecdsa-p256"].endpoint("gateway-tls"),
        reference=edges["rsa-2048"].endpoint("gateway-tls"),
        connections=4,
        **FULL_HANDSHAKES,
    )
