"""Counted cost gates end to end, on the team_gateway stack under ``--netperf-base main``.

The edge nginx runs in counted clones (valgrind for instructions, strace for system calls)
at head and at the base revision. A comment in its config changes nothing; two regex
``location`` blocks before ``/api/`` make every request run PCRE (FAIL, naming the PCRE
function); dropping the upstream keep-alive pool adds a connect and a close per request
(FAIL, naming them). Real containers through Compose; about 40 s per run.
"""

from __future__ import annotations

import pytest
from docker_helpers import skip_without_compose_stack_parts, skip_without_counting_image, team_repo
from pytester_helpers import counted_each_side, json_report

from pytest_netperf.defaults import COUNTING_CONFIRM_REPETITIONS

#: concurrent: counted verdicts (and same-run ones) on Compose stacks of its own session, no fixed host
#: port: scripts/test runs it on two workers beside the other such tests
pytestmark = [pytest.mark.docker, pytest.mark.concurrent]

GATE = """
import pytest


@pytest.mark.netperf(
    "instructions_per_request[edge] <= 1.01x base", "syscalls_per_request[edge] <= 1.0x base", "errors == 0"
)
def test_edge_cost(netperf, netperf_compose):
    stack = netperf_compose("team_gateway/docker-compose.yml")
    netperf.measure(stack.endpoint("edge", path="/api/orders", host="api.example.com"), connections=8, rate=500)
"""
RUN = [
    "-m",
    "netperf",
    "--netperf-base=main",
    "--netperf-rounds=3",
    "--netperf-max-rounds=3",
    "--netperf-duration=0.5",
    "--netperf-warmup=0.3",
    "--netperf-json=results.json",
    # counting passes of 500 and 100 requests, twice (the example job's; defaults 1000 and 200,
    # three times): the changes are 1.5x and more, the comment's counts 0.1-0.4% apart
    "--netperf-counting-requests=500",
    "--netperf-counting-repetitions=2",
    "-p",
    "no:cacheprovider",
]
INSTRUCTIONS = "instructions_per_request[edge] <= 1.01x base"
SYSCALLS = "syscalls_per_request[edge] <= 1.0x base"
REGEX_LOCATIONS = """    location ~* \\.(png|jpg|gif|css|js)$ {
        return 404;
    }

    location ~ ^/internal/(admin|debug) {
        return 403;
    }

    location /api/ {"""


@pytest.fixture(scope="module", autouse=True)
def needs_compose_and_a_traceable_nginx() -> None:
    skip_without_compose_stack_parts()
    skip_without_counting_image("pytest-netperf/nginx:local")


def rows(pytester: pytest.Pytester) -> dict[str, dict]:
    results = json_report(pytester)
    return {row["budget"]: row for row in results["rows"]}


def notes(row: dict) -> str:
    return " ".join(row["notes"])


def test_comment_passes_regex_locations_and_dropped_keepalive_fail_naming_the_cost(pytester: pytest.Pytester) -> None:
    config = team_repo(pytester.path, GATE)
    original = config.read_text()

    config.write_text(original + "\n# tuned by the pull request: nothing but this comment\n")
    commented = pytester.runpytest_subprocess(*RUN)
    assert commented.ret == 0, commented.stdout.str()[-4000:]
    found = rows(pytester)
    for budget in (INSTRUCTIONS, SYSCALLS):
        verdict = (found[budget]["verdict"], found[budget]["reference"])
        if budget == SYSCALLS and verdict[0] == "INCONCLUSIVE":
            # the honest answer where strace's repetitions spread wider than 1% (a fresh-clone CI
            # run beside another counted test on a 2-core VM: 0.69% and 0.66% a side, the ratio's
            # range [0.993x, 1.007x]); green, and never a FAIL
            assert "not deterministic enough here to decide" in notes(found[budget]), found[budget]
        else:
            assert verdict == ("PASS", "base"), found[budget]
        assert counted_each_side(found[budget], 2), found[budget]["notes"]
    assert 0.99 < found[INSTRUCTIONS]["raw"]["estimate"] < 1.01
    document = json_report(pytester)
    (measurement,) = document["results"]["test_gate.py::test_edge_cost"]
    counted = measurement["series"]["candidate"]["counted"]["instructions"]["edge"]
    assert counted["requests"] == [100, 500] and len(counted["per_request"]) in (2, COUNTING_CONFIRM_REPETITIONS)
    assert 10_000 < counted["per_request"][0] < 100_000, counted  # nginx proxies a request in ~25k instructions

    assert "    location /api/ {" in original
    config.write_text(original.replace("    location /api/ {", REGEX_LOCATIONS))
    regex = pytester.runpytest_subprocess(*RUN)
    assert regex.ret == 1, regex.stdout.str()[-4000:]
    found = rows(pytester)
    assert found[INSTRUCTIONS]["verdict"] == "FAIL", found[INSTRUCTIONS]
    assert "pcre2_match" in notes(found[INSTRUCTIONS]) or "ngx_regex" in notes(found[INSTRUCTIONS])
    assert found[SYSCALLS]["verdict"] == "PASS", found[SYSCALLS]

    assert "keepalive 32;" in original
    config.write_text(original.replace("keepalive 32;", "# upstream keep-alive pool dropped"))
    dropped = pytester.runpytest_subprocess(*RUN)
    assert dropped.ret == 1, dropped.stdout.str()[-4000:]
    found = rows(pytester)
    assert found[SYSCALLS]["verdict"] == "FAIL", found[SYSCALLS]
    assert found[SYSCALLS]["raw"]["estimate"] > 1.5  # 8 calls per request became 14
    # the note names the three calls that grew most; a connection per request adds a whole
    # call each of connect, close, epoll_ctl (and epoll_wait in some runs), so which three lead
    # depends on hundredths: a run named "epoll_ctl +1.00, epoll_wait +1.00, close +1.00"
    said = notes(found[SYSCALLS])
    grown = [call for call in ("connect", "close", "epoll_ctl", "socket") if f"{call} +1.00" in said]
    assert len(grown) >= 2, said
    dropped.stdout.fnmatch_lines(["*FAIL: 'syscalls_per_request[[]edge[]] <= 1.0x base'*"])


def test_a_plain_url_cannot_be_counted_and_says_why(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_plain="""
        import pytest

        @pytest.mark.netperf("instructions_per_request[edge] <= 30k")
        def test_plain(netperf, netperf_topology):
            from pytest_netperf.topology import builders
            echo = netperf_topology(builders.echo_topology()).endpoint("direct")
            netperf.measure(echo.url, rate=200)
        """
    )
    result = pytester.runpytest_subprocess("--netperf-rounds=2", "--netperf-max-rounds=2", "--netperf-duration=0.3")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*INVALID*instructions_per_request*", "*cannot be counted*plain URL*"])


def test_a_stored_baseline_keeps_the_counts_and_judges_the_next_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_stored="""
        import pytest
        from pytest_netperf.topology import builders

        @pytest.mark.netperf(
            "instructions_per_request[gw] <= 1.005x baseline", "syscalls_per_request[gw] <= 1.0x baseline"
        )
        def test_stored(netperf, netperf_topology):
            gw = netperf_topology(builders.gateway_topology("nginx")).endpoint("gateway")
            netperf.measure(gw, connections=2, rate=200)
        """
    )
    run = ["--netperf-rounds=2", "--netperf-max-rounds=2", "--netperf-duration=0.3", "--netperf-json=results.json"]
    recorded = pytester.runpytest_subprocess(*run, "--netperf-update-baseline")
    assert recorded.ret == 0, recorded.stdout.str()[-3000:]
    assert {row["verdict"] for row in rows(pytester).values()} == {"NEW"}
    found = (pytester.path / ".netperf").rglob("test_stored.py__test_stored-*.json")
    stored = [p for p in found if ".last-run" not in p.parts]
    assert len(stored) == 1 and '"counted"' in stored[0].read_text(), stored
    judged = pytester.runpytest_subprocess(*run)
    assert judged.ret == 0, judged.stdout.str()[-3000:]
    found = rows(pytester)
    assert {row["verdict"] for row in found.values()} == {"PASS"}, found
    assert {row["reference"] for row in found.values()} == {"baseline"}


SIDECAR_COMPOSE = """
services:
  app:
    image: pytest-netperf/echo:local
    command: ["netperf-driver", "echo", "--listen", "0.0.0.0:8080", "--id", "app"]
    expose: ["8080", "80"]
  edge:
    # a sidecar in the app's network namespace, reaching it over loopback
    image: pytest-netperf/nginx:local
    network_mode: "service:app"
    volumes: ["./sidecar.conf:/etc/nginx/conf.d/default.conf:ro"]
    depends_on: [app]
"""
SIDECAR_CONF = """
upstream local_app {
    server 127.0.0.1:8080;
    keepalive 8;
}
server {
    listen 80 default_server;
    access_log off;
    location / {
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_pass http://local_app;
    }
}
"""


def test_a_compose_sidecar_in_another_services_network_is_counted(pytester: pytest.Pytester) -> None:
    """``network_mode: service:app``: the edge's clone joins a plain clone of the app, so it
    forwards over loopback as the real one does, and its cost per request is counted."""
    (pytester.path / "docker-compose.yml").write_text(SIDECAR_COMPOSE)
    (pytester.path / "sidecar.conf").write_text(SIDECAR_CONF)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.netperf("instructions_per_request[edge] <= 60k", "syscalls_per_request[edge] <= 20")
        def test_sidecar(netperf, netperf_compose):
            stack = netperf_compose("docker-compose.yml")
            netperf.measure(stack.endpoint("edge", port=80, path="/"), connections=2, rate=200)
        """
    )
    result = pytester.runpytest_subprocess(
        "--netperf-rounds=2",
        "--netperf-max-rounds=2",
        "--netperf-duration=0.3",
        "--netperf-counting-requests=300",
        "--netperf-counting-repetitions=2",
        "--netperf-json=results.json",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == 0, result.stdout.str()[-4000:]
    found = rows(pytester)
    for budget in ("instructions_per_request[edge] <= 60k", "syscalls_per_request[edge] <= 20"):
        assert found[budget]["verdict"] == "PASS", found[budget]
        assert "counting pass of edge (candidate)" in notes(found[budget])
