"""The ``netperf`` command: usage errors, baseline show/diff/update/prune, Docker commands."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from netperf_rounds import make_round, make_rounds

from pytest_netperf import __version__
from pytest_netperf.baseline.machine import machine_class
from pytest_netperf.baseline.store import Baseline, BaselineStore, SeriesRecord
from pytest_netperf.cli.main import main

GW = "tests/test_gw.py::test_overhead[kong-c100]"
MODES = "tests/test_modes.py::test_latency[dns]"
FINGERPRINT = {
    "cpu_model": "Example CPU",
    "logical_cores": 2,
    "kernel": "6.1.0-18-amd64",
    "docker_version": "20.10.24",
    "image_digests": {},
    "plugin_version": "0.1.0",
    "driver_version": "0.1.0",
}


def baseline(test_id: str, rps: float = 10_000.0, median_ns: float = 500_000.0, **fingerprint: object) -> Baseline:
    series = {
        "candidate": SeriesRecord(make_rounds(5, rps=rps, median_ns=median_ns), "c=100 closed 5s", "rust", "host")
    }
    return Baseline.new(test_id, series, fingerprint={**FINGERPRINT, **fingerprint})


@pytest.fixture
def store(tmp_path: Path) -> BaselineStore:
    return BaselineStore(tmp_path / ".netperf", machine_class(FINGERPRINT))


def run(capsys: pytest.CaptureFixture[str], store: BaselineStore, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--dir", str(store.directory)])
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ usage
@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["baseline"],
        ["baseline", "show", "a", "b"],
        ["baseline", "prune"],
        ["baseline", "prune", "--collect", "--known-from", "x"],
        ["clean", "extra"],
        ["images"],
        ["nonsense"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "usage: netperf" in capsys.readouterr().err


def test_update_needs_ids_or_all_but_not_both(store: BaselineStore, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, store, "baseline", "update")[0] == 2
    code, _, err = run(capsys, store, "baseline", "update", GW, "--all")
    assert code == 2 and "not both" in err


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"pytest-netperf {__version__}"
    assert main(["baseline", "prune", "--help"]) == 0
    assert "--known-from" in capsys.readouterr().out


# ------------------------------------------------------------------ show
def test_show_without_baselines(store: BaselineStore, capsys: pytest.CaptureFixture[str]) -> None:
    store.directory.mkdir()
    code, out, _ = run(capsys, store, "baseline", "show")
    assert code == 0 and out.strip() == f"no baselines in {store.directory}"


@pytest.mark.parametrize("command", ["show", "diff"])
@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_baseline_dir_that_is_missing_or_a_file_is_an_error(
    store: BaselineStore, capsys: pytest.CaptureFixture[str], command: str, kind: str
) -> None:
    if kind == "file":
        store.directory.write_text("not a directory\n")
    code, out, err = run(capsys, store, "baseline", command)
    assert code == 1 and out == ""
    problem = "not a directory" if kind == "file" else "no such baseline directory"
    assert err.strip() == f"netperf: {store.directory}: {problem}" + (
        " (expected the baseline directory)" if kind == "file" else ""
    )


def test_show_lists_baselines_with_medians(store: BaselineStore, capsys: pytest.CaptureFixture[str]) -> None:
    store.save(baseline(GW, rps=12_000.0, median_ns=800_000.0))
    store.save(baseline(MODES))
    code, out, _ = run(capsys, store, "baseline", "show")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:7] == ["test", "machine", "class", "series", "created", "(UTC)", "commit"]
    gw_line = next(line for line in lines if GW in line)
    assert machine_class(FINGERPRINT) in gw_line and "candidate" in gw_line
    assert " 5 " in gw_line and "12,000 rps" in gw_line
    assert gw_line.endswith(" 0%")
    assert lines[-1].startswith("2 baseline(s) in")


def test_show_filters_by_exact_id_and_glob(store: BaselineStore, capsys: pytest.CaptureFixture[str]) -> None:
    store.save(baseline(GW))
    store.save(baseline(MODES))
    _, out, _ = run(capsys, store, "baseline", "show", GW)  # brackets are not a glob here
    assert GW in out and MODES not in out
    _, out, _ = run(capsys, store, "baseline", "show", "tests/test_modes.py::*")
    assert MODES in out and GW not in out
    code, out, _ = run(capsys, store, "baseline", "show", "nothing*")
    assert code == 0 and "no baselines matching 'nothing*'" in out


def test_show_reports_a_corrupt_file_and_exits_1(store: BaselineStore, capsys: pytest.CaptureFixture[str]) -> None:
    store.save(baseline(GW))
    broken = store.directory / "broken.json"
    broken.write_text('{"format_version": 9}')
    code, out, err = run(capsys, store, "baseline", "show")
    assert code == 1
    assert GW in out
    assert f"netperf: {broken}: format_version 9 is newer than this pytest-netperf reads (1)" in err


# ------------------------------------------------------------------ diff
def test_diff_shows_ratios_and_machine_differences(store: BaselineStore, capsys: pytest.CaptureFixture[str]) -> None:
    store.save(baseline(GW, rps=10_000.0, median_ns=500_000.0))
    store.save_pending(baseline(GW, rps=9_000.0, median_ns=600_000.0, kernel="6.1.0-21-amd64"))
    store.save_pending(baseline(MODES))
    code, out, _ = run(capsys, store, "baseline", "diff")
    assert code == 0  # a regression is not an error of the command
    assert "machine differs: kernel: 6.1.0-18-amd64 -> 6.1.0-21-amd64" in out
    rps_line = next(line for line in out.splitlines() if line.split()[1:2] == ["rps"])
    assert "10,000 rps" in rps_line and "9,000 rps" in rps_line
    assert "0.900" in rps_line and "-10.0% (worse)" in rps_line
    p50_line = next(line for line in out.splitlines() if line.split()[1:2] == ["p50"])
    assert "1.200" in p50_line and "+20.0% (worse)" in p50_line
    assert f"{MODES}\n  NEW: no stored baseline" in out


def test_diff_flags_errors_that_appeared(store: BaselineStore, capsys: pytest.CaptureFixture[str]) -> None:
    store.save(baseline(GW))
    errors = [make_round(errors=500, seed=i) for i in range(5)]
    store.save_pending(Baseline.new(GW, {"candidate": SeriesRecord(errors)}, FINGERPRINT))
    code, out, _ = run(capsys, store, "baseline", "diff")
    line = next(line for line in out.splitlines() if line.split()[1:2] == ["error_rate"])
    assert code == 0 and " 0% " in line and " 1% " in line and "from 0 (worse)" in line


def test_diff_without_pending_results(store: BaselineStore, capsys: pytest.CaptureFixture[str]) -> None:
    store.save(baseline(GW))
    code, out, _ = run(capsys, store, "baseline", "diff")
    assert code == 0 and "no pending results" in out


def test_diff_with_a_corrupt_pending_file_exits_1(store: BaselineStore, capsys: pytest.CaptureFixture[str]) -> None:
    store.save_pending(baseline(GW))
    (store.pending_directory / "x.json").write_text("not json")
    code, out, err = run(capsys, store, "baseline", "diff")
    assert code == 1 and GW in out and "x.json: corrupt JSON" in err


# ------------------------------------------------------------------ update
def test_update_promotes_named_and_all(store: BaselineStore, capsys: pytest.CaptureFixture[str]) -> None:
    store.save_pending(baseline(GW))
    store.save_pending(baseline(MODES))
    code, out, _ = run(capsys, store, "baseline", "update", GW)
    assert code == 0 and f"updated {store.path_for(GW, machine_class(FINGERPRINT))}" in out
    assert store.load(GW) is not None and store.load(MODES) is None
    code, out, _ = run(capsys, store, "baseline", "update", "--all")
    assert code == 0 and "2 baseline(s) updated" in out
    assert store.load(MODES) is not None


def test_update_without_pending_results_exits_1(store: BaselineStore, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, store, "baseline", "update", GW)
    assert code == 1 and f"no pending results for {GW!r}" in err
    code, out, _ = run(capsys, store, "baseline", "update", "--all")
    assert code == 1 and "nothing to promote" in out


# ------------------------------------------------------------------ prune
def test_prune_from_a_known_list(store: BaselineStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keep, gone = store.save(baseline(GW)), store.save(baseline(MODES))
    known = tmp_path / "known.txt"
    known.write_text(f"# collected tests\n{GW}\n\n")

    code, out, _ = run(capsys, store, "baseline", "prune", "--known-from", str(known), "--dry-run")
    assert code == 0 and f"would remove {gone}" in out and gone.exists()

    code, out, _ = run(capsys, store, "baseline", "prune", "--known-from", str(known))
    assert code == 0 and f"removed {gone}" in out
    assert keep.exists() and not gone.exists()


def test_prune_refuses_an_empty_known_list(
    store: BaselineStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = store.save(baseline(GW))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n# nothing\n")
    code, _, err = run(capsys, store, "baseline", "prune", "--known-from", str(empty))
    assert code == 1 and "refusing" in err and kept.exists()
    code, _, err = run(capsys, store, "baseline", "prune", "--known-from", str(tmp_path / "missing.txt"))
    assert code == 1 and "missing.txt" in err


PROJECT_CONFTEST = """
def pytest_configure(config):
    config.addinivalue_line("markers", "netperf: a netperf gate")
"""
PROJECT_TESTS = """
import pytest

@pytest.mark.netperf
def test_kept():
    pass

@pytest.mark.netperf
@pytest.mark.parametrize("mode", ["dns", "link"])
def test_modes(mode):
    pass

def test_not_a_gate():
    pass
"""


def test_prune_collects_the_netperf_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "conftest.py").write_text(PROJECT_CONFTEST)
    (project / "tests" / "test_gates.py").write_text(textwrap.dedent(PROJECT_TESTS))
    (project / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    store = BaselineStore(project / ".netperf")
    kept = [store.save(baseline(i)) for i in ("tests/test_gates.py::test_kept", "tests/test_gates.py::test_modes[dns]")]
    gone = [
        store.save(baseline(i)) for i in ("tests/test_gates.py::test_removed", "tests/test_gates.py::test_not_a_gate")
    ]
    monkeypatch.chdir(project)

    code, out, err = run(capsys, store, "baseline", "prune", "--collect")
    assert code == 0, err
    assert all(p.exists() for p in kept)
    assert not any(p.exists() for p in gone)
    assert "2 file(s) removed; 3 known test id(s)" in out


def test_prune_collect_refuses_when_nothing_is_collected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = BaselineStore(tmp_path / ".netperf")
    kept = store.save(baseline(GW))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, store, "baseline", "prune", "--collect")
    assert code == 1 and "collected no netperf tests" in err and kept.exists()


# ------------------------------------------------------------------ Docker commands
@pytest.mark.parametrize("argv", [["clean"], ["images", "build", "--only", "nginx"]])
def test_docker_commands_explain_an_unreachable_daemon(
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"netperf: {argv[0]}")
    assert "no-docker.sock" in err or "not available" in err


def test_images_build_of_an_unknown_role_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["images", "build", "--only", "no-such-role"]) == 2
    assert "no-such-role" in capsys.readouterr().err


# ------------------------------------------------------------------ calibrate
CALIBRATE_CONFTEST = """
import pytest

def pytest_addoption(parser):
    parser.addoption("--netperf-calibrate", action="store_true")

def pytest_configure(config):
    config.addinivalue_line("markers", "netperf: a netperf gate")
"""
CALIBRATE_TESTS = """
import pytest

@pytest.mark.netperf
def test_gate(request):
    assert request.config.getoption("--netperf-calibrate")

@pytest.mark.netperf
def test_broken():
    assert False

def test_unmarked():
    assert False
"""


def test_calibrate_runs_pytest_with_the_calibrate_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "conftest.py").write_text(CALIBRATE_CONFTEST)
    (tmp_path / "test_cal.py").write_text(CALIBRATE_TESTS)
    monkeypatch.chdir(tmp_path)
    # The installed plugin is disabled so that only this conftest defines the flag.
    base = ["calibrate", "-p", "no:netperf", "-p", "no:cacheprovider"]
    assert main([*base, "-k", "test_gate"]) == 0
    assert main([*base, "--", "-k", "test_broken"]) == 1
    assert main([*base, "--no-such-pytest-option"]) == 2
    out = capsys.readouterr().out
    assert "running -m pytest -m netperf --netperf-calibrate -p no:netperf" in out
