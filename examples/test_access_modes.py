"""Access modes between containers: how the way a client reaches a service costs.

What the original study (a container-service network study) measured: a client calling
an echo service (a) by the container's address ("link"), (b) by DNS hostname/alias,
(c) through an HAProxy discovery proxy that resolves the backends through DNS, (d)
through an HTTP (L7) load balancer and (e) through a TCP (L4) load balancer. With one
connection (100 sequential requests, like httping) it saw 0.5 / 0.7 / 0.9 / 1.2 / 1.3 ms,
and at high concurrency 11.6k / 9.5k / 2.3k / 1.6k / 5.3k requests/s. At 10,000
concurrent connections 5.8% of the requests through the HTTP balancer ended in 504s.

What this suite measures on the machine it runs on: the same five paths to three echo
replicas in one Docker network (HAProxy 2.6 from Debian for the proxy and balancers).
The DNS case runs the driver in a container on the network, because only there does
Docker's DNS answer; the others run it on the host against bridge addresses. The report
says where each measurement ran. The overload case gives the L7 balancer a small
connection limit and a short queue timeout, then offers it more requests per second than
it can serve: the balancer answers 503 to what it cannot queue, and the errors are
counted and gated rather than hidden.
"""

import pytest

from pytest_netperf import builders, with_query

MODES = ["link", "dns", "discovery", "l7", "l4"]
#: The modes with a proxy in the path, measured against the direct address ("link").
PROXIED = ["discovery", "l7", "l4"]
#: Requests per second over the one connection: 200 in each of the suite's 0.5 s rounds
#: (examples/pytest.ini), the 100 samples or more that a P99 needs.
ONE_CONNECTION_RATE = 400


@pytest.fixture(scope="module")
def overloaded_l7(netperf_docker):
    """The access-modes topology whose L7 balancer allows 4 requests per echo replica
    and queues others for at most 100 ms; each request holds its slot for 20 ms."""
    topology = builders.access_modes_topology(
        3, l7_params={"server_maxconn": 4, "queue_timeout": "100ms"}, name="access-overload"
    )
    with netperf_docker.up(topology) as running:
        yield running


@pytest.mark.parametrize("mode", [m for m in MODES if m not in PROXIED])
@pytest.mark.netperf("p50 < 2ms", "p99 < 10ms", "sockets <= 1")
def test_latency_one_connection(netperf, access_modes, mode):
    """Sequential requests over one connection, like httping, at ONE_CONNECTION_RATE: each
    round holds the 100 samples or more that a p99 needs."""
    netperf.measure(access_modes.endpoint(mode), connections=1, rate=ONE_CONNECTION_RATE)


@pytest.mark.parametrize("mode", PROXIED)
@pytest.mark.netperf("p50 < 2ms", "p99 < 10ms", "sockets <= 1", "p50_added <= 1ms")
def test_proxy_adds_latency(netperf, access_modes, mode):
    """The same one-connection load through a proxy, in rounds that take turns with the
    direct address: its own latency, and what the proxy adds at P50 over the direct path
    (each proxied path is measured once, not once alone and again beside the direct one)."""
    netperf.compare(
        access_modes.endpoint(mode),
        reference=access_modes.endpoint("link"),
        connections=1,
        rate=ONE_CONNECTION_RATE,
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.netperf("rps >= 0.6x baseline", "errors == 0")
def test_throughput_c100(netperf, access_modes, mode):
    """Closed loop at 100 connections: the throughput of each path, gated against its baseline.

    Between two runs on this shared 2-core machine the throughput of the DNS and discovery
    paths moved by up to ~15% (0.86x of the baseline, interval 0.76x-0.98x after 11 rounds),
    which a 0.8x budget could not decide. Baselines once committed from another machine of
    the same class measured 0.80-0.87x there, and 0.37-0.43x on a VM about half as fast: a
    wall-clock baseline belongs to the machine that recorded it, so each machine records its
    own on its first run (``netperf_record_missing_baselines``) and one that measures a
    different speed than the recording gets NEW. 0.6x still catches a path that loses half
    its throughput.
    """
    netperf.measure(access_modes.endpoint(mode), connections=100)


@pytest.mark.netperf("instructions_per_request[l7] <= 45k", "syscalls_per_request[l7] <= 12")
def test_l7_balancer_cost_per_request(netperf, access_modes):
    """What the HAProxy L7 balancer does per request, counted under valgrind and strace
    (about 30k instructions and 10 system calls per request here; nginx proxies one in
    about 18k and 7)."""
    netperf.measure(access_modes.endpoint("l7"), connections=1, rate=ONE_CONNECTION_RATE)


@pytest.mark.netperf("error_rate <= 30%", "error_rate >= 1%")
def test_l7_overload_errors_are_counted(netperf, overloaded_l7):
    """Offered 700 requests/s where 12 slots of 20 ms serve at most 600/s, the L7 balancer
    queues what it can for 100 ms and answers 503 to the rest: the errors are measured
    and gated (here: some must appear, at most 30%), not hidden."""
    netperf.measure(
        with_query(overloaded_l7.endpoint("l7"), delay="20ms"),
        rate=700,
        connections=200,
        timeout=2,
        rounds=3,
        duration=1,  # the queue's dynamics over whole seconds, as this budget was set on
    )
