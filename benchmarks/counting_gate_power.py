"""The counted cost gate's own figures on real proxies: false FAILs on A/A, detection of
small injected config changes, and seconds to a verdict.

For each proxy (nginx, HAProxy, Envoy; the local images) three topologies of the proxy node
``edge`` in front of the echo app are stood up once: ``a`` and ``a2`` with the same config,
and ``b`` with one small change injected. Every gate runs fresh counting passes (the gate's own
code: measure/counting_pass.py on runtime/counting_clone.py, 3 repetitions of 200 and 1000
requests by default) on two of them and judges the budget on the repetitions
(verdict/counted.py), as ``instructions_per_request[edge] <= 1.005x base`` would:

============  ===============================================  =======================================
proxy         injected change (b)                              budget
============  ===============================================  =======================================
nginx         one ``add_header`` in the proxied location       instructions_per_request <= --budget
haproxy       ``http-request set-header`` from the Host header  instructions_per_request <= --budget
envoy         ``request_headers_to_add`` on the route           instructions_per_request <= --budget
nginx-ka      upstream ``keepalive`` pool removed               syscalls_per_request <= 1.0x
nginx-tls     the same, behind the plugin's nginx TLS edge      syscalls_per_request[gw] <= 1.0x
nginx-nopool  no upstream pool (both); an ``access_log`` file   syscalls_per_request <= 1.0x
============  ===============================================  =======================================

``nginx-tls`` is the case whose system calls can move with timing: the plugin's rendered nginx
gateway (``builders.gateway_topology("nginx", tls=True)``, node ``gw``, a certificate of a test
CA minted when it comes up) over keep-alive TLS connections, where a read may find the
client's next record there or not (a team's TLS edge counted 8.07 against 8.00 calls a request
beside another counted test); the unchanged gates lean on the counting tool's floor and the
thin-miss rule, as the gate does. Its first two gates at idle read 8.0 and 8.0 (A/A) and 8.0
against 15.0 (the pool dropped), repetitions within 0.03%.

``nginx-nopool`` is the other count that moves with timing: without an upstream keep-alive pool
a response may arrive in one piece or two (one ``readv`` more), and which one depends on the
machine's load at that moment; an unchanged stack counted 15.0 and 14.8 calls a request when
its sides were counted one after the other in a CI run (tests/corpus/nginx_wrapper_script).
``--order`` compares the gate's order (the sides' repetitions in turn, A B B A) with that one.

A/A gates compare ``a2`` with ``a``; detection gates compare ``b`` with ``a``. Printed per proxy
and neighbour: red gates (FAIL or INVALID: a merge is blocked either way; an INCONCLUSIVE is a
FAIL when the default final-INCONCLUSIVE policy turns it red, as the plugin's gate does), each
count, the INCONCLUSIVEs before that policy, the measured change, the repetitions' spread and
the median seconds to a verdict (both sides' counting passes). A counting pass that fails
(CountingPassError: a clone that did not start, a driver that did not finish) is INVALID.

With --neighbour (a comma list: ``idle``, ``light``, ``busy``, ``heavy``, ``LEVEL:N`` for N
loopback TCP pairs; see benchmarks/_neighbour.py) each proxy's gates run once per scenario,
with ``shared/noise/busy-neighbor --level LEVEL`` running throughout them (the stacks are
stood up before, with no neighbour). The default is ``idle,busy,heavy:2``.

Usage: python benchmarks/counting_gate_power.py [--gates 40] [--proxies nginx,nginx-ka,haproxy:10,envoy:5]
       [--budget 1.005] [--repetitions 3] [--low 200] [--high 1000] [--both-tools] [--order turns] [--no-confirm]
       [--neighbour idle,busy,heavy:2] [--neighbour-seconds 7200] [--neighbour-seed 1] [--kinds A/A,change]
Needs Docker, the local images (`netperf images build`) and Debian's apt for the counting images.
Everything started is removed.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from _neighbour import (
    IDLE,
    MATRIX,
    Neighbour,
    NeighbourMissing,
    NeighbourReport,
    Scenario,
    add_neighbour_options,
    find_program,
    parse_scenarios,
)

from pytest_netperf import builders, defaults
from pytest_netperf.budget.grammar import Budget, parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.measure.counting_pass import CountedSide, CountingPassError, CountingPlan, count_sides
from pytest_netperf.results.counted import CountedCost, counting_tool, parts_changed
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.docker import DockerRuntime
from pytest_netperf.runtime.running import RunningTopology
from pytest_netperf.topology.model import Node, Target, Topology
from pytest_netperf.verdict.counted import evaluate_repetitions, needs_confirmation
from pytest_netperf.verdict.policy import undecided_fails
from pytest_netperf.verdict.stats import Verdict
from pytest_netperf.verdict.status import Status

NGINX = """worker_processes 1;
pid /tmp/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path /tmp/nginx-body;
    proxy_temp_path /tmp/nginx-proxy;
    fastcgi_temp_path /tmp/nginx-fastcgi;
    uwsgi_temp_path /tmp/nginx-uwsgi;
    scgi_temp_path /tmp/nginx-scgi;
    upstream app { server app:8080; KEEPALIVE }
    server {
        listen 80;
        location / {
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            INJECT
        }
    }
}
"""
HAPROXY = """global
    maxconn 1024
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
frontend fe
    bind :80
    INJECT
    default_backend be
backend be
    http-reuse always
    server app app:8080
"""
ENVOY = """static_resources:
  listeners:
  - name: edge
    address: {socket_address: {address: 0.0.0.0, port_value: 80}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: edge
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: "/"}
                route: {cluster: app}
INJECT
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
  - name: app
    type: STRICT_DNS
    connect_timeout: 2s
    load_assignment:
      cluster_name: app
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: app, port_value: 8080}}}
"""
ENVOY_HEADER = """                request_headers_to_add:
                - header: {key: x-extra, value: "%REQ(:authority)%"}"""


@dataclass(frozen=True)
class Case:
    """One proxy's A and B configs and the tool and budget that judge them."""

    kind: str
    config_a: str
    config_b: str
    tool: str
    budget: str
    #: The plugin's rendered nginx TLS edge instead of the configs (``b``: no upstream pool).
    tls: bool = False

    @property
    def node(self) -> str:
        """The counted node, as the budget names it."""
        return "gw" if self.tls else "edge"

    @property
    def target(self) -> str:
        """The target the counting load enters."""
        return "gateway-tls" if self.tls else "edge"


def cases(budget: float) -> dict[str, Case]:
    ratio = f"{budget:g}x base"
    nginx = NGINX.replace("KEEPALIVE", "keepalive 32;")
    # nginx's own defaults upstream, as tests/corpus/nginx_wrapper_script has them: HTTP/1.0 and a
    # connection closed by the app after each response, whose end may arrive with it or after it
    nopool = (
        NGINX.replace("KEEPALIVE", "")
        .replace("proxy_http_version 1.1;", "")
        .replace('proxy_set_header Connection "";', "")
    )
    return {
        "nginx": Case(
            "nginx",
            nginx.replace("INJECT", ""),
            nginx.replace("INJECT", "add_header X-Extra edge always;"),
            "instructions",
            f"instructions_per_request[edge] <= {ratio}",
        ),
        "haproxy": Case(
            "haproxy",
            HAPROXY.replace("INJECT", ""),
            HAPROXY.replace("INJECT", "http-request set-header X-Extra %[req.hdr(host)]"),
            "instructions",
            f"instructions_per_request[edge] <= {ratio}",
        ),
        "envoy": Case(
            "envoy",
            ENVOY.replace("INJECT\n", ""),
            ENVOY.replace("INJECT", ENVOY_HEADER),
            "instructions",
            f"instructions_per_request[edge] <= {ratio}",
        ),
        "nginx-ka": Case(
            "nginx",
            nginx.replace("INJECT", ""),
            NGINX.replace("KEEPALIVE", "").replace("INJECT", ""),
            "syscalls",
            "syscalls_per_request[edge] <= 1.0x base",
        ),
        "nginx-nopool": Case(
            "nginx",
            nopool.replace("INJECT", ""),
            nopool.replace("INJECT", "access_log /tmp/edge-access.log;"),
            "syscalls",
            "syscalls_per_request[edge] <= 1.0x base",
        ),
        "nginx-tls": Case("nginx", "", "", "syscalls", "syscalls_per_request[gw] <= 1.0x base", tls=True),
    }


def topology(name: str, kind: str, config: Path) -> Topology:
    """The proxy node ``edge`` with the team's own ``config`` in front of the echo app."""
    app = Node("app", "echo", 8080)
    edge = Node("edge", kind, 80, upstreams=("app",), image=None, config=str(config))
    return Topology(name, (app, edge), (Target("edge", "edge", 80),))


def stack_of(case: Case, name: str, label: str, folder: Path) -> Topology:
    """Stack ``label`` (``a``, ``a2``, ``b``) of ``case``: its config in ``folder``, or the
    rendered TLS edge, with ``b`` the one with the change."""
    if case.tls:
        rendered = builders.gateway_topology("nginx", tls=True, upstream_keepalive=label != "b")
        return replace(rendered, name=f"{name}-{label}")
    path = folder / f"{name}-{label}.conf"
    path.write_text(case.config_b if label == "b" else case.config_a)
    return topology(f"{name}-{label}", case.kind, path)


def side_of(running: RunningTopology, case: Case, label: str) -> CountedSide:
    """The stack's counted node as a side of a counting pass. Over TLS the driver trusts the
    stack's test CA and sends its name, as the gate does."""
    endpoint = running.endpoint(case.target)
    assert endpoint.counter is not None
    host = endpoint.host_header
    shape = LoadShape(headers=(("Host", host),) if host else (), tls=endpoint.tls)
    return CountedSide(endpoint.counter, RustDriver().run, endpoint.url, shape, label)


def costs_of(
    base: RunningTopology, head: RunningTopology, case: Case, plan: CountingPlan, both_tools: bool, in_turn: bool
) -> tuple[CountedCost, CountedCost]:
    """The case's tool's cost of the base and the head stack's counted node; ``in_turn``: their
    repetitions in turn, as the gate counts them (else the base's pass, then the head's); with
    ``both_tools`` counted beside the other tool's runs, as a test with both budgets on a
    machine of two or more cores does."""
    tools = ["instructions", "syscalls"] if both_tools else [case.tool]
    sides = [side_of(head, case, "head"), side_of(base, case, "base")]  # the candidate first, as in the gate
    if in_turn:
        counted = count_sides(sides, tools, plan, progress=say_recounts, parallel=both_tools)
    else:
        counted = [count_sides([side], tools, plan, say_recounts, both_tools)[0] for side in reversed(sides)][::-1]
    for _, errors in counted:
        if errors:
            raise CountingPassError(next(iter(errors.values())))
    (head_costs, _), (base_costs, _) = counted
    return base_costs[case.tool], head_costs[case.tool]


def say_recounts(message: str) -> None:
    """Prints the pass's progress lines that say a repetition was counted again (its two runs
    counted different numbers of processes); the rest are left out."""
    if message.endswith("counted again"):
        print(f"  {message}", flush=True)


@dataclass(frozen=True)
class Outcome:
    """One gate: its status after the default INCONCLUSIVE policy (INVALID when a pass failed)."""

    status: Status
    undecided: bool
    estimate: float
    spread: float
    seconds: float


def uneven_note(base: CountedCost, head: CountedCost) -> str:
    """`` uneven processes: head repetition 2: 3 and 2`` where a side's two runs of a repetition
    still counted different numbers of processes after the pass's recounts, else ""."""
    found = [f"{side} {cost.uneven_runs}" for side, cost in (("base", base), ("head", head)) if cost.uneven_runs]
    return f" uneven processes: {', '.join(found)}" if found else ""


def run_gate(
    budget: Budget,
    stacks: dict[str, RunningTopology],
    candidate: str,
    case: Case,
    plan: CountingPlan,
    args: argparse.Namespace,
) -> tuple[Outcome, str]:
    """Counting passes on the base ``a`` and the head ``candidate`` (each gate its own) and the
    verdict; with the line to print."""
    started = time.monotonic()
    in_turn = args.order == "turns"
    try:
        base, head = costs_of(stacks["a"], stacks[candidate], case, plan, args.both_tools, in_turn)
        verdict = judged(budget, case, base, head)
        recounted = ""
        thin = needs_confirmation(verdict, list(head.per_request), list(base.per_request))
        if args.confirm and thin and plan.repetitions < defaults.COUNTING_CONFIRM_REPETITIONS:
            first = f"{verdict.estimate:.4f}x [{verdict.ci_low:.4f}, {verdict.ci_high:.4f}]"
            again = replace(plan, repetitions=defaults.COUNTING_CONFIRM_REPETITIONS)
            base, head = costs_of(stacks["a"], stacks[candidate], case, again, args.both_tools, in_turn)
            verdict = judged(budget, case, base, head)
            recounted = f" (counted again: the first pass FAIL {first})"
    except CountingPassError as exc:  # the budgets a failed pass serves are INVALID, as in the gate
        seconds = time.monotonic() - started
        return Outcome(Status.INVALID, False, float("nan"), float("nan"), seconds), f"INVALID: {exc} {seconds:.1f}s"
    seconds = time.monotonic() - started
    spread = max(base.spread, head.spread)
    status, undecided = verdict.status, verdict.status is Status.INCONCLUSIVE
    if undecided:  # the default final-INCONCLUSIVE policy decides red or green
        status = Status.FAIL if undecided_fails(budget, verdict, defaults.INCONCLUSIVE) else Status.PASS
    line = (
        f"{verdict.status} {verdict.estimate:.4f}x [{verdict.ci_low:.4f}, {verdict.ci_high:.4f}] "
        f"base {base.median:,.1f} head {head.median:,.1f} spread {spread:.2%} {seconds:.1f}s"
        f"{uneven_note(base, head)}{recounted}"
    )
    return Outcome(status, undecided, verdict.estimate, spread, seconds), line


def judged(budget: Budget, case: Case, base: CountedCost, head: CountedCost) -> Verdict:
    """The budget's verdict on the two sides' counts, as the gate's cost step judges it."""
    floor = counting_tool(case.tool).named_floor
    parts = parts_changed({case.node: head}, {case.node: base}, floor)
    return evaluate_repetitions(budget, list(head.per_request), list(base.per_request), floor=floor, parts=parts)


GATE_KINDS = {"A/A": "a2", "change": "b"}  # a gate kind and the stack it compares with ``a``
ORDERS = ("turns", "one-after-the-other")


def run_proxy(
    name: str,
    case: Case,
    stacks: dict[str, RunningTopology],
    gates: int,
    neighbour: Neighbour,
    args: argparse.Namespace,
    labelled: bool,
) -> dict[str, list[Outcome]]:
    """``gates`` gates of each of ``args.kinds`` (A/A, change) of one proxy beside ``neighbour`` (running)."""
    plan = CountingPlan(low=args.low, high=args.high, repetitions=args.repetitions)
    budget = parse_budget(case.budget)
    prefix = f"[{neighbour.scenario.name}] " if labelled else ""
    kinds = [(scenario, candidate) for scenario, candidate in GATE_KINDS.items() if scenario in args.kinds]
    outcomes: dict[str, list[Outcome]] = {scenario: [] for scenario, _ in kinds}
    for gate in range(gates):
        for scenario, candidate in kinds:
            if neighbour.ensure_running():
                print(f"busy-neighbor {neighbour.scenario.name}: its --seconds ran out; started again", flush=True)
            outcome, line = run_gate(budget, stacks, candidate, case, plan, args)
            outcomes[scenario].append(outcome)
            print(f"{prefix}{name} {scenario} gate {gate + 1}: {line}", flush=True)
    return outcomes


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    proxy: str
    neighbour: str
    busy: str
    scenario: str
    budget: str
    outcomes: list[Outcome]

    def cells(self) -> str:
        found = self.outcomes
        count = {status: sum(o.status is status for o in found) for status in (Status.FAIL, Status.INVALID)}
        red = count[Status.FAIL] + count[Status.INVALID]
        judged = [o for o in found if o.status is not Status.INVALID]
        change = statistics.median(o.estimate for o in judged) if judged else float("nan")
        spread = max((o.spread for o in judged), default=float("nan"))
        seconds = statistics.median(o.seconds for o in found)
        return (
            f"| {self.proxy} | {self.neighbour}{self.busy} | {self.scenario} | `{self.budget}` | {len(found)} "
            f"| {red} ({red / len(found):.0%}) | {count[Status.FAIL]} | {count[Status.INVALID]} "
            f"| {sum(o.undecided for o in found)} | {change:.4f}x | {spread:.2%} | {seconds:.0f} |"
        )


def busy_cell(scenario: Scenario, report: NeighbourReport) -> str:
    """`` (51%)``: the neighbour's workers' mean busy fraction, when it ran."""
    return f" ({report.mean_busy:.0%})" if not scenario.idle and report.busy else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gates", type=int, default=40, help="gates per scenario (or proxy:N in --proxies)")
    # one instructions case and one system calls case: the table of issue #38 (haproxy, envoy by name)
    parser.add_argument("--proxies", default="nginx,nginx-ka", help="cases, each name or name:gates")
    parser.add_argument("--budget", type=float, default=1.005)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--low", type=int, default=200)
    parser.add_argument("--high", type=int, default=1000)
    parser.add_argument(
        "--both-tools", action="store_true", help="count instructions and system calls side by side in every pass"
    )
    parser.add_argument(
        "--order",
        choices=ORDERS,
        default="turns",
        help="turns: the sides' repetitions in turn, A B B A (the gate's); one-after-the-other: the base's pass, "
        "then the head's (the gate's order before 2026-12-07)",
    )
    parser.add_argument(
        "--no-confirm",
        dest="confirm",
        action="store_false",
        help="judge the first pass alone (the gate counts a thin FAIL again, 6 repetitions a side: the default)",
    )
    parser.add_argument(
        "--kinds",
        type=lambda text: [kind.strip() for kind in text.split(",")],
        default=list(GATE_KINDS),
        help="gate kinds, a comma list of A/A and change (default both; A/A alone where only false reds are asked)",
    )
    add_neighbour_options(parser, "beside every proxy's gates", default=MATRIX)
    args = parser.parse_args()
    if not args.kinds or set(args.kinds) - set(GATE_KINDS):
        parser.error(f"--kinds takes a comma list of {', '.join(GATE_KINDS)}, not {','.join(args.kinds)!r}")
    known = cases(args.budget)
    try:
        neighbours = parse_scenarios(args.neighbour)
        if any(not n.idle for n in neighbours):
            find_program()
    except (ValueError, NeighbourMissing) as exc:
        parser.error(str(exc))
    labelled = [n.name for n in neighbours] != [IDLE]  # the progress lines name the neighbour
    session = f"costpower{uuid.uuid4().hex[:8]}"
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    runtime = DockerRuntime(session, {}, core_split=None)
    rows: list[Row] = []
    try:
        with tempfile.TemporaryDirectory(prefix="netperf-counting-power-") as folder:
            for item in args.proxies.split(","):
                name, _, count = item.partition(":")
                gates = int(count) if count else args.gates
                case = known[name]
                stacks = {}
                for label in ("a", "a2", "b"):
                    stacks[label] = runtime.up(stack_of(case, name, label, Path(folder)))
                for neighbour_scenario in neighbours:
                    with Neighbour(neighbour_scenario, args.neighbour_seconds, args.neighbour_seed) as neighbour:
                        outcomes = run_proxy(name, case, stacks, gates, neighbour, args, labelled)
                    busy = busy_cell(neighbour_scenario, neighbour.report)
                    if not neighbour_scenario.idle:
                        report = neighbour.report.summary()
                        print(f"busy-neighbor {neighbour_scenario.name} beside {name}: {report}", flush=True)
                    for scenario, found in outcomes.items():
                        rows.append(Row(name, neighbour_scenario.name, busy, scenario, case.budget, found))
                for label in stacks:
                    stacks[label].down()
    finally:
        runtime.down_all()  # and the test CA's files of the TLS case
        clean_session(session)
    print()
    print(
        "| proxy | neighbour (workers busy) | scenario | budget | gates | red (FAIL+INVALID) | FAIL | INVALID "
        "| INCONCLUSIVE (before the policy) | median change | largest spread | s/verdict |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row.cells())


if __name__ == "__main__":
    main()
