"""Gates on a TLS edge: the built-in nginx gateway terminating TLS with a certificate of the
session's test CA, measured over ``https://`` with a handshake per request.

The gate fills the driver's ``tls=`` (the CA to trust) from the endpoint, so the tests below
name only what they change. Measured here (2 cores, 4 connections, a handshake per request,
the driver resuming sessions, TLS 1.3): with session cache and tickets off an RSA-2048 edge
spent 2.59x [2.56x, 2.62x] the CPU per request of the same edge with them on (and served
0.43x its requests/s in an earlier run); the same config on both sides 1.005x
[0.98x, 1.03x], through HAProxy 1.008x [0.99x, 1.03x]. The budget (1.3x) sits between the
two with margin on either side; a second run measured 2.49x and 1.03x. An RSA-4096
certificate instead of ECDSA P-256, every request a full handshake: 9.25x [8.89x, 9.62x].
(With an ECDSA P-256 certificate, resumption saves little under TLS 1.3: 1.04x; see
docs/tls.md.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docker_helpers import assert_no_leftovers, skip_without_counting_image, skip_without_images
from pytester_helpers import json_report, netperf_args, undecided_for

pytestmark = pytest.mark.docker

EDGE_GATES = """
import pytest
from pytest_netperf.topology import builders

RESUMABLE = {"key_type": "rsa-2048"}
NO_RESUMPTION = {"key_type": "rsa-2048", "session_cache": False, "session_tickets": False}


def edges(netperf_topology, candidate):
    reference = netperf_topology(builders.gateway_topology("nginx", tls=RESUMABLE))
    changed = netperf_topology(builders.gateway_topology("nginx", tls=candidate))
    return changed.endpoint("gateway-tls"), reference.endpoint("gateway-tls")


@pytest.mark.netperf("cpu_per_request[gw] <= 1.3x reference", "errors == 0")
@pytest.mark.parametrize("candidate", [RESUMABLE, NO_RESUMPTION], ids=["unchanged", "no-resumption"])
def test_tls_edge(netperf, netperf_topology, candidate):
    changed, reference = edges(netperf_topology, candidate)
    assert changed.url.startswith("https://") and changed.tls is not None and changed.host_header == "gw"
    netperf.compare(
        changed, reference=reference, connections=4, new_connection_per_request=True, tls={"resumption": True}
    )


@pytest.mark.netperf("cpu_per_request[gw] <= 1.3x reference", "errors == 0")
def test_rsa_4096_instead_of_ecdsa(netperf, netperf_topology):
    ecdsa = netperf_topology(builders.gateway_topology("nginx", tls={"key_type": "ecdsa-p256"}))
    rsa = netperf_topology(builders.gateway_topology("nginx", tls={"key_type": "rsa-4096"}))
    netperf.compare(
        rsa.endpoint("gateway-tls"),
        reference=ecdsa.endpoint("gateway-tls"),
        connections=4,
        new_connection_per_request=True,
        tls={"resumption": False},
    )
"""

HAPROXY_GATE = """
import pytest
from pytest_netperf.topology import builders

EDGE = {"key_type": "ecdsa-p256"}


@pytest.mark.netperf("cpu_per_request[gw] <= 1.3x reference", "errors == 0")
def test_haproxy_tls_edge_unchanged(netperf, netperf_topology):
    reference = netperf_topology(builders.gateway_topology("haproxy", tls=EDGE))
    changed = netperf_topology(builders.gateway_topology("haproxy", tls=EDGE))
    netperf.compare(
        changed.endpoint("gateway-tls"),
        reference=reference.endpoint("gateway-tls"),
        connections=4,
        new_connection_per_request=True,
    )
"""

BAD_INPUT = """
import pytest
from pytest_netperf.runtime.test_ca import SessionCA

@pytest.mark.netperf("errors == 0")
@pytest.mark.parametrize("gateway_topology", [{"kind": "nginx", "tls": True}], indirect=True)
def test_https_to_the_cleartext_port(netperf, gateway_topology):
    cleartext = gateway_topology.endpoint("gateway").url.replace("http://", "https://")
    netperf.measure(cleartext, connections=1, tls={"ca": gateway_topology.endpoint("gateway-tls").tls.ca})


@pytest.mark.netperf("errors == 0")
@pytest.mark.parametrize("gateway_topology", [{"kind": "nginx", "tls": True}], indirect=True)
def test_a_certificate_the_gate_does_not_trust(netperf, gateway_topology):
    with SessionCA() as other:
        netperf.measure(gateway_topology.endpoint("gateway-tls"), connections=1, tls={"ca": str(other.files.ca)})
"""


@pytest.fixture(scope="module", autouse=True)
def _needs_docker_and_images() -> None:
    skip_without_images("echo", "nginx")


def test_unchanged_tls_edge_passes_and_no_resumption_or_rsa_4096_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    pytester.makepyfile(test_edge=EDGE_GATES)
    result = pytester.runpytest_subprocess(*netperf_args(4, 8, "1", "0.5", "--netperf-json=out.json", "-rA"))
    report = json_report(pytester, "out.json")["rows"]
    rows = {(r["test_id"].split("::")[1], r["budget"]): r for r in report}
    budget = "cpu_per_request[gw] <= 1.3x reference"
    unchanged, regressed = rows[("test_tls_edge[unchanged]", budget)], rows[("test_tls_edge[no-resumption]", budget)]
    # PASS, or on a runner whose closed-loop rounds spread too wide to resolve 30% (an Intel KVM
    # guest: [0.842x, 1.437x] over 8 rounds, other processes 0.02 cores) the gate's honest
    # undecided answer, green
    assert unchanged["verdict"] == "PASS" or undecided_for(unchanged), unchanged
    assert regressed["verdict"] == "FAIL", regressed
    assert rows[("test_tls_edge[no-resumption]", "errors == 0")]["verdict"] == "PASS"
    rsa_4096 = rows[("test_rsa_4096_instead_of_ecdsa", budget)]
    assert rsa_4096["verdict"] == "FAIL", rsa_4096
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=1, failed=2)
    assert_no_leftovers(
        tmp_path,
        "gateway-nginx-w1-tls-rsa-2048",
        "gateway-nginx-w1-tls-rsa-2048-nocache-notickets",
        "gateway-nginx-w1-tls-rsa-4096",
        "gateway-nginx-w1-tls-ecdsa-p256",
    )


def test_unchanged_haproxy_tls_edge_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    skip_without_images("haproxy")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    pytester.makepyfile(test_haproxy_edge=HAPROXY_GATE)
    result = pytester.runpytest_subprocess(*netperf_args(4, 8, "1", "0.5", "--netperf-json=out.json"))
    rows = {r["budget"]: r for r in json_report(pytester, "out.json")["rows"]}
    assert set(rows) == {"cpu_per_request[gw] <= 1.3x reference", "errors == 0"}, rows
    assert rows["errors == 0"]["verdict"] == "PASS", rows
    # PASS; on a runner whose closed-loop rounds spread too wide to resolve 30% (an Intel KVM
    # guest in CI: [0.619x, 1.948x] over 4 rounds, other processes 0.02 cores), the gate's
    # honest undecided answer, green
    cpu = rows["cpu_per_request[gw] <= 1.3x reference"]
    assert cpu["verdict"] == "PASS" or undecided_for(cpu), cpu
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert_no_leftovers(tmp_path, "gateway-haproxy-w1-tls-ecdsa-p256")


def test_https_to_cleartext_and_an_untrusted_certificate_are_invalid_naming_the_cause(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    pytester.makepyfile(test_bad=BAD_INPUT)
    result = pytester.runpytest_subprocess(*netperf_args(2, 2, "0.5", "0.2", "--netperf-json=out.json"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    rows = {r["test_id"].split("::")[1].split("[")[0]: r for r in json_report(pytester, "out.json")["rows"]}
    assert {name: row["verdict"] for name, row in rows.items()} == {
        "test_https_to_the_cleartext_port": "INVALID",
        "test_a_certificate_the_gate_does_not_trust": "INVALID",
    }
    cleartext = " ".join(rows["test_https_to_the_cleartext_port"]["notes"])
    assert "failed the TLS handshake" in cleartext and "is the port plain HTTP?" in cleartext, cleartext
    untrusted = " ".join(rows["test_a_certificate_the_gate_does_not_trust"]["notes"])
    assert "server certificate rejected: not signed by a CA we trust" in untrusted, untrusted
    assert_no_leftovers(tmp_path, "gateway-nginx-w1-tls-ecdsa-p256")


COUNTED_GATE = """
import pytest
from pytest_netperf.topology import builders


@pytest.mark.netperf("syscalls_per_request[gw] <= 1.0x reference", "errors == 0")
def test_dropped_pool_behind_the_tls_edge(netperf, netperf_topology):
    pooled = netperf_topology(builders.gateway_topology("nginx", tls=True))
    unpooled = netperf_topology(builders.gateway_topology("nginx", tls=True, upstream_keepalive=False))
    netperf.compare(unpooled.endpoint("gateway-tls"), reference=pooled.endpoint("gateway-tls"), connections=4, rate=50)
"""


def test_a_counted_budget_on_the_built_in_tls_edge_counts_it_and_names_the_dropped_pool(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The counted clones of a rendered TLS node get its certificate folder, which its image
    does not have (``/netperf/tls`` is written into the container): before, every counting
    pass of the built-in TLS gateway failed ("Could not find the file /netperf/tls"), so its
    counted budgets were INVALID."""
    skip_without_counting_image("pytest-netperf/nginx:local")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    pytester.makepyfile(test_counted_edge=COUNTED_GATE)
    result = pytester.runpytest_subprocess(
        *netperf_args(
            2,
            2,
            "0.5",
            "0.2",
            "--netperf-json=out.json",
            "--netperf-counting-requests=500",
            "--netperf-counting-repetitions=2",
        )
    )
    rows = {r["budget"]: r for r in json_report(pytester, "out.json")["rows"]}
    counted = rows["syscalls_per_request[gw] <= 1.0x reference"]
    said = " ".join(counted["notes"])
    assert counted["verdict"] == "FAIL", (counted, result.stdout.str()[-3000:])
    assert counted["raw"]["estimate"] > 1.1, counted  # a connect and a close more per request, at least
    assert "connect +1.00" in said or "close +1.00" in said, said
    assert rows["errors == 0"]["verdict"] == "PASS", rows
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    assert_no_leftovers(
        tmp_path, "gateway-nginx-w1-tls-ecdsa-p256", "gateway-nginx-w1-no-upstream-keepalive-tls-ecdsa-p256"
    )
