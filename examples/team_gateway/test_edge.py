"""Gates over a team's own stack: the edge nginx of docker-compose.yml in front of the app.

This is what a team keeps in its repository: its Compose file and nginx config, plus these
tests. ``netperf_compose`` stands the Compose file up as written (paths are relative to
the pytest rootdir), and each test measures the edge against the application reached
directly, in interleaved rounds of the same run, so the verdict does not depend on how
fast this machine is.

The budgets are set from what the stack does on a 2-core machine where the driver, nginx
and the application share both cores (the README's "Gate your own configs" section has
the figures). They still catch what a config change typically breaks: drop the upstream
``keepalive`` pool from nginx/edge.conf and the edge opens a TCP connection to the app for
every request; its throughput collapses and ``test_edge_throughput`` fails, against the
application and, with ``--netperf-base``, against the base revision.
"""

import pytest

COMPOSE_FILE = "team_gateway/docker-compose.yml"


@pytest.fixture(scope="module")
def stack(netperf_compose):
    """The team's stack, up once for the session."""
    return netperf_compose(COMPOSE_FILE)


@pytest.mark.netperf("rps_loss <= 85%", "rps >= 0.8x base", "errors == 0", "sockets <= 80")
def test_edge_throughput(netperf, stack):
    """Closed loop, 64 connections: what the edge costs in requests per second, no errors,
    and client keep-alive intact (about one socket per connection: a broken keep-alive opens
    thousands, so a few reconnects on a busy machine are allowed). On a pull request
    (``--netperf-base origin/main``) the edge also keeps 80% of the base revision's
    throughput, in rounds that take turns with it; without a base that budget uses the
    stored baseline of this machine class, NEW until one is recorded. A closed loop is the
    noisy way to compare revisions: on a 2-core runner whose driver shares the cores with
    nginx and the app, an unchanged edge reads 0.94x-1.06x of its base with intervals
    +-15-30% after 4 rounds, so 0.95x could not be decided here (the fixed-rate gate below
    holds the tight budgets); loaded both at once, the two closed loops do not share the
    cores fairly (an unchanged head read 0.75x-0.85x)."""
    netperf.compare(
        stack.endpoint("edge", port=80, path="/api/orders", host="api.example.com"),
        reference=stack.endpoint("app", port=8080, path="/api/orders"),
        connections=64,
    )


@pytest.mark.netperf("p50_added <= 1ms", "p99_added <= 5ms", "errors == 0", "mem[edge] <= 64MB")
def test_edge_latency(netperf, stack):
    """Open loop at 1,000 requests/s over 8 connections: the latency the edge adds to the
    application reached directly, and the edge's working set stays under 64 MiB."""
    netperf.compare(
        stack.endpoint("edge", port=80, path="/api/orders", host="api.example.com"),
        reference=stack.endpoint("app", port=8080, path="/api/orders"),
        connections=8,
        rate=1000,
    )


@pytest.mark.netperf("cpu_per_request[edge] <= 1.05x base", "p90 <= 1.05x base", "errors == 0")
def test_edge_vs_base_at_fixed_rate(netperf, stack, pytestconfig):
    """The pull request's gate on what the config change costs: the edge alone at a fixed
    1,000 requests/s (Poisson arrivals), below the knee, so CPU per request is the config's
    own cost. With ``--netperf-base`` the base revision's edge is loaded at the same moment
    as the head's, so what the runner does to time hits both, and the head may spend at
    most 5% more CPU per request and have at most a 5% higher P90. On this 2-core runner
    unchanged edges stayed green in 8 of 8 runs, mostly decided within 12 rounds of 1 s
    (estimates 0.95x-1.02x, intervals about +-3%). Without a base these budgets use the
    stored baseline, NEW until one is recorded; runners of one machine class can differ by
    more than 5%, so a gate judged against stored baselines needs looser budgets.

    So without ``--netperf-base`` this test skips: on this machine, the second and third of
    three idle runs of the example job minutes apart measured the edge at 1.52x and 1.94x the
    first run's CPU per request (P90 1.67x and 2.30x), which no 5% budget against a stored
    baseline can survive; the stack's placement on the cores differs from run to run, the base twin
    measured beside the head shares it."""
    if not (pytestconfig.getoption("netperf_base", None) or pytestconfig.getini("netperf_base")):
        pytest.skip(
            "a pull request's gate: judged against the base revision measured in the same run "
            "(--netperf-base REF); a stored wall-clock baseline from another run moved 1.5-1.9x here"
        )
    netperf.measure(
        stack.endpoint("edge", port=80, path="/api/orders", host="api.example.com"),
        connections=8,
        rate=1000,
    )


@pytest.mark.netperf("errors == 0", "p99 < 50ms")
def test_edge_no_errors_at_100_connections(netperf, stack):
    """100 connections at 2,000 requests/s: every request answered, none slow."""
    netperf.measure(
        stack.endpoint("edge", port=80, path="/api/orders", host="api.example.com"),
        connections=100,
        rate=2000,
    )


@pytest.mark.netperf(
    "instructions_per_request[edge] <= 1.005x base",
    "syscalls_per_request[edge] <= 1.0x base",
    "instructions_per_request[edge] <= 40k",
    "errors == 0",
)
def test_edge_cost_per_request(netperf, stack):
    """What the edge does per request, counted rather than timed: a clone of the edge
    container runs nginx under valgrind (instructions) and strace (system calls) and serves
    exact request counts, so the count does not move with the runner's noise (0.1-0.2%
    between repetitions). On a pull request the edge may do at most 0.5% more work per
    request than at the base revision and make no more system calls; the failure names the
    functions and system calls that changed (a regex ``location`` shows as PCRE, a dropped
    keep-alive pool as ``connect +1.00, close +1.00``). The absolute budget holds on any
    x86_64 runner: this config measured about 25k instructions per request."""
    netperf.measure(
        stack.endpoint("edge", port=80, path="/api/orders", host="api.example.com"),
        connections=8,
        rate=500,
    )
