"""Counted cost gates over TLS (#39), on a team's nginx edge that terminates TLS with its own
certificates (``tests/corpus/nginx_tls_edge``, certificates minted here by a CA of the test's),
under ``--netperf-base main``.

The counted clones of the edge serve TLS exactly as the service does (its config, its mounted
certificates), and the counting load goes over HTTPS with the gate's ``tls=`` options (the CA
the test names, SNI from ``host=``), in three loads: keep-alive (``keepalive``), a new
connection and a resumed handshake per request (``resumed``), and a full handshake per request
(``full``: resumption off in the driver).

- Unchanged: every counted budget green; the instructions per request PASS within 1% (the A/A
  floor over TLS measured by benchmarks/tls_count_floor.py is far below it); the system calls
  depend on timing (reads that find the client's next bytes there or not) and are undecided
  rather than failed.
- An RSA-4096 certificate instead of ECDSA P-256 (same CA), full handshakes: FAIL on
  instructions per request, and the where-the-cost-went table names libcrypto's functions.
- ``ssl_session_cache off; ssl_session_tickets off;`` with resumption on in the driver: every
  handshake is full again: FAIL (+3.7% here: OpenSSL's resumed TLS 1.3 handshake still does the
  key exchange and issues a ticket; the full one signs once with a cheap ECDSA key).

Real containers through Compose, the edge counted under valgrind and strace. Slow: on a 2-core
VM loaded by other suites, the unchanged run took 21 minutes, each harmful change 7-8.
"""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from docker_helpers import skip_without_compose_stack_parts, skip_without_counting_image, stack_repo
from pytester_helpers import counted_each_side, json_report, netperf_args

#: Not `concurrent`: beside another counted test, with two repetitions of each count, the unchanged
#: edge's keep-alive system calls read 8.1 against 8.0 per request, each side's repetitions within
#: 0.52% and 0.10%, and FAILed as exact (1.009x): system calls over TLS depend on timing more
#: than two repetitions show. So these run one at a time, three repetitions each.
pytestmark = pytest.mark.docker

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "nginx_tls_edge"
HOST = "edge.example.test"
INI = """
[pytest]
netperf_images =
    nginx:1.27=pytest-netperf/nginx:local
"""
INSTRUCTIONS = "instructions_per_request[edge] <= 1.01x base"
SYSCALLS = "syscalls_per_request[edge] <= 1.0x base"
GATE = f"""
import pytest

#: the CA that signed the edge's certificate, relative to the Compose file's folder (the base
#: revision's twin trusts the base revision's)
TLS = {{"ca": "certs/ca.pem"}}
LOADS = {{"keepalive": (False, None), "resumed": (True, True), "full": (True, False)}}


@pytest.mark.netperf("{INSTRUCTIONS}", "{SYSCALLS}", "errors == 0")
@pytest.mark.parametrize("load", list(LOADS))
def test_edge_tls_cost(netperf, netperf_compose, load):
    per_request, resumption = LOADS[load]
    stack = netperf_compose("nginx_tls_edge/docker-compose.yml")
    netperf.measure(
        stack.endpoint("edge", port=443, host="{HOST}", scheme="https", tls=TLS),
        connections=4,
        rate=50,
        new_connection_per_request=per_request,
        tls={{"resumption": resumption}},
    )
"""
RUN = netperf_args(3, 3, "0.5", "0.3", "-m", "netperf", "--netperf-base=main", "--netperf-json=results.json")
#: Requests of the larger count (the smaller: a fifth). 150 resolve an unchanged stack within 1%
#: and a 3.7% change (session cache off); at 40 a resumed handshake's repetitions spread up to
#: 1.4% (randomness in OpenSSL weighs more over 32 requests), not enough for 3.7%; the 25x of an
#: RSA-4096 key (whose handshakes take seconds each under valgrind here) needs only 20 (spread
#: 0.03% measured).
AA_REQUESTS = "--netperf-counting-requests=150"
RSA_REQUESTS = "--netperf-counting-requests=20"
GREEN = ("PASS", "INCONCLUSIVE")


@pytest.fixture(scope="module", autouse=True)
def needs_compose_and_a_traceable_nginx() -> None:
    skip_without_compose_stack_parts()
    skip_without_counting_image("pytest-netperf/nginx:local")


def mint(certs: Path, ca: trustme.CA, key: str) -> None:
    """``certs/``: the CA (ca.pem) and the edge's certificate and key for HOST: ECDSA P-256
    (``ecdsa``), or RSA-4096 (``rsa4096``) signed by the same CA."""
    certs.mkdir(parents=True, exist_ok=True)
    ca.cert_pem.write_to_path(str(certs / "ca.pem"))
    if key == "ecdsa":
        leaf = ca.issue_cert(HOST, key_type=trustme.KeyType.ECDSA)
        leaf.cert_chain_pems[0].write_to_path(str(certs / "edge.pem"))
        leaf.private_key_pem.write_to_path(str(certs / "edge.key"))
        return
    signer = serialization.load_pem_private_key(ca.private_key_pem.bytes(), password=None)
    issuer = x509.load_pem_x509_certificate(ca.cert_pem.bytes()).subject
    private = rsa.generate_private_key(public_exponent=65537, key_size=4096)
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)]))
        .issuer_name(issuer)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(HOST)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(signer, hashes.SHA256())  # type: ignore[arg-type]
    )
    (certs / "edge.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (certs / "edge.key").write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


def tls_repo(pytester: pytest.Pytester, ca: trustme.CA) -> Path:
    """A git repository whose ``main`` holds the TLS edge stack with its ECDSA certificate and the
    gate; returns the copied stack's folder (change it as a pull request would)."""
    staged = pytester.path.parent / f"{pytester.path.name}-staged" / CORPUS.name
    shutil.copytree(CORPUS, staged)
    mint(staged / "certs", ca, "ecdsa")
    try:
        return stack_repo(pytester.path, staged, GATE, INI)
    finally:
        shutil.rmtree(staged.parent)


def run_gate(
    pytester: pytest.Pytester, requests: str, *select: str
) -> tuple[pytest.RunResult, dict[tuple[str, str], dict]]:
    """Run the gate counting ``requests`` (the loads named by ``select``, all when none); the
    result and its rows by (load, budget), each printed with its estimate, interval and notes."""
    chosen = ["-k", " or ".join(select)] if select else []
    result = pytester.runpytest_subprocess(*RUN, requests, *chosen)
    rows = {}
    for row in json_report(pytester)["rows"]:
        load = row["test_id"].rsplit("[", 1)[-1].rstrip("]")
        rows[(load, row["budget"])] = row
        raw = row.get("raw") or {}
        print(
            f"{load} {row['budget']}: {row['verdict']} {raw.get('estimate')} {raw.get('interval')} | "
            f"{' '.join(row['notes'])[:1500]}"
        )
    return result, rows


def notes(row: dict) -> str:
    return " ".join(row["notes"])


def test_unchanged_tls_edge_is_green_within_one_percent(pytester: pytest.Pytester) -> None:
    tls_repo(pytester, trustme.CA(key_type=trustme.KeyType.ECDSA))
    result, rows = run_gate(pytester, AA_REQUESTS)
    assert result.ret == 0, result.stdout.str()[-6000:]
    for load in ("keepalive", "resumed", "full"):
        instructions = rows[(load, INSTRUCTIONS)]
        assert instructions["reference"] == "base", instructions
        assert counted_each_side(instructions, 3), instructions["notes"]
        assert 0.99 < instructions["raw"]["estimate"] < 1.01, instructions
        if load == "keepalive" and instructions["verdict"] == "INCONCLUSIVE":
            # ~36,600 instructions a request: nginx's once-a-second time formatting (periodic work)
            # moved its repetitions 0.95% apart in a run beside a loaded machine; past 1% the
            # verdict widens them and says so, green under the default policy
            assert "depend on timing" in notes(instructions), instructions["notes"]
        else:  # millions of instructions a handshake: 0.01-0.2% apart
            assert instructions["verdict"] == "PASS", instructions
        # system calls depend on timing over TLS (a side's repetitions 1-8% apart, medians up to
        # 5.7% apart here): PASS, or undecided with the reason and no change inside the range. The
        # reason is either a side's repetitions spreading past a count's resolution, or (each side
        # within it, 0.94% and 0.83% in a CI rehearsal on an Intel KVM guest) the ratio's range,
        # [0.990x, 1.007x], being wider than the 1% the verdict allows a count
        syscalls = rows[(load, SYSCALLS)]
        assert syscalls["verdict"] in GREEN, syscalls
        if syscalls["verdict"] == "INCONCLUSIVE":
            said = notes(syscalls)
            assert "depend on timing" in said or "not deterministic enough here to decide" in said, syscalls["notes"]
            assert syscalls["raw"]["ci_low"] <= 1.0 <= syscalls["raw"]["ci_high"], syscalls
        assert rows[(load, "errors == 0")]["verdict"] == "PASS"


def test_rsa_4096_certificate_fails_full_handshakes_naming_libcrypto(pytester: pytest.Pytester) -> None:
    ca = trustme.CA(key_type=trustme.KeyType.ECDSA)
    stack = tls_repo(pytester, ca)
    mint(stack / "certs", ca, "rsa4096")  # the pull request: a 4096-bit RSA key for the edge
    result, rows = run_gate(pytester, RSA_REQUESTS, "full")
    assert result.ret == 1, result.stdout.str()[-6000:]
    row = rows[("full", INSTRUCTIONS)]
    assert row["verdict"] == "FAIL" and row["raw"]["estimate"] > 1.1, row
    assert "changed most vs base" in notes(row), row["notes"]
    # where the cost went (the comment's table): libcrypto's bignum / Montgomery functions grew
    (table,) = row["cost_diffs"]
    grew = [name for name, _, _, change in table["changes"] if change > 0]
    print("grew most:", grew)
    assert any(name.startswith(("BN_", "bn_")) or "mont" in name.lower() for name in grew), table
    assert rows[("full", "errors == 0")]["verdict"] == "PASS"


def test_session_cache_and_tickets_off_fail_resumed_handshakes(pytester: pytest.Pytester) -> None:
    stack = tls_repo(pytester, trustme.CA(key_type=trustme.KeyType.ECDSA))
    config = stack / "nginx" / "edge.conf"
    text = config.read_text()
    cache = "ssl_session_cache shared:SSL:10m;\n"
    assert text.count(cache) == 1
    config.write_text(text.replace(cache, "ssl_session_cache off;\nssl_session_tickets off;\n"))
    result, rows = run_gate(pytester, AA_REQUESTS, "resumed")
    assert result.ret == 1, result.stdout.str()[-6000:]
    # OpenSSL 3.0 with ECDSA P-256: a full handshake without tickets costs 3.7% more than a
    # resumed one that issues a ticket (2.60 M against 2.51 M instructions here), a change the
    # counts (0.02-0.5% apart) resolve
    row = rows[("resumed", INSTRUCTIONS)]
    assert row["verdict"] == "FAIL" and row["raw"]["estimate"] > 1.02, row
    assert "changed most vs base" in notes(row), row["notes"]
    assert rows[("resumed", "errors == 0")]["verdict"] == "PASS"
