"""Public-style Compose stacks under ``--netperf-base`` (#27): the shapes teams publish, with
their proxy configs as written, must give an unchanged pull request a green gate with a
complete report, and a harmful change a red one.

``tests/corpus/nginx_published``: an untagged ``image: nginx`` (mapped by the role key),
host ports published for both services (the base twin comes up beside the head), and a
query-string target (``with_query``) that both sides must be measured with.

``tests/corpus/envoy_front_proxy``: a front Envoy routing by path to two services, each
behind a sidecar Envoy in the service's network namespace (``network_mode: service:X``),
the Envoy image named by its official tag and published ports; the harmful change is the
one seen on the Envoy sandbox, ``max_requests_per_connection: 1`` towards one service.

Real containers through Compose; each run is 3 to 8 rounds of 1 s per side.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docker_helpers import skip_without_compose_stack_parts, stack_repo
from pytester_helpers import caught, json_report, netperf_args, undecided_for

pytestmark = pytest.mark.docker

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
NGINX_GATE = """
import pytest

from pytest_netperf import with_query


@pytest.mark.netperf("rps >= 0.7x base", "errors == 0")
def test_proxy_against_base(netperf, netperf_compose):
    stack = netperf_compose("nginx_published/docker-compose.yml")
    netperf.measure(with_query(stack.endpoint("proxy"), size=16384), connections=16)
"""
ENVOY_GATE = """
import pytest


@pytest.mark.netperf("rps >= 0.7x base", "errors == 0")
def test_front_proxy_against_base(netperf, netperf_compose):
    stack = netperf_compose("envoy_front_proxy/docker-compose.yml")
    front = stack.endpoint("front-envoy", port=8080, path="/service/2?size=512", host="shop.example")
    netperf.measure(front, connections=8)
"""
INI = """
[pytest]
netperf_images =
    nginx=pytest-netperf/nginx:local
    envoyproxy/envoy=pytest-netperf/envoy:local
"""
ONE_REQUEST_PER_CONNECTION = """
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        common_http_protocol_options: { max_requests_per_connection: 1 }
        explicit_http_config: { http_protocol_options: {} }"""
RUN = netperf_args(3, 8, "1", "0.5", "-m", "netperf", "--netperf-base=main", "--netperf-json=results.json")
#: The Envoy one-request-per-connection change moves rps by 0.13x-0.83x from round to round on a
#: quiet runner (CI: 0.329x [0.130x, 0.834x] after 8 rounds, INCONCLUSIVE): up to 16 rounds.
RUN_UNSTEADY_CHANGE = netperf_args(
    3, 16, "1", "0.5", "-m", "netperf", "--netperf-base=main", "--netperf-json=results.json"
)


@pytest.fixture(scope="module", autouse=True)
def needs_docker_compose_and_images() -> None:
    skip_without_compose_stack_parts()


def team_repo(pytester: pytest.Pytester, stack: str, gate: str) -> Path:
    """A repository whose ``main`` holds the corpus stack and the gate; returns the stack's folder."""
    return stack_repo(pytester.path, CORPUS / stack, gate, INI)


def report(pytester: pytest.Pytester) -> dict:
    return json_report(pytester)


def rows(doc: dict) -> dict[str, dict]:
    return {row["budget"]: row for row in doc["rows"]}


def green_report(pytester: pytest.Pytester, stack: str, gate: str) -> dict:
    """Run the unchanged corpus stack's gate under --netperf-base; it must pass. Its JSON report."""
    team_repo(pytester, stack, gate)
    result = pytester.runpytest_subprocess(*RUN)
    assert result.ret == 0, result.stdout.str()
    return report(pytester)


def test_published_ports_untagged_image_and_a_query_unchanged_is_green_with_both_sides_alike(
    pytester: pytest.Pytester,
) -> None:
    doc = green_report(pytester, "nginx_published", NGINX_GATE)
    by_budget = rows(doc)
    rps = by_budget["rps >= 0.7x base"]
    assert rps["reference"] == "base" and (rps["verdict"] == "PASS" or undecided_for(rps)), rps
    assert by_budget["errors == 0"]["verdict"] == "PASS"
    (measurement,) = doc["results"]["test_gate.py::test_proxy_against_base"]
    series = measurement["series"]
    assert set(series) == {"candidate", "base"}
    for side in ("candidate", "base"):  # the same request on both sides (#27 item 1)
        assert series[side]["url"].endswith(":80/?size=16384"), series[side]["url"]
        assert series[side]["rounds"] and all(r["ok"] > 0 for r in series[side]["rounds"])
        received = [r["bytes_received"] / r["ok"] for r in series[side]["rounds"]]
        assert min(received) > 16384, f"{side} got the 16 KiB responses the query asks for: {received}"
    assert series["candidate"]["url"] != series["base"]["url"]  # two stacks, head and base


def test_a_harmful_proxy_change_is_red(pytester: pytest.Pytester) -> None:
    stack = team_repo(pytester, "nginx_published", NGINX_GATE)
    config = stack / "nginx" / "default.conf"
    config.write_text(config.read_text().replace("access_log off;", "access_log off;\n    limit_rate 200k;"))
    result = pytester.runpytest_subprocess(*RUN)
    # FAIL; or, when other processes took the cores in one side's turns and not the other's
    # (CI: 1.06 and 0.09 of 2 cores in all 3 pairs), the gate's honest "too busy" answer
    if caught(result, rows(report(pytester))["rps >= 0.7x base"]):
        result.stdout.fnmatch_lines(["*FAIL: 'rps >= 0.7x base'*vs the base revision main*"])


def test_envoy_front_proxy_with_sidecars_unchanged_is_green_with_the_same_request_on_both_sides(
    pytester: pytest.Pytester,
) -> None:
    doc = green_report(pytester, "envoy_front_proxy", ENVOY_GATE)
    by_budget = rows(doc)
    # PASS; beside a busy neighbour the gate's honest "too busy" answer (green) is as good
    rps = by_budget["rps >= 0.7x base"]
    assert by_budget["errors == 0"]["verdict"] == "PASS" and (rps["verdict"] == "PASS" or undecided_for(rps)), rps
    (measurement,) = doc["results"]["test_gate.py::test_front_proxy_against_base"]
    requests = {}
    for side in ("candidate", "base"):
        series = measurement["series"][side]
        assert series["url"].endswith(":8080/service/2?size=512"), series["url"]
        assert all(r["ok"] > 0 and r["status_codes"] == {"200": r["requests"]} for r in series["rounds"])
        requests[side] = by_budget["rps >= 0.7x base"]["facts"][side]["request"]
    for request in requests.values():  # each row states the exact request of each side
        assert request.startswith("GET http://") and ":8080/service/2?size=512, Host: shop.example; c=8" in request
    assert requests["candidate"].split(" ", 2)[2] == requests["base"].split(" ", 2)[2]
    costs = measurement["series"]["candidate"]["system_costs"]
    assert {"front-envoy", "service2-envoy", "service2"} <= set(costs), costs


def test_envoy_one_request_per_upstream_connection_is_red(pytester: pytest.Pytester) -> None:
    stack = team_repo(pytester, "envoy_front_proxy", ENVOY_GATE)
    config = stack / "front-envoy.yaml"
    text = config.read_text()
    marker = "  - name: service2\n"
    assert marker in text
    config.write_text(text.replace(marker, marker.rstrip("\n") + ONE_REQUEST_PER_CONNECTION + "\n"))
    result = pytester.runpytest_subprocess(*RUN_UNSTEADY_CHANGE)
    if caught(result, rows(report(pytester))["rps >= 0.7x base"]):
        result.stdout.fnmatch_lines(["*FAIL: 'rps >= 0.7x base'*vs the base revision main*"])
