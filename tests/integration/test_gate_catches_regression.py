"""The gate's reason to exist, tested: a real infrastructure regression fails it.

The sample change is a gateway config that drops upstream keep-alive (nginx opens a new
connection to the echo server for every request). A baseline is recorded with the good
config; the regressed config must FAIL against it, and reverting must PASS again.
Measured here: without upstream keep-alive nginx delivers ~0.37x the baseline's requests/s
at ~2.7x its P50, while repeat runs of the good config land at 0.9-1.0x and 1.0-1.15x, so
the budgets (0.6x, 1.8x) sit well between the two on a noisy 2-core machine.
Real nginx and echo containers, the real driver, three pytest runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from docker_helpers import skip_without_images
from pytester_helpers import netperf_args

pytestmark = pytest.mark.docker

GATE = """
import os
import pytest
from pytest_netperf.topology import builders

KEEPALIVE = os.environ["GATEWAY_UPSTREAM_KEEPALIVE"] == "on"


@pytest.mark.netperf("rps >= 0.6x baseline", "p50 <= 1.8x baseline", "sockets <= 32")
def test_nginx_gateway(netperf, netperf_topology):
    gateway = netperf_topology(builders.gateway_topology("nginx", upstream_keepalive=KEEPALIVE))
    netperf.measure(gateway.endpoint("gateway"), connections=32)
"""

RUN = netperf_args(5, 10, "1", "0.5", "-rA")


@pytest.fixture(scope="module", autouse=True)
def _needs_docker_and_images() -> None:
    skip_without_images("echo", "nginx")


def stored_baselines(directory: Path) -> list[Path]:
    """The stored baseline files (one folder per machine class; not the pending results)."""
    return sorted(p for p in directory.glob("*/*.json") if p.parent.name != ".last-run")


def test_dropping_upstream_keepalive_fails_the_gate_and_reverting_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_gateway=GATE)

    monkeypatch.setenv("GATEWAY_UPSTREAM_KEEPALIVE", "on")
    record = pytester.runpytest_subprocess(*RUN, "--netperf-update-baseline")
    assert record.ret == 0, record.stdout.str()[-3000:]
    (baseline,) = stored_baselines(Path(pytester.path, ".netperf"))
    stored = json.loads(baseline.read_text())
    assert stored["test_id"] == "test_gateway.py::test_nginx_gateway"
    digests = stored["fingerprint"]["image_digests"]
    assert any("nginx" in image for image in digests), digests  # which nginx image was measured
    assert all(digest.startswith("sha256:") for digest in digests.values()), digests

    monkeypatch.setenv("GATEWAY_UPSTREAM_KEEPALIVE", "off")
    regressed = pytester.runpytest_subprocess(*RUN, "--netperf-json=regressed.json")
    assert regressed.ret == pytest.ExitCode.TESTS_FAILED, regressed.stdout.str()[-3000:]
    rows = json.loads(Path(pytester.path, "regressed.json").read_text())["rows"]
    verdicts = {r["budget"]: r["verdict"] for r in rows}
    assert "FAIL" in (verdicts["rps >= 0.6x baseline"], verdicts["p50 <= 1.8x baseline"]), verdicts

    monkeypatch.setenv("GATEWAY_UPSTREAM_KEEPALIVE", "on")
    reverted = pytester.runpytest_subprocess(*RUN)
    assert reverted.ret == 0, reverted.stdout.str()[-3000:]
