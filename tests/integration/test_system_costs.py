"""CPU per request and memory of the system under test, read from real containers' cgroups.

The echo server's ``?burn=`` spends an exact amount of CPU per request, so a CPU regression
can be injected without touching anything else: compared against itself at a fixed 2000
requests/s the echo endpoint PASSes ``cpu_per_request[echo] <= 1.05x reference``, and with
``burn=10us`` on the candidate it FAILs. The probe reads a real container's cgroup and sees a
restart mid-round (its counters reset; the gate makes such a round INVALID, see
tests/unit/test_system_metrics.py). Real echo containers and the real driver.
"""

from __future__ import annotations

import time
import uuid

import pytest
from docker_helpers import get, skip_without_images
from pytester_helpers import json_report, netperf_args, on_a_busy_runner

from pytest_netperf.errors import CgroupError
from pytest_netperf.images.resolve import resolve_image
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.docker import DockerRuntime
from pytest_netperf.topology import builders

pytestmark = pytest.mark.docker

GATE = """
import os

import pytest
from pytest_netperf.measure.targets import with_query
from pytest_netperf.topology import builders

BURN = os.environ.get("ECHO_BURN", "")


@pytest.mark.netperf("cpu_per_request[echo] <= 1.05x reference", "mem[echo] <= 64MB", "cpu[*] <= 1.5")
def test_echo_cpu(netperf, netperf_topology):
    echo = netperf_topology(builders.echo_topology()).endpoint("direct")
    candidate = with_query(echo, burn=BURN) if BURN else echo
    netperf.compare(candidate, reference=echo, connections=8, rate=2000)


@pytest.mark.netperf("cpu_per_request[gateway] <= 1.05x reference")
def test_unknown_node(netperf, netperf_topology):
    echo = netperf_topology(builders.echo_topology()).endpoint("direct")
    netperf.compare(echo, reference=echo, rate=100)


"""

# CPU per request of the echo server moves ~8% from round to round on a busy 2-core machine,
# whether a round lasts 0.5 s or 2 s (benchmarks/gate_power.py): many short rounds, so that
# against itself the estimate stays well inside 1.05x (about 2% standard error at 40 rounds).
RUN = netperf_args(8, 40, "0.5", "0.5", "--netperf-json=results.json", "-rA")


@pytest.fixture(scope="module", autouse=True)
def _needs_docker_and_images() -> None:
    skip_without_images("echo")


def rows(pytester: pytest.Pytester) -> dict[str, dict]:
    doc = json_report(pytester)
    return {row["budget"]: row for row in doc["rows"]}


def test_echo_against_itself_passes_and_burn_10us_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_costs=GATE)
    same = pytester.runpytest_subprocess(*RUN, "-k", "echo_cpu")
    assert same.ret == 0, same.stdout.str()[-3000:]
    passed = rows(pytester)
    aa = passed.pop("cpu_per_request[echo] <= 1.05x reference")
    # on a noisy runner even 40 rounds may leave 1.05x undecided (the estimate of one run can
    # land outside it); the default final-INCONCLUSIVE policy ('change') keeps it green while
    # the rounds cannot tell it from no change
    # (same.ret == 0 above is that policy's green)
    assert aa["verdict"] in ("PASS", "INCONCLUSIVE"), aa
    assert {r["verdict"] for r in passed.values()} == {"PASS"}, passed
    facts = passed["mem[echo] <= 64MB"]["facts"]["candidate"]
    assert "echo" in facts["system under test (median per round)"], facts
    doc = json_report(pytester)
    (measurement,) = doc["results"]["test_costs.py::test_echo_cpu"]
    candidate = measurement["series"]["candidate"]
    assert candidate["system_costs"]["echo"]["cpu_per_request_ns"] > 0, candidate["system_costs"]
    system = candidate["rounds"][0]["system"]
    assert system["source"] in ("cgroup v1", "cgroup v2", "docker stats"), system
    # served counts warm-up and window (0.5 s + 0.5 s at 2000/s); a request still in flight
    # when the driver stops is not counted, so the count is about 2000, not exactly
    assert system["nodes"]["echo"]["cpu_ns"] > 0 and system["served"] >= 1900, system

    monkeypatch.setenv("ECHO_BURN", "10us")
    burnt = pytester.runpytest_subprocess(*RUN, "-k", "echo_cpu")
    failed = rows(pytester)["cpu_per_request[echo] <= 1.05x reference"]
    if failed["verdict"] == "INCONCLUSIVE" and on_a_busy_runner(failed):
        # with the hypervisor stealing 21% of the time: 1.240x, [1.066x, 1.442x] over 40 rounds,
        # a FAIL at p=0.025 that Holm's correction over the session's 3 budgets took back; at 27%:
        # 0.971x, [0.740x, 1.273x] over 13 rounds, "cannot be decided on this runner". Undecided,
        # its interval holding the change, never a PASS
        assert failed["raw"]["ci_high"] > 1.1, failed
        return
    assert burnt.ret == 1, burnt.stdout.str()[-3000:]
    assert failed["verdict"] == "FAIL", failed
    assert failed["raw"]["estimate"] > 1.1, failed  # 10 us on top of the echo server's own cost
    burnt.stdout.fnmatch_lines(["*FAIL*cpu_per_request[[]echo[]] <= 1.05x reference*"])


def test_an_unknown_node_is_an_error_naming_the_nodes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_costs=GATE)
    result = pytester.runpytest_subprocess(*RUN, "-k", "unknown_node")
    assert result.ret == 1
    out = result.stdout.str()
    assert "budget 'cpu_per_request[gateway] <= 1.05x reference': no node of the candidate matches 'gateway'" in out
    assert "the nodes are echo" in out


def test_the_probe_reads_a_real_container_and_sees_a_restart_mid_round() -> None:
    session = f"costs{uuid.uuid4().hex[:6]}"
    runtime = DockerRuntime(session, {"echo": resolve_image("echo")}, core_split=None)
    try:
        with runtime.up(builders.echo_topology()) as running:
            endpoint = running.endpoint("direct")
            probe = endpoint.costs
            assert probe is not None and probe.nodes == ("echo",)
            opened = probe.begin()
            for _ in range(50):
                assert get(endpoint.url)[0] == 200
            spent = opened.end(served=50).nodes["echo"]
            assert spent.cpu_ns > 0 and spent.mem_bytes > 0 and spent.rx_packets >= 50, spent
            assert spent.mem_peak_bytes >= spent.mem_bytes

            opened = probe.begin()
            running.container("echo").restart(timeout=0)
            deadline = time.monotonic() + 10
            while running.container("echo").attrs["State"]["Pid"] == 0 and time.monotonic() < deadline:
                running.container("echo").reload()
                time.sleep(0.1)
            with pytest.raises(CgroupError, match=r"container .* of node 'echo' restarted during the round"):
                opened.end(served=1)
            assert probe.begin().end(served=1).nodes["echo"].cpu_ns >= 0  # the next round reads the new process
    finally:
        runtime.down_all()
        clean_session(session, runtime.client)
