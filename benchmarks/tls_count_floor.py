"""The A/A floor of counted cost gates over TLS: how far the counted instructions and system
calls per request of an unchanged TLS stack move from one counting pass to the next.

TLS brings randomness into what a server executes (ephemeral keys, signature nonces, session
tickets, the random generator's reseeding): rustls's own CI saw 0.61% run to run. This stands
up ``tests/corpus/nginx_tls_edge`` (nginx terminating TLS with a certificate minted here, in
front of the echo app) through Compose once, then runs ``--passes`` fresh counting passes
(the gate's own code: measure/counting_pass.py on runtime/counting_clone.py, ``--repetitions``
pairs of ``--low`` and ``--high`` requests) of the edge for each load:

* ``keep-alive``: one TLS connection, requests on it;
* ``resumed``: a new connection and a resumed TLS handshake per request (the driver's default);
* ``full``: a new connection and a full handshake per request (``tls={"resumption": False}``).

Printed per load and tool: the pass medians, the run-to-run spread ((max - min) / median of the
pass medians), the widest spread within one pass, and what the gate users write,
``<tool>_per_request[edge] <= 1.01x base`` (system calls: ``<= 1.0x base``), decides on every
pair of consecutive passes (head = the later pass, base = the earlier one): an unchanged
stack, so every FAIL is a false alarm.

Usage: python benchmarks/tls_count_floor.py [--passes 3] [--loads keep-alive,resumed,full]
       [--tools instructions,syscalls] [--key ecdsa|rsa] [--low 40] [--high 200] [--repetitions 3]
Needs Docker, Compose, the local images (`netperf images build --counting`). Everything
started is removed (also on TERM). On this 2-core VM, loaded by other test suites, a pass of
both tools took about 2 minutes with keep-alive and 4-7 with a handshake per request: the
default run takes about 40 minutes; docs/budgets.md "Cost gates over TLS" has the figures.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from pytest_netperf.budget.grammar import parse_budget
from pytest_netperf.drivers.base import LoadShape
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.engine.client import docker_client
from pytest_netperf.measure.counting_pass import CountingPassError, CountingPlan, run_counting_pass
from pytest_netperf.results.counted import CountedCost, relative_spread
from pytest_netperf.runtime.cleanup import clean_session
from pytest_netperf.runtime.compose.cli import find_compose
from pytest_netperf.runtime.compose.launcher import ComposeLauncher, StackSpec
from pytest_netperf.runtime.test_ca import SessionCA
from pytest_netperf.tls_options import TlsOptions
from pytest_netperf.verdict.counted import evaluate_repetitions
from pytest_netperf.verdict.status import Status

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus" / "nginx_tls_edge"
HOST = "edge.example.test"
LOADS = {
    "keep-alive": (False, None),
    "resumed": (True, None),
    "full": (True, False),
}
BUDGETS = {
    "instructions": "instructions_per_request[edge] <= 1.01x base",
    "syscalls": "syscalls_per_request[edge] <= 1.0x base",
}


@dataclass(frozen=True)
class Floor:
    """One load's and tool's counting passes."""

    load: str
    tool: str
    passes: list[CountedCost]
    failed: list[str]

    def line(self) -> str:
        """A table row: medians, run-to-run spread, widest spread within a pass, A/A verdicts."""
        if len(self.passes) < 2:
            return f"| {self.load} | {self.tool} | {len(self.passes)} | - | - | - | - | {len(self.failed)} |"
        medians = [p.median for p in self.passes]
        budget = parse_budget(BUDGETS[self.tool])
        verdicts = [
            evaluate_repetitions(budget, list(head.per_request), list(base.per_request))
            for base, head in zip(self.passes, self.passes[1:], strict=False)
        ]
        counts = {s: sum(v.status is s for v in verdicts) for s in (Status.PASS, Status.FAIL, Status.INCONCLUSIVE)}
        ratios = ", ".join(f"{v.estimate:.4f}" for v in verdicts)
        return (
            f"| {self.load} | {self.tool} | {len(self.passes)} | {statistics.median(medians):,.1f} "
            f"| {relative_spread(medians):.3%} | {max(p.spread for p in self.passes):.3%} "
            f"| {counts[Status.PASS]} PASS, {counts[Status.FAIL]} FAIL, {counts[Status.INCONCLUSIVE]} INCONCLUSIVE "
            f"({ratios}) | {len(self.failed)} |"
        )


def mint(folder: Path, ca: SessionCA) -> None:
    """The edge's certificate, key and CA as the Compose file mounts them (``certs/``)."""
    certs = folder / "certs"
    certs.mkdir()
    shutil.copyfile(ca.files.server_cert, certs / "edge.pem")
    shutil.copyfile(ca.files.server_key, certs / "edge.key")
    shutil.copyfile(ca.files.ca, certs / "ca.pem")
    (certs / "edge.key").chmod(0o644)  # read by nginx's master (root) in the container


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--loads", default=",".join(LOADS))
    parser.add_argument("--tools", default="instructions,syscalls")
    parser.add_argument("--key", choices=("ecdsa", "rsa"), default="ecdsa")
    parser.add_argument("--low", type=int, default=40)
    parser.add_argument("--high", type=int, default=200)
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    loads = [load.strip() for load in args.loads.split(",") if load.strip()]
    tools = [tool.strip() for tool in args.tools.split(",") if tool.strip()]
    unknown = [x for x in loads if x not in LOADS] + [x for x in tools if x not in BUDGETS]
    if unknown or args.passes < 2:
        parser.error(f"unknown load or tool: {', '.join(unknown)}" if unknown else "--passes must be >= 2")
    plan = CountingPlan(low=args.low, high=args.high, repetitions=args.repetitions)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))  # clean up on TERM too
    client = docker_client()
    session = f"tlsfloor{uuid.uuid4().hex[:8]}"
    launcher = ComposeLauncher(
        find_compose(), client, session, image_overrides={"nginx:1.27": "pytest-netperf/nginx:local"}
    )
    floors: list[Floor] = []
    with tempfile.TemporaryDirectory(prefix="netperf-tls-floor-") as name:
        folder = Path(name) / "stack"
        shutil.copytree(CORPUS, folder)
        try:
            with SessionCA(server_names=(HOST,), key_type=args.key, folder=Path(name) / "ca") as ca:
                mint(folder, ca)
                stack = launcher.up(StackSpec.build(folder / "docker-compose.yml"))
                try:
                    endpoint = stack.endpoint("edge", port=443)
                    assert endpoint.counter is not None
                    url = endpoint.url.replace("http://", "https://", 1)
                    driver = RustDriver()
                    for load in loads:
                        per_request, resumption = LOADS[load]
                        shape = LoadShape(
                            headers=(("Host", HOST),),
                            new_connection_per_request=per_request,
                            tls=TlsOptions(ca=str(ca.files.ca), resumption=resumption),
                        )
                        found: dict[str, list[CountedCost]] = {tool: [] for tool in tools}
                        failed: dict[str, list[str]] = {tool: [] for tool in tools}
                        for index in range(args.passes):
                            for tool in tools:
                                try:
                                    cost = run_counting_pass(endpoint.counter, [tool], driver.run, url, shape, plan)[
                                        tool
                                    ]
                                except CountingPassError as exc:
                                    failed[tool].append(str(exc))
                                    print(f"{load} {tool} pass {index + 1}: INVALID {exc}", flush=True)
                                    continue
                                found[tool].append(cost)
                                values = ", ".join(f"{v:,.1f}" for v in cost.per_request)
                                moved = ", ".join(f"{n} {lo:,.2f}-{hi:,.2f}" for n, (lo, hi) in cost.varying.items())
                                print(
                                    f"{load} {tool} pass {index + 1}: {values} (spread {cost.spread:.3%})"
                                    + (f"; moved: {moved}" if moved else ""),
                                    flush=True,
                                )
                        floors += [Floor(load, tool, found[tool], failed[tool]) for tool in tools]
                finally:
                    stack.down()
        finally:
            clean_session(session, client)
    print()
    print(
        f"nginx TLS edge ({args.key}), {args.repetitions} repetitions of {args.low} and {args.high} requests per pass"
    )
    print(
        "| load | counted | passes | median per request | run-to-run spread | widest spread in a pass "
        "| A/A gates on consecutive passes (ratios) | INVALID |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for floor in floors:
        print(floor.line())


if __name__ == "__main__":
    main()
