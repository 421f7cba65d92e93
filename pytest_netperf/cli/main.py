"""The ``netperf`` command: starter gates, baselines, Docker cleanup, image builds, calibration.

    netperf baseline show [TEST_ID_OR_GLOB] [--dir .netperf]
    netperf baseline diff [TEST_ID_OR_GLOB] [--dir .netperf]
    netperf baseline update (TEST_ID ... | --all) [--accept-failed] [--dir .netperf]
    netperf baseline prune (--known-from FILE | --collect) [--dry-run] [--dir .netperf]
    netperf clean [--all] [--dry-run]
    netperf images build [--force] [--only ROLE] [--counting]
    netperf calibrate [PYTEST_ARGS ...]
    netperf locust-worker --master HOST:PORT [-f LOCUSTFILE]
    netperf init [COMPOSE_FILE] [--tests-dir DIR] [--package SPEC] [--ci github,gitlab] [--force]

Exit codes: 0 done, 1 a problem was found (corrupt baseline, Docker unavailable, …),
2 usage error. A diff that shows a regression is not a problem: gating is pytest's job.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

from pytest_netperf import defaults
from pytest_netperf.baseline.store import ACCEPT_FAILED_FLAG, BaselineStore
from pytest_netperf.cli import baseline as cli_baseline
from pytest_netperf.cli import init as cli_init
from pytest_netperf.errors import NetperfError
from pytest_netperf.settings import SETTING_HELP
from pytest_netperf.version import __version__

#: pytest exit codes mapped onto ours (pytest: 4 usage error, 0 ok, else a problem).
_PYTEST_USAGE_ERROR = 4


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``netperf`` command."""
    parser = argparse.ArgumentParser(
        prog="netperf", description="pytest-netperf: starter gates, baselines, cleanup, images, calibration."
    )
    parser.add_argument("--version", action="version", version=f"pytest-netperf {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    baseline = commands.add_parser("baseline", help="inspect and update stored baselines")
    _add_baseline_commands(baseline)

    clean = commands.add_parser(
        "clean",
        help="remove the containers, networks, volumes and images of crashed sessions (their process is gone)",
        description="Remove what pytest-netperf sessions left behind in Docker. By default only "
        "resources of sessions on this host whose process is gone; running sessions keep theirs.",
    )
    clean.add_argument(
        "--all",
        action="store_true",
        help="remove every netperf container, network, volume and image, running sessions' too",
    )
    clean.add_argument("--dry-run", action="store_true", help="only list what would be removed")

    worker = commands.add_parser(
        "locust-worker",
        help="serve a pytest session's Locust master from this machine (restarts until SIGTERM)",
        description="Run a Locust worker for pytest-netperf's Locust master and start it again whenever it "
        "exits (master not up yet, session over, crash); SIGTERM or Ctrl-C stops it and everything it started.",
    )
    worker.add_argument("--master", metavar="HOST:PORT", help="the master's address (default: $NETPERF_LOCUST_MASTER)")
    worker.add_argument("-f", "--locustfile", help="the locustfile (default: netperf's GET user)")
    worker.add_argument("--version", action="store_true", help="print the pytest-netperf and Locust versions and exit")

    images = commands.add_parser("images", help="container images for the topologies")
    image_commands = images.add_subparsers(dest="images_command", required=True, metavar="ACTION")
    build = image_commands.add_parser("build", help="build the local images (offline)")
    build.add_argument("--force", action="store_true", help="rebuild even when up to date")
    build.add_argument("--only", metavar="ROLE", help="build only this role (e.g. nginx)")
    build.add_argument(
        "--counting",
        "--cost",  # its name before 0.2
        dest="counting",
        action="store_true",
        help="also build the proxies' counting variants (valgrind, strace) for counted-cost budgets "
        "(else built on first use)",
    )

    cli_init.add_parser(commands)

    calibrate = commands.add_parser(
        "calibrate",
        help="A/A calibration: run 'pytest -m netperf --netperf-calibrate' (noise floor)",
    )
    calibrate.usage = "netperf calibrate [-h] [PYTEST_ARGS ...]"
    calibrate.epilog = "Every further argument is passed to pytest (e.g. -k gateway tests/perf)."
    return parser


def _add_baseline_commands(baseline: argparse.ArgumentParser) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--dir",
        type=Path,
        default=Path(defaults.BASELINE_DIR),
        help=SETTING_HELP["baseline_dir"],
    )
    actions = baseline.add_subparsers(dest="baseline_command", required=True, metavar="ACTION")

    show = actions.add_parser("show", parents=[common], help="table of stored baselines")
    show.add_argument("pattern", nargs="?", metavar="TEST_ID_OR_GLOB")

    diff = actions.add_parser("diff", parents=[common], help="stored baseline vs the last run, per metric")
    diff.add_argument("pattern", nargs="?", metavar="TEST_ID_OR_GLOB")

    update = actions.add_parser("update", parents=[common], help="make the last run's results the stored baselines")
    update.add_argument("test_ids", nargs="*", metavar="TEST_ID")
    update.add_argument("--all", action="store_true", help="promote every pending result")
    update.add_argument(
        ACCEPT_FAILED_FLAG,
        dest="accept_failed",
        action="store_true",
        help="also promote the results of a run whose budgets FAILed or were INVALID (refused otherwise)",
    )

    prune = actions.add_parser("prune", parents=[common], help="remove baselines of tests that no longer exist")
    source = prune.add_mutually_exclusive_group(required=True)
    source.add_argument("--known-from", type=Path, metavar="FILE", help="file with one known test id per line")
    source.add_argument(
        "--collect",
        action="store_true",
        help="known tests = 'python -m pytest --collect-only -q -m netperf' in this directory",
    )
    prune.add_argument("--dry-run", action="store_true", help="only list what would go")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``netperf`` console script; returns the exit code."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and args.command != "calibrate":
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse: 2 on usage errors, 0 after --help
        return int(exc.code or 0)
    if args.command == "baseline":
        return _run_baseline(args)
    if args.command == "clean":
        return run_clean(everything=args.all, dry_run=args.dry_run)
    if args.command == "images":
        return run_images_build(args.force, args.only, args.counting)
    if args.command == "init":
        return cli_init.run_init(
            args.compose_file, args.tests_dir, args.package, args.ci, args.force, tls_ca=args.tls_ca
        )
    if args.command == "locust-worker":
        return run_locust_worker(args.master, args.locustfile, args.version)
    return run_calibrate(extra[1:] if extra[:1] == ["--"] else extra)


def _run_baseline(args: argparse.Namespace) -> int:
    store = BaselineStore(args.dir)
    action = args.baseline_command
    if action == "show":
        return cli_baseline.show(store, args.pattern)
    if action == "diff":
        return cli_baseline.diff(store, args.pattern)
    if action == "update":
        return cli_baseline.update(store, args.test_ids, args.all, accept_failed=args.accept_failed)
    return cli_baseline.prune(store, args.known_from, args.collect, args.dry_run)


def run_locust_worker(master: Optional[str], locustfile: Optional[str], version: bool = False) -> int:
    """``netperf locust-worker`` (:mod:`pytest_netperf.drivers.locust.worker_service`)."""
    from pytest_netperf.drivers.locust.worker_service import worker_main

    if version:
        import importlib.metadata

        try:
            locust_version = importlib.metadata.version("locust")
        except importlib.metadata.PackageNotFoundError:
            return _fail("locust-worker: Locust is not installed (pip install 'locust>=2.20')")
        print(f"netperf locust-worker {__version__} (locust {locust_version})")
        return 0
    return worker_main(master, locustfile)


def run_clean(everything: bool = False, dry_run: bool = False) -> int:
    """Remove crashed sessions' containers, networks, volumes and images (all of ours with ``everything``),
    then the empty weighted cgroups such sessions left (``runtime.cpu_priority``).

    A session counts as crashed when its labels name this host and a pid that no longer
    runs (``runtime.cleanup.staleness``); a running session's topology stays, because its
    driver may still be sending to those addresses. ``dry_run`` lists without removing.
    """
    try:
        from pytest_netperf.runtime.cleanup import clean, count_text
    except ImportError as exc:
        return _fail(f"clean: the Docker runtime is not available in this installation ({exc})")
    try:
        result = clean(everything=everything, dry_run=dry_run, say=print)
    except NetperfError as exc:
        return _fail(f"clean: {exc}")
    except Exception as exc:  # docker SDK errors when the daemon is absent or refuses
        if _is_docker_error(exc):
            return _fail(f"clean: Docker is not available: {exc}")
        raise
    for line in result.kept_lines():
        print(line)
    if result.kept:
        print("netperf: `netperf clean --all` also removes what was kept (stops running sessions' topologies)")
    if dry_run:
        print(f"netperf: would remove {count_text(result.removed)} (dry run: nothing removed)")
    else:
        print(f"netperf: removed {count_text(result.removed)}")
        from pytest_netperf.runtime.cpu_priority import remove_stale_groups

        for group in remove_stale_groups():  # empty now that their sessions' containers are gone
            print(f"netperf: removed the weighted cgroup {group} of a session that ended without it")
    return 0


def run_images_build(force: bool, only: Optional[str], cost: bool = False) -> int:
    """Build the local images (``images.build.build_images``)."""
    try:
        from pytest_netperf.images.build import build_images
    except ImportError as exc:
        return _fail(f"images build: the image builder is not available ({exc})")
    try:
        built = build_images(force=force, only=[only] if only else None, progress=print, cost=cost)
    except ValueError as exc:  # an unknown role
        _fail(f"images build: {exc}")
        return 2
    except NetperfError as exc:
        return _fail(f"images build: {exc}")
    except Exception as exc:
        if _is_docker_error(exc):
            return _fail(f"images build: Docker is not available: {exc}")
        raise
    for role, tag in sorted((built or {}).items()):
        print(f"{role}: {tag}")
    return 0


def run_calibrate(pytest_args: Sequence[str]) -> int:
    """Run the A/A calibration through pytest; 0 when pytest succeeded."""
    argv = [sys.executable, "-m", "pytest", "-m", "netperf", "--netperf-calibrate", *pytest_args]
    print("netperf: running " + " ".join(argv[1:]), flush=True)
    code = subprocess.call(argv)
    if code == _PYTEST_USAGE_ERROR:
        return 2
    return 0 if code == 0 else 1


def _is_docker_error(exc: Exception) -> bool:
    try:
        from docker.errors import DockerException
    except ImportError:
        return False
    return isinstance(exc, DockerException)


def _fail(message: str) -> int:
    print(f"netperf: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
