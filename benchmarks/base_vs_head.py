"""The pull-request gate's own figures on the team_gateway example: false FAILs on A/A, detection
of a real regression, and seconds to a verdict, with `--netperf-base`.

A temporary git repository holds examples/team_gateway (Compose file, nginx config, gates)
and examples/pytest.ini committed on `main`. Each run changes the working tree the way a
pull request would and runs the example's gates chosen by ``--tests`` (a pytest ``-k``
expression; by default the throughput gate and the fixed-rate gate, which hold its budgets against
``base``) against `main`, and counts the verdict of every budget against ``base``:

- `aa`: a comment added to nginx/edge.conf (the stack's behaviour is unchanged);
- `no-keepalive`: the upstream keep-alive pool removed from nginx/edge.conf.

``--twin-budget B`` adds a gate ``test_edge_twin`` to the repository: the edge alone in a
closed loop over 64 connections with budget B (``rps >= 0.95x base``), which ``auto`` loads
together with its base twin; choose it with ``--tests twin``.

Usage: python benchmarks/base_vs_head.py [--aa 10] [--regressions 3] [--duration 1] [--warmup 0.5]
       [--design auto,alternate] [--tests "throughput or vs_base"] [--twin-budget "rps >= 0.95x base"] [--notes]
Needs Docker, a Compose implementation and the local images (`netperf images build`).
Prints one line per run (verdict of each budget, the measured ratio and interval, rounds,
seconds) and a summary. Every run is a pytest session that removes its containers.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: A budget judged against the base revision (``rps >= 0.95x base``, ``rps_loss <= 3% vs base``).
AGAINST_BASE = re.compile(r"\bbase\b")
KEEPALIVE = "keepalive 32;"
#: The closed-loop twin gate of --twin-budget: the edge alone against its base twin.
TWIN_GATE = """
import pytest

from test_edge import stack  # noqa: F401  (the module-scoped stack fixture)


@pytest.mark.netperf({budget!r}, "errors == 0")
def test_edge_twin(netperf, stack):
    netperf.measure(stack.endpoint("edge", port=80, path="/api/orders", host="api.example.com"), connections=64)
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", *args], cwd=repo, check=True)


def make_repo(folder: Path, twin_budget: str = "") -> Path:
    """The example as a team's repository with its base on `main` (with the closed-loop twin
    gate when ``twin_budget`` is set); returns the nginx config."""
    shutil.copy(EXAMPLES / "pytest.ini", folder / "pytest.ini")
    shutil.copytree(EXAMPLES / "team_gateway", folder / "team_gateway", ignore=shutil.ignore_patterns("__pycache__"))
    if twin_budget:
        (folder / "team_gateway" / "test_edge_twin.py").write_text(TWIN_GATE.format(budget=twin_budget))
    (folder / ".gitignore").write_text(".netperf/\n.netperf-report/\nresults.json\n__pycache__/\n")
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "base")
    return folder / "team_gateway" / "nginx" / "edge.conf"


def run(repo: Path, args: argparse.Namespace, design: str) -> tuple[dict[str, dict], float]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-m",
        "netperf",
        "-k",
        args.tests,
        "--netperf-base=main",
        f"--netperf-duration={args.duration}",
        f"--netperf-warmup={args.warmup}",
        f"--netperf-design={design}",
        "--netperf-json=results.json",
        "-p",
        "no:cacheprovider",
        "-q",
    ]
    report = repo / "results.json"
    report.unlink(missing_ok=True)
    began = time.monotonic()
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - began
    if not report.exists():
        print(done.stdout[-3000:] + done.stderr[-2000:])
        return {}, seconds
    results = json.loads(report.read_text())
    return {row["budget"]: row for row in results["rows"]}, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--aa", type=int, default=10, help="A/A runs (a comment added)")
    parser.add_argument("--regressions", type=int, default=3, help="runs with upstream keep-alive dropped")
    parser.add_argument("--duration", type=float, default=1.0, help="seconds per round")
    parser.add_argument("--warmup", type=float, default=0.5, help="warmup seconds before each target's first round")
    parser.add_argument(
        "--design", default="auto", help="comma-separated --netperf-design values, taking turns run by run"
    )
    parser.add_argument("--tests", default="throughput or vs_base", help="pytest -k expression choosing the gates")
    parser.add_argument("--notes", action="store_true", help="print each judged row's notes")
    parser.add_argument("--twin-budget", default="", help="add the closed-loop twin gate with this budget")
    args = parser.parse_args()
    designs = [d.strip() for d in args.design.split(",")]
    cells = [(variant, design) for variant in ("aa", "no-keepalive") for design in designs]
    verdicts: dict[tuple[str, str, str], Counter[str]] = {}
    seconds: dict[tuple[str, str], list[float]] = {cell: [] for cell in cells}
    with tempfile.TemporaryDirectory(prefix="netperf-bench-base-") as folder:
        repo = Path(folder)
        config = make_repo(repo, args.twin_budget)
        original = config.read_text()
        plan = [("aa", i) for i in range(args.aa)] + [("no-keepalive", i) for i in range(args.regressions)]
        for variant, index in plan:
            if variant == "aa":
                config.write_text(original + f"\n# pull request {index}: a comment only\n")
            else:
                config.write_text(original.replace(KEEPALIVE, "# upstream keep-alive pool removed"))
            for design in designs:
                rows, took = run(repo, args, design)
                judged = {budget: row for budget, row in rows.items() if AGAINST_BASE.search(budget)}
                if not judged:
                    print(f"{variant:13} {design:12} #{index + 1}: no budget against base; rows: {sorted(rows)}")
                    verdicts.setdefault((variant, design, "(none)"), Counter())["ERROR"] += 1
                    continue
                seconds[(variant, design)].append(took)
                others = ", ".join(f"{b}: {r['verdict']}" for b, r in rows.items() if b not in judged)
                print(f"{variant:13} {design:12} #{index + 1}: {took:5.1f}s  ({others})", flush=True)
                for budget, row in judged.items():
                    verdicts.setdefault((variant, design, budget), Counter())[row["verdict"]] += 1
                    print(
                        f"    {budget:38} {row['verdict']:12} {row['measured']:>8} {row['interval']:>18} "
                        f"{row['rounds']:>2} rounds ({row.get('design', '')})",
                        flush=True,
                    )
                    if args.notes:
                        for note in row.get("notes", []):
                            print(f"      note: {note[:300]}", flush=True)
    print()
    print(
        f"gates {args.tests!r}, rounds of {args.duration:g}s + {args.warmup:g}s warmup per side, "
        "the example's other settings"
    )
    for (variant, design, budget), counts in verdicts.items():
        took = seconds[(variant, design)]
        mean = sum(took) / len(took) if took else float("nan")
        shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        print(
            f"{variant:13} {design:12} {budget:38} {sum(counts.values())} runs: {shown}; {mean:.0f}s per run "
            "(pytest session, both stacks' stand-up included)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
