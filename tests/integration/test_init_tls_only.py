"""``netperf init`` on a stack whose proxy listens with TLS only (#39): before, init refused
it ("neither publishes nor exposes a plain-HTTP port"); now it writes gates that load it over
HTTPS, trusting the CA found among the certificates the proxy mounts, with a
handshake-per-request cost test. Then the written gates run for real: the throughput gate and
the resumed-handshake cost gate measure the nginx edge of ``tests/corpus/nginx_tls_edge`` over
TLS, counted under valgrind and strace, with no error.

Real Compose and containers; about two minutes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trustme
from docker_helpers import skip_without_compose_stack_parts, skip_without_counting_image
from pytester_helpers import netperf_args

from pytest_netperf.cli.main import main

pytestmark = pytest.mark.docker

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "nginx_tls_edge"
HOST = "edge.example.test"


@pytest.fixture(scope="module", autouse=True)
def needs_compose_and_a_traceable_nginx() -> None:
    skip_without_compose_stack_parts()
    skip_without_counting_image("pytest-netperf/nginx:local")


def test_init_gates_a_tls_only_edge_over_https_and_its_gates_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(CORPUS, tmp_path, dirs_exist_ok=True)
    certs = tmp_path / "certs"
    certs.mkdir()
    ca = trustme.CA(key_type=trustme.KeyType.ECDSA)
    leaf = ca.issue_cert(HOST, key_type=trustme.KeyType.ECDSA)
    ca.cert_pem.write_to_path(str(certs / "ca.pem"))
    leaf.cert_chain_pems[0].write_to_path(str(certs / "edge.pem"))
    leaf.private_key_pem.write_to_path(str(certs / "edge.key"))

    monkeypatch.chdir(tmp_path)
    code = main(["init", "--ci", "none"])
    said = capsys.readouterr()
    out = said.out + said.err
    assert code == 0, out
    assert "service edge (nginx:1.27): ports 443; nginx proxy" in out
    assert "gating edge (nginx:1.27), HTTPS on port 443 (it listens with TLS only), trusting the CA certs/ca.pem" in out
    module = (tmp_path / "tests" / "netperf" / "test_netperf_gates.py").read_text()
    assert 'EDGE_TLS = {"ca": "certs/ca.pem"}' in module
    assert f'stack.endpoint("edge", port=443, path="/", host="{HOST}", scheme="https", tls=EDGE_TLS)' in module
    assert "def test_edge_handshake_cost(netperf, stack, resumption):" in module

    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "netperf",
            "tests/netperf",
            "-k",
            "edge_throughput or (edge_handshake_cost and resumed)",
            *netperf_args(
                2,
                2,
                "0.5",
                "0.3",
                "--netperf-counting-requests=100",
                "--netperf-counting-repetitions=2",
                "--netperf-json=results.json",
            ),
            "--netperf-image",
            "nginx:1.27=pytest-netperf/nginx:local",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = run.stdout[-6000:] + run.stderr[-2000:]
    assert "2 passed" in run.stdout, output
    rows = {(r["test_id"], r["budget"]): r for r in json.loads((tmp_path / "results.json").read_text())["rows"]}
    for (test, budget), row in rows.items():
        print(f"{test} {budget}: {row['verdict']} {(row.get('raw') or {}).get('estimate')}")
        assert row["verdict"] not in ("INVALID", "FAIL"), row
    (counted,) = [r for (t, b), r in rows.items() if "handshake_cost" in t and b.startswith("instructions_per_request")]
    assert counted["verdict"] == "NEW", counted  # no stored baseline yet: recorded
    # a resumed TLS handshake per request, counted in the edge's clone (2.5 M instructions here)
    found = re.search(
        r"counting pass of edge \(candidate\): instructions under valgrind, [^;]*; ([\d,.]+) per request",
        " ".join(counted["notes"]),
    )
    assert found and float(found.group(1).replace(",", "")) > 100_000, counted["notes"]
