"""The text of the files ``netperf init`` writes: a starter test module, the pytest settings,
and the CI jobs for GitHub Actions and GitLab. Pure functions of the survey.

The budgets are ones an unchanged stack keeps on a shared 2-core runner (docs/budgets.md
has the figures): throughput within 10% of the base, P90 within 10%, and the proxy's work
per request counted under valgrind and strace within 1% and no more system calls. A proxy that
listens with TLS only is loaded over HTTPS (trusting the CA found among its mounted files, or
the one ``--tls-ca`` names) and gets a handshake-per-request test besides.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from pytest_netperf.report.markdown import COMMENT_MARKER
from pytest_netperf.starter.routes import Route, choose_routes
from pytest_netperf.starter.survey import ServiceSurvey, StackSurvey

#: Proxies whose cost per request (valgrind, strace) is known to be counted in full; Go and
#: JIT servers (Traefik, Caddy, Kong's LuaJIT) run badly or not at all under valgrind.
COUNTED_PROXIES = frozenset({"nginx", "haproxy", "envoy"})
#: The instructions budget of the handshake-per-request test (x base): TLS makes a count move
#: run to run (random keys and nonces); docs/budgets.md "Cost gates over TLS" has the floor.
HANDSHAKE_INSTRUCTIONS = "1.01"
#: The machine class the CI jobs record stored baselines under.
GITHUB_MACHINE_CLASS = "gha-ubuntu-latest"
GITLAB_MACHINE_CLASS = "gitlab-runner"
#: Where the reports go (the CI jobs keep this folder as their artifact).
REPORT_DIR = "netperf-report"
#: The Markdown report (the pull-request comment) in REPORT_DIR.
REPORT_MARKDOWN = "netperf.md"
#: The GitHub workflow that runs the gates (read-only) and the one that posts its comment.
GITHUB_WORKFLOW_NAME = "netperf"
GITHUB_WORKFLOW_FILE = ".github/workflows/netperf.yml"
GITHUB_COMMENT_WORKFLOW_FILE = ".github/workflows/netperf-comment.yml"
#: The artifact that carries the reports from the one to the other, and the pull request's number in it.
ARTIFACT = "netperf"
PR_NUMBER_FILE = "pr-number"
#: The pull-request label that accepts a regression, and how the gate hears of it (NETPERF_ACCEPT: the reason).
ACCEPT_LABEL = "netperf:accept-regression"
ACCEPT_EXPRESSION = (
    f"${{{{ contains(github.event.pull_request.labels.*.name, '{ACCEPT_LABEL}') && 'label {ACCEPT_LABEL}' || '' }}}}"
)
_IDENTIFIER = re.compile(r"[^0-9a-zA-Z_]+")


@dataclass(frozen=True)
class StarterPlan:
    """What ``netperf init`` writes about, besides the survey."""

    survey: StackSurvey
    #: the Compose file as the tests name it, relative to the pytest rootdir
    compose_path: str
    #: the folder of the test module, relative to the rootdir
    tests_dir: str = "tests/netperf"
    #: what the CI jobs ``pip install`` (a requirement, a wheel's path or URL)
    package: str = "pytest-netperf"
    #: the folders whose changes trigger the GitHub job (the stack's config folders)
    watched: Sequence[str] = field(default_factory=tuple)
    #: the CA bundle the gates of TLS-only proxies trust (``--tls-ca``), relative to the rootdir;
    #: None: the CA found among each proxy's mounted files
    tls_ca: Optional[str] = None
    #: the rootdir (None: the working directory), to name a CA relative to the Compose file's folder
    root: Optional[Path] = None

    def ca_of(self, service: ServiceSurvey) -> Optional[str]:
        """The CA bundle ``service``'s gates trust, relative to the Compose file's folder (as
        ``stack.endpoint(tls=...)`` resolves it, so the base revision's twin trusts the base's CA);
        None when none is known."""
        root = (self.root or Path.cwd()).resolve()
        if self.tls_ca:
            found = root / self.tls_ca
        elif service.trust.ca is not None:
            found = service.trust.ca
        else:
            return None
        folder = (root / self.compose_path).parent
        return Path(os.path.relpath(found.resolve(), folder)).as_posix()

    @property
    def test_module(self) -> str:
        """The test module's path, relative to the rootdir."""
        return f"{self.tests_dir}/test_netperf_gates.py"


def identifier(name: str) -> str:
    """A Python identifier part for a service name: ``api-gw.v2`` -> ``api_gw_v2``."""
    cleaned = _IDENTIFIER.sub("_", name).strip("_").lower()
    return cleaned if cleaned and not cleaned[0].isdigit() else f"s_{cleaned}"


def test_module(plan: StarterPlan) -> str:
    """The starter test module: three gates per proxy against the base revision."""
    others = [s for s in plan.survey.services if not s.proxy]
    lines = [
        f'"""Performance gates for the proxies of {plan.compose_path}, written by `netperf init`.',
        "",
        "On a pull request (`pytest -m netperf --netperf-base origin/main`) the stack is also stood up",
        "from the base revision and both are loaded in the same rounds, so a verdict compares the",
        "change with its base on the same runner at the same moment. Without --netperf-base, `base`",
        "is this machine class's stored baseline: NEW until `--netperf-update-baseline` records one.",
        "",
        "Check each request below: path= (and host= for name-based virtual hosts) should be a",
        "route the proxy really serves; errors == 0 fails a gate whose route answers 4xx or 5xx.",
    ]
    if others:
        names = ", ".join(f"{s.name} ({s.image or 'built here'})" for s in others)
        lines += ["", f"Services not gated here (not a known proxy): {names}."]
    lines += [
        '"""',
        "",
        "import pytest",
        "",
        "#: Relative to the pytest rootdir (the folder of pytest.ini).",
        f"COMPOSE_FILE = {json.dumps(plan.compose_path)}",
        "",
        "",
        '@pytest.fixture(scope="module")',
        "def stack(netperf_compose):",
        *_stack_fixture_body(plan),
    ]
    for service in plan.survey.proxies:
        lines += _service_gates(service, plan)
    return "\n".join(lines) + "\n"


def _stack_fixture_body(plan: StarterPlan) -> list[str]:
    """The ``stack`` fixture's docstring and return line; with the Compose profiles the gated
    proxies need turned on (Compose starts a profiled service only then)."""
    needed = plan.survey.profiles_needed
    if not needed:
        return [
            '    """The stack of COMPOSE_FILE, up once for this module and removed after the session."""',
            "    return netperf_compose(COMPOSE_FILE)",
        ]
    value = ",".join(needed)
    return [
        '    """The stack of COMPOSE_FILE, up once for this module and removed after the session, with',
        f"    the Compose profile(s) {value} on: the gated proxies are in them, and Compose starts a",
        '    service of a profile only when it is active."""',
        f"    return netperf_compose(COMPOSE_FILE, env={{{json.dumps('COMPOSE_PROFILES')}: {json.dumps(value)}}})",
    ]


def _service_gates(service: ServiceSurvey, plan: StarterPlan) -> list[str]:
    name, port, ident = service.name, service.gate_port, identifier(service.name)
    tls = service.scheme == "https"
    gated, others = choose_routes(service.routes, port)
    first = gated[0] if gated else None
    first_host = first.host if first else None
    if tls and first_host is None and service.trust.names:
        first_host = service.trust.names[0]  # the name its certificate carries: SNI and Host
    trust = f"{ident.upper()}_TLS" if tls else None
    fixed = _endpoint_text(name, port, first.path if first else "/", first_host, trust=trust)
    if trust is not None:
        lines = ["", "", f"# ----- {name} ({service.image}), HTTPS on port {port} (it listens with TLS only)"]
        lines += _tls_constant(service, plan, trust, first_host)
    else:
        lines = ["", "", f"# ----- {name} ({service.image}), HTTP on port {port}"]
    if len(gated) > 1:
        constant = f"{ident.upper()}_ROUTES"
        sources = ", ".join(dict.fromkeys(r.source.rsplit(":", 1)[0] for r in gated))
        lines += ["", f"#: Routes {name}'s config names ({sources}), gated below:"]
        lines += [f"#:   {route.written} ({route.source})" for route in gated]
        lines += _named_routes(others)
        lines.append(f"{constant} = [")
        named = service.trust.names[0] if tls and service.trust.names else None  # SNI: a name it carries
        lines += [
            f"    pytest.param({_literal(r.path)}, {_literal(r.host or named)}, id={_literal(_id(r))})," for r in gated
        ]
        lines.append("]")
        parametrize = [f'@pytest.mark.parametrize(("path", "host"), {constant})']
        arguments = "netperf, stack, path, host"
        endpoint = _endpoint_text(name, port, "path", "host", literal=False, trust=trust)
    else:
        if first is not None:
            lines += ["", f"#: Route gated below, from {name}'s config ({first.source}): {first.written}"]
        lines += _named_routes(others)
        parametrize, arguments, endpoint = [], "netperf, stack", fixed
    lines += [
        "",
        "",
        '@pytest.mark.netperf("rps >= 0.9x base", "errors == 0")',
        *parametrize,
        f"def test_{ident}_throughput({arguments}):",
        f'    """As many requests per second as {name} answers over 32 connections: the change keeps',
        "    at least 90% of the base's throughput (unchanged stacks stay within 5% on a 2-core",
        '    runner; a lost upstream keep-alive pool or an expensive regex costs far more)."""',
        f"    netperf.measure({endpoint}, connections=32)",
        "",
        "",
        '@pytest.mark.netperf("p90 <= 1.1x base", "errors == 0")',
        *parametrize,
        f"def test_{ident}_latency({arguments}):",
        f'    """A fixed 500 requests/s over 8 connections, well below what {name} can do: the change',
        "    adds at most 10% to the 90th percentile latency. Raise the rate towards your real",
        '    traffic; keep it below the throughput test\'s figure."""',
        f"    netperf.measure({endpoint}, connections=8, rate=500)",
    ]
    if service.proxy in COUNTED_PROXIES:
        lines += [
            "",
            "",
            "@pytest.mark.netperf(",
            f'    "instructions_per_request[{name}] <= 1.01x base",',
            f'    "syscalls_per_request[{name}] <= 1.0x base",',
            '    "errors == 0",',
            ")",
            f"def test_{ident}_cost_per_request(netperf, stack):",
            f'    """What {name} does per request, counted rather than timed: a clone of its container runs',
            "    under valgrind (instructions) and strace (system calls) for exact request counts, so",
            "    the figure does not move with the runner's noise. The change may cost 1% more",
            "    instructions and no more system calls per request; a failure names the functions and",
            '    system calls that changed."""',
            f"    netperf.measure({fixed}, connections=8, rate=500)",
        ]
    if trust is not None:
        lines += _handshake_gate(service, ident, fixed, plan.ca_of(service) is None)
    return lines


def _tls_constant(service: ServiceSurvey, plan: StarterPlan, constant: str, host: str | None) -> list[str]:
    """The ``tls=`` options of a TLS-only proxy's endpoints: trust its CA, or (none known) accept
    its certificate unchecked, with a TODO naming the way to trust one."""
    ca = plan.ca_of(service)
    name = service.name
    sent = f" SNI and Host: {host}." if host else ""
    if ca is None:
        text = (
            f"How the gates speak TLS to {name}.{sent} TODO: no CA certificate was found among the files "
            f"{name} mounts, so its certificate is accepted unchecked (the TLS work measured is the same). "
            "To check it, name the CA that signed it: `netperf init --tls-ca path/to/ca.pem --force`, or "
            '{"ca": "path/to/ca.pem"} here (relative to the Compose file\'s folder).'
        )
        value = f"{{{json.dumps('insecure')}: True}}"
    else:
        where = "named with --tls-ca" if plan.tls_ca else f"the CA certificate found among the files {name} mounts"
        text = (
            f"How the gates speak TLS to {name}: trust {ca} ({where}), relative to the Compose file's "
            f"folder, so the base revision's stack trusts the base revision's CA.{sent}"
        )
        if host is None:
            text += (
                " TODO: no host name was found for its certificate; add host= (a name it carries) to the "
                "endpoints below, or the certificate is checked against the container's address."
            )
        value = f"{{{json.dumps('ca')}: {json.dumps(ca)}}}"
    return ["", *textwrap.wrap(text, 96, initial_indent="#: ", subsequent_indent="#: "), f"{constant} = {value}"]


def _handshake_gate(service: ServiceSurvey, ident: str, endpoint: str, unchecked: bool) -> list[str]:
    """A new connection and TLS handshake per request: counted for the counted proxies (resumed
    and full handshakes), else its throughput; ``unchecked``: the endpoint accepts any certificate."""
    name = service.name
    options = f"{json.dumps('insecure')}: True, " if unchecked else ""
    tls = f"tls={{{options}{json.dumps('resumption')}: resumption}}"
    lines = ["", ""]
    if service.proxy in COUNTED_PROXIES:
        lines += [
            f'@pytest.mark.netperf("instructions_per_request[{name}] <= {HANDSHAKE_INSTRUCTIONS}x base", '
            '"errors == 0")',
            '@pytest.mark.parametrize("resumption", [True, False], ids=["resumed", "full"])',
            f"def test_{ident}_handshake_cost(netperf, stack, resumption):",
            f'    """What {name} does per TLS handshake: a new connection for every request, its',
            "    instructions counted as above. Resumed (as returning clients do): a session cache or",
            "    session tickets turned off makes every handshake full. Full: a larger key (RSA-4096",
            "    instead of ECDSA P-256) or a costlier key exchange shows here, with the functions that",
            "    moved. Its system calls are not gated: how many reads find the client's next flight",
            '    already there depends on timing (8% apart from run to run, docs/budgets.md)."""',
            "    netperf.measure(",
            f"        {endpoint},",
            "        connections=8,",
            "        rate=100,",
            "        new_connection_per_request=True,",
            f"        {tls},",
            "    )",
        ]
    else:
        lines += [
            '@pytest.mark.netperf("rps >= 0.9x base", "errors == 0")',
            '@pytest.mark.parametrize("resumption", [True, False], ids=["resumed", "full"])',
            f"def test_{ident}_handshake_throughput(netperf, stack, resumption):",
            f'    """Handshakes per second {name} answers over 32 connections, a new connection per request:',
            "    resumed (a session cache or tickets turned off makes them full) and full (a larger key shows",
            '    here). The change keeps at least 90% of the base\'s rate."""',
            "    netperf.measure(",
            f"        {endpoint},",
            "        connections=32,",
            "        new_connection_per_request=True,",
            f"        {tls},",
            "    )",
        ]
    return lines


def _endpoint_text(
    name: str, port: int | None, path: str, host: str | None, literal: bool = True, trust: str | None = None
) -> str:
    """``stack.endpoint("edge", port=80, path="/api/", host="api.example.com")`` (``literal``:
    path and host as values, else as the names of the test's arguments); with ``trust`` (the
    name of its TLS options) over HTTPS: ``scheme="https", tls=EDGE_TLS``."""
    over_tls = f', scheme="https", tls={trust}' if trust else ""
    if not literal:
        return f'stack.endpoint("{name}", port={port}, path={path}, host={host}{over_tls})'
    shown_host = f", host={json.dumps(host)}" if host else ""
    return f'stack.endpoint("{name}", port={port}, path={json.dumps(path)}{shown_host}{over_tls})'


def _named_routes(routes: Sequence[Route]) -> list[str]:
    """Comment lines naming the routes of the config that are not gated."""
    if not routes:
        return []
    return ["#: Also in the config, not gated (add a route above to gate it):"] + [
        f"#:   {route.describe()} ({route.source})" for route in routes
    ]


def _literal(text: str | None) -> str:
    """A Python literal for ``text`` (``None`` for None)."""
    return "None" if text is None else json.dumps(text)


def _id(route: Route) -> str:
    """The test id of a route: its path, with the host when it has one."""
    return f"{route.host}{route.path}" if route.host else route.path


def ini_settings() -> dict[str, str]:
    """Keys of the ``[pytest]`` section: stored baselines, shorter rounds, the reports."""
    return {
        "netperf_baseline_dir": ".netperf",
        "netperf_round_duration": "2",
        "netperf_report_dir": REPORT_DIR,
        "netperf_json": f"{REPORT_DIR}/netperf.json",
        "netperf_markdown": f"{REPORT_DIR}/{REPORT_MARKDOWN}",
        "netperf_html": f"{REPORT_DIR}/netperf.html",
    }


INI_COMMENT = (
    "# pytest-netperf (written by `netperf init`): stored baselines in .netperf/ (commit them),\n"
    "# 2 s rounds (5 to 15 per side, more only while a budget is undecided), reports in netperf-report/.\n"
    "# netperf_realtime (the load driver's threads SCHED_FIFO, so a busy shared runner cannot delay its\n"
    "# sends and spoil the latency gates) needs root or CAP_SYS_NICE: the CI jobs turn it on with\n"
    "# --netperf-realtime where the runner allows it; set netperf_realtime = true here if yours always does.\n"
)


def ini_file(settings: Mapping[str, str]) -> str:
    """A whole pytest.ini holding ``settings``."""
    return INI_COMMENT + "[pytest]\n" + "".join(f"{key} = {value}\n" for key, value in settings.items())


def merged_ini(existing: str, settings: Mapping[str, str]) -> str:
    """``existing`` pytest.ini text with the ``settings`` it lacks added to its ``[pytest]``
    section (added at the top when it has none); every other line is kept as it was."""
    present = {m.group(1) for m in re.finditer(r"(?m)^\s*([A-Za-z0-9_]+)\s*=", existing)}
    missing = {key: value for key, value in settings.items() if key not in present}
    if not missing:
        return existing
    added = "".join(f"{key} = {value}\n" for key, value in missing.items())
    header = re.search(r"(?m)^\[pytest\]\s*$\n?", existing)
    if header is None:
        return INI_COMMENT + "[pytest]\n" + added + ("\n" + existing if existing.strip() else "")
    cut = header.end()
    return existing[:cut] + added + existing[cut:]


def _realtime_steps(indent: str, set_env: Callable[[str, str], str]) -> list[str]:
    """Shell lines that let the load driver run SCHED_FIFO (root, or CAP_SYS_NICE on its binary)
    and pass ``--netperf-realtime`` when that works (shared by both CI jobs)."""
    lines = [
        "# The load driver's threads SCHED_FIFO (--netperf-realtime): on a shared runner a busy CPU would",
        "# otherwise delay its sends and spoil the latency gates. It needs root or CAP_SYS_NICE on the binary.",
        'driver="$(readlink -f "$(command -v netperf-driver)")" || true',
        'if [ "$(id -u)" = 0 ]; then as_root=""; else as_root="sudo -n"; fi',
        'if [ -n "$driver" ] && $as_root chrt -f 1 true 2>/dev/null &&',
        '   { [ -z "$as_root" ] || $as_root setcap cap_sys_nice+ep "$driver"; }; then',
        "  " + set_env("PYTEST_ADDOPTS", "$PYTEST_ADDOPTS --netperf-realtime"),
        "else",
        '  echo "netperf: SCHED_FIFO is not allowed here: the gates run without --netperf-realtime"',
        "fi",
    ]
    return [indent + line for line in lines]


def _image_steps(plan: StarterPlan, indent: str, set_env: Callable[[str, str], str]) -> list[str]:
    """Shell lines that choose how the stack's images arrive (shared by both CI jobs);
    ``set_env(name, value)`` is the job's way to hand a variable to its later steps."""
    mapping = plan.survey.image_map()
    roles = sorted({local.split("/", 1)[1].split(":", 1)[0] for local in mapping.values()})
    flags = " ".join(f"--netperf-image {image}={local}" for image, local in sorted(mapping.items()))
    lines = ["# A registry that answers: Compose pulls the file's own images and the gates run them."]
    if roles:
        lines += [
            "# None (an air-gapped runner): the official proxy images are replaced by offline builds",
            "# of the same products (netperf images build: Debian packages, no registry).",
        ]
    lines += [
        'if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"; else COMPOSE=docker-compose; fi',
        f"if $COMPOSE -f {plan.compose_path} pull --quiet; then",
        "  " + set_env("NETPERF_PULL", "1"),
    ]
    if roles:
        lines += [
            "else",
            "  command -v debootstrap >/dev/null ||",
            "    { sudo apt-get update -qq && sudo apt-get install -y -qq debootstrap; }",
            *[f"  netperf images build --only {role}" for role in roles],
            "  " + set_env("PYTEST_ADDOPTS", f"$PYTEST_ADDOPTS {flags}"),
        ]
    lines.append("fi")
    return [indent + line for line in lines]


def github_workflow(plan: StarterPlan) -> str:
    """``.github/workflows/netperf.yml``: base against head on every pull request that touches
    the stack, the report as the job summary and, with the pull request's number, as the
    artifact that :func:`github_comment_workflow` posts. A read-only token is enough, so a
    fork's pull request runs it as any other; adding or removing the accept label re-runs it."""
    watched = [plan.compose_path, *[f"{folder}/**" for folder in plan.watched], f"{plan.tests_dir}/**"]
    github_env: Callable[[str, str], str] = lambda name, value: f'echo "{name}={value}" >> "$GITHUB_ENV"'  # noqa: E731
    image_lines = _image_steps(plan, "          ", github_env)
    return (
        "\n".join(
            [
                "# Performance gate for pull requests that change the stack, written by `netperf init`:",
                "# the pull request's head and its base branch are stood up side by side on the runner and",
                "# measured in the same rounds. A red result blocks the merge where this check is required.",
                "# This workflow only reads: it keeps the reports and the pull request's number as the",
                f"# artifact `{ARTIFACT}`, and {GITHUB_COMMENT_WORKFLOW_FILE} (which may write) posts them as",
                "# one comment, so a fork's pull request, whose token is read-only, gets its comment too.",
                f"# The label {ACCEPT_LABEL} accepts a regression: a failing budget is reported",
                "# ACCEPTED with the label as the reason (adding or removing it runs the gates again).",
                f"name: {GITHUB_WORKFLOW_NAME}",
                "on:",
                "  pull_request:",
                "    types: [opened, synchronize, reopened, labeled, unlabeled]",
                f"    paths: [{', '.join(_quoted(path) for path in watched)}]",
                "",
                "permissions:",
                "  contents: read",
                "",
                "concurrency:            # a newer push or label change replaces a run still measuring",
                "  group: netperf-${{ github.event.pull_request.number }}",
                "  cancel-in-progress: true",
                "",
                "jobs:",
                "  netperf:",
                "    runs-on: ubuntu-latest",
                "    timeout-minutes: 45",
                "    env:",
                f"      NETPERF_PACKAGE: {_quoted(plan.package)}   # a requirement, or a wheel's path or URL",
                "    steps:",
                "      - uses: actions/checkout@v5",
                "        with:",
                "          fetch-depth: 0          # the base revision must be in the clone",
                "      - uses: actions/setup-python@v6",
                "        with:",
                '          python-version: "3.11"',
                "      - name: install pytest-netperf",
                "        run: |",
                '          python -m pip install "$NETPERF_PACKAGE"',
                *_realtime_steps("          ", github_env),
                "      - name: container images",
                "        run: |",
                *image_lines,
                "      - name: base against head",
                "        env:",
                f"          # the label {ACCEPT_LABEL} turns a FAIL into ACCEPTED, with this reason",
                f"          NETPERF_ACCEPT: {ACCEPT_EXPRESSION}",
                "        run: >-",
                f"          python -m pytest -m netperf {plan.tests_dir}",
                '          --netperf-base "origin/${GITHUB_BASE_REF}"',
                f"          --netperf-machine-class {GITHUB_MACHINE_CLASS}",
                "        # the markdown report is also added to the job summary ($GITHUB_STEP_SUMMARY)",
                "      - name: the pull request's number, for the comment",
                "        if: always()",
                "        env:",
                "          PR_NUMBER: ${{ github.event.pull_request.number }}",
                "        run: |",
                f"          mkdir -p {REPORT_DIR}",
                f'          echo "$PR_NUMBER" > {REPORT_DIR}/{PR_NUMBER_FILE}',
                "      - if: always()",
                "        uses: actions/upload-artifact@v6",
                "        with:",
                f"          name: {ARTIFACT}",
                f"          path: {REPORT_DIR}/",
                "          retention-days: 30",
            ]
        )
        + "\n"
    )


def github_comment_workflow(plan: StarterPlan) -> str:
    """``.github/workflows/netperf-comment.yml``: when a run of :func:`github_workflow` ends,
    its artifact's Markdown report becomes the pull request's netperf comment, one per pull
    request: the comment holding :data:`COMMENT_MARKER` is edited, or one is added.

    It runs from the default branch with a token that may write to pull requests and runs
    nothing of the pull request: it reads the artifact, and posts only when the pull request's
    head is still the commit that run measured (so the number in the artifact cannot point
    the comment at another pull request, and an older run cannot replace a newer report)."""
    del plan  # the same for every stack
    script = [
        "const fs = require('fs');",
        "const marker = process.env.NETPERF_MARKER;",
        "const run = context.payload.workflow_run;",
        f"const folder = '{REPORT_DIR}';",
        f"const numberFile = `${{folder}}/{PR_NUMBER_FILE}`;",
        "const number = fs.existsSync(numberFile) ? Number(fs.readFileSync(numberFile, 'utf8').trim()) : NaN;",
        "if (!Number.isInteger(number) || number <= 0) {",
        "  core.setFailed(`no pull request number in the ${process.env.NETPERF_ARTIFACT} artifact`);",
        "  return;",
        "}",
        "const { data: pull } = await github.rest.pulls.get({ ...context.repo, pull_number: number });",
        "if (pull.head.sha !== run.head_sha) {",
        "  core.notice(`#${number} is at ${pull.head.sha} now; this report is of ${run.head_sha}: not posted`);",
        "  return;",
        "}",
        f"const report = `${{folder}}/{REPORT_MARKDOWN}`;",
        "let body = fs.existsSync(report)",
        "  ? fs.readFileSync(report, 'utf8')",
        "  : `### netperf: no report\\n\\n[The run](${run.html_url}) ended (${run.conclusion}) without one.\\n`;",
        "const limit = 65000;  // a comment holds 65,536 characters",
        "if (body.length > limit) {",
        "  body = body.slice(0, body.lastIndexOf('\\n', limit - 300)) +",
        "    `\\n\\n… cut to fit a comment: the whole report is in the artifact of [the run](${run.html_url}).\\n`;",
        "}",
        "if (!body.includes(marker)) body += `\\n${marker}\\n`;",
        "const comments = await github.paginate(github.rest.issues.listComments, {",
        "  ...context.repo, issue_number: number, per_page: 100,",
        "});",
        "const previous = comments.find((c) => c.user && c.user.type === 'Bot' && (c.body || '').includes(marker));",
        "if (previous) {",
        "  await github.rest.issues.updateComment({ ...context.repo, comment_id: previous.id, body });",
        "  core.info(`updated ${previous.html_url}`);",
        "} else {",
        "  const { data: added } = await github.rest.issues.createComment({",
        "    ...context.repo, issue_number: number, body,",
        "  });",
        "  core.info(`added ${added.html_url}`);",
        "}",
    ]
    return (
        "\n".join(
            [
                f"# The pull-request comment of the `{GITHUB_WORKFLOW_NAME}` workflow ({GITHUB_WORKFLOW_FILE}), "
                "written by `netperf init`.",
                "# When a run of it ends, its artifact's report becomes one comment on the pull request,",
                "# edited in place on every later run. This workflow runs from the default branch (merge it",
                "# there first) with a token that may write to pull requests, also for a fork's pull request;",
                "# it runs none of the pull request's code: it only reads the artifact.",
                f"name: {GITHUB_WORKFLOW_NAME} comment",
                "on:",
                "  workflow_run:",
                f"    workflows: [{GITHUB_WORKFLOW_NAME}]",
                "    types: [completed]",
                "",
                "permissions:",
                f"  actions: read          # the artifact of the {GITHUB_WORKFLOW_NAME} run",
                "  pull-requests: write   # the comment",
                "",
                "jobs:",
                "  comment:",
                "    # a cancelled run (replaced by a newer one) or a skipped one leaves the comment as it is",
                "    if: >-",
                "      github.event.workflow_run.event == 'pull_request' &&",
                '      contains(fromJSON(\'["success", "failure"]\'), github.event.workflow_run.conclusion)',
                "    runs-on: ubuntu-latest",
                "    timeout-minutes: 5",
                "    steps:",
                "      - uses: actions/download-artifact@v7",
                "        with:",
                f"          name: {ARTIFACT}",
                f"          path: {REPORT_DIR}",
                "          run-id: ${{ github.event.workflow_run.id }}",
                "          github-token: ${{ github.token }}",
                "      - name: post or update the comment",
                "        uses: actions/github-script@v8",
                "        env:",
                f"          NETPERF_MARKER: {_quoted(COMMENT_MARKER)}",
                f"          NETPERF_ARTIFACT: {ARTIFACT}",
                "        with:",
                "          script: |",
                *[f"            {line}" for line in script],
            ]
        )
        + "\n"
    )


def gitlab_job(plan: StarterPlan) -> str:
    """``ci/netperf.gitlab-ci.yml``: the same gate on merge requests, for ``include:``."""
    export: Callable[[str, str], str] = lambda name, value: f'export {name}="{value}"'  # noqa: E731
    image_lines = _image_steps(plan, "      ", export)
    return (
        "\n".join(
            [
                "# Performance gate for merge requests, written by `netperf init`. Add to .gitlab-ci.yml:",
                "#   include:",
                "#     - local: ci/netperf.gitlab-ci.yml",
                "# Needs a runner with Docker and Python 3.10+ (a shell executor, or docker:dind with both).",
                "netperf:",
                "  stage: test",
                "  rules:",
                '    - if: $CI_PIPELINE_SOURCE == "merge_request_event"',
                "  variables:",
                '    GIT_DEPTH: "0"            # the base revision must be in the clone',
                f"    NETPERF_PACKAGE: {_quoted(plan.package)}",
                "  script:",
                '    - git fetch origin "$CI_MERGE_REQUEST_TARGET_BRANCH_NAME"',
                "    - python3 -m venv .netperf-venv && . .netperf-venv/bin/activate",
                '    - python -m pip install "$NETPERF_PACKAGE"',
                "    - |",
                *_realtime_steps("      ", export),
                "    - |",
                *image_lines,
                f"    # the label {ACCEPT_LABEL} turns a FAIL into ACCEPTED, with this reason (a label",
                "    # added later counts from the next pipeline: GitLab does not run one for a label)",
                f'    - case ",$CI_MERGE_REQUEST_LABELS," in *,{ACCEPT_LABEL},*)'
                f' export NETPERF_ACCEPT="label {ACCEPT_LABEL}";; esac',
                "    - >-",
                f"      python -m pytest -m netperf {plan.tests_dir}",
                '      --netperf-base "origin/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME"',
                f"      --netperf-machine-class {GITLAB_MACHINE_CLASS} --junitxml {REPORT_DIR}/netperf.xml",
                "  artifacts:",
                "    when: always",
                f"    paths: [{REPORT_DIR}/]",
                "    reports:",
                f"      junit: {REPORT_DIR}/netperf.xml",
            ]
        )
        + "\n"
    )


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
