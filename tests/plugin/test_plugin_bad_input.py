"""Bad input to the plugin: errors that name the cause, never a raw traceback; no green
without a gate.

* paths of the wrong kind are usage errors at configure time, naming option and path;
* files that cannot be written at run time (pending results, reports, plots) are a
  warning and a netperf note, never a changed verdict; only the requested
  ``--netperf-update-baseline`` may fail the test;
* marker keywords with bad values are collection errors naming the argument;
* strict mode (``--netperf-strict``, default on under CI): a netperf test that would be
  skipped for a netperf reason (Docker unreachable, an image missing) fails instead;
* a netperf-marked test that never requests the ``netperf`` fixture is an error.

Measuring tests use the real driver against a loopback echo server, 2 rounds of 0.3 s.
Pytester subprocesses inherit the environment, so every test sets or unsets CI itself.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from pytester_helpers import netperf_args

from pytest_netperf.runtime.local import LocalEchoServer

FAST = netperf_args(2, 2, "0.3", "0.1", "--netperf-max-lag=100")

GATE = """
import os
import pytest

@pytest.mark.netperf("p50 < 50ms", "sockets <= 32", "p50 <= 5x baseline")
def test_echo(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], rate=100, connections=2)
"""

# A read-only file system under .netperf/ (as root, chmod would not stop a write):
# creating a file or a directory there fails with EROFS.
READ_ONLY_BASELINES = """
import errno
import os

_BASE = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".netperf")
_open, _mkdir = os.open, os.mkdir


def _inside(path):
    path = os.path.abspath(os.fspath(path))
    return path == _BASE or path.startswith(_BASE + os.sep)


def _refuse(path):
    raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))


def _read_only_open(path, flags, mode=0o777, *, dir_fd=None):
    if flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR) and _inside(path):
        _refuse(path)
    return _open(path, flags, mode, dir_fd=dir_fd)


def _read_only_mkdir(path, mode=0o777, *, dir_fd=None):
    if _inside(path):
        _refuse(path)
    return _mkdir(path, mode, dir_fd=dir_fd)


os.open = _read_only_open
os.mkdir = _read_only_mkdir
"""


def strict_loads(text: str) -> object:
    def reject(constant: str) -> None:
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=reject)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*FAST, *args)


# ------------------------------------------------------------------ paths at configure time
@pytest.mark.parametrize(
    ("make", "args", "message"),
    [
        ("file:perf", ["--netperf-baseline-dir=perf"], "*--netperf-baseline-dir: perf is a file; expected a directory"),
        ("file:.netperf", [], "*--netperf-baseline-dir (default .netperf): */.netperf is a file; expected a directory"),
        (
            "file:f",
            ["--netperf-baseline-dir=f/sub"],
            "*--netperf-baseline-dir: f/sub: its parent */f is not a directory",
        ),
        ("dir:out", ["--netperf-json=out"], "*--netperf-json: out is a directory; expected a file path"),
        ("dir:out", ["--netperf-markdown=out"], "*--netperf-markdown: out is a directory; expected a file path"),
        ("file:f", ["--netperf-markdown=f/x/c.md"], "*--netperf-markdown: f/x/c.md: its parent */f is not a directory"),
        ("file:plots", ["--netperf-report-dir=plots"], "*--netperf-report-dir: plots is a file; expected a directory"),
    ],
)
def test_a_path_of_the_wrong_kind_is_a_usage_error_naming_option_and_path(
    pytester: pytest.Pytester, no_ci: None, make: str, args: list[str], message: str
) -> None:
    kind, name = make.split(":")
    if kind == "dir":
        (pytester.path / name).mkdir()
    else:
        (pytester.path / name).write_text("a file\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*args)
    result.stderr.fnmatch_lines([f"ERROR: pytest-netperf: {message.lstrip('*')}"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_an_ini_path_of_the_wrong_kind_names_the_ini_key(pytester: pytest.Pytester, no_ci: None) -> None:
    (pytester.path / "perf").write_text("a file\n")
    pytester.makeini("[pytest]\nnetperf_baseline_dir = perf\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest()
    result.stderr.fnmatch_lines(
        ["ERROR: pytest-netperf: ini netperf_baseline_dir: */perf is a file; expected a directory"]
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR


# ------------------------------------------------------------------ files at run time
def test_a_read_only_baseline_dir_is_a_warning_not_a_failure(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    pytester.makepyfile(test_gate=GATE)
    steady = ("--netperf-rounds=5", "--netperf-max-rounds=5")  # 2 rounds a side left 'p50 <= 5x' undecided
    assert run(pytester, "--netperf-update-baseline", *steady).ret == 0
    stored = sorted(p.name for p in (pytester.path / ".netperf").rglob("*") if p.is_file())
    pytester.makeconftest(READ_ONLY_BASELINES)

    result = run(pytester, "-W", "error::UserWarning", "-rA", "--netperf-json=out.json", *steady)
    result.stdout.fnmatch_lines(
        [
            "*warnings summary*",
            "*test_gate.py:*: NetperfWriteWarning: netperf: pending results not saved*Read-only file system*",
            "*p50 <= 5x baseline*PASS*",
            "netperf: test_gate.py::test_echo: pending results not saved*Read-only file system*",
            "PASSED test_gate.py::test_echo",
            "*= 1 passed, 1 warning in *",
        ]
    )
    assert result.ret == pytest.ExitCode.OK
    assert sorted(p.name for p in (pytester.path / ".netperf").rglob("*") if p.is_file()) == stored
    doc = strict_loads((pytester.path / "out.json").read_text())
    assert isinstance(doc, dict) and {r["verdict"] for r in doc["rows"]} == {"PASS"}  # report: strict JSON

    update = run(pytester, "--netperf-update-baseline")
    update.stdout.fnmatch_lines(
        ["*--netperf-update-baseline: the baseline was not written: */.netperf/*.json: cannot write*Read-only*"]
    )
    assert update.ret == pytest.ExitCode.TESTS_FAILED  # asked for, so it may fail


def test_a_pending_dir_that_is_a_file_is_a_warning_not_a_failure(
    pytester: pytest.Pytester, echo: LocalEchoServer
) -> None:
    pytester.makepyfile(test_gate=GATE)
    (pytester.path / ".netperf").mkdir()
    (pytester.path / ".netperf" / ".last-run").write_text("in the way\n")
    result = run(pytester, "-rA")
    result.stdout.fnmatch_lines(
        ["netperf: *pending results not saved*.last-run: cannot write (File exists)", "PASSED test_gate.py::test_echo"]
    )
    assert result.ret == pytest.ExitCode.OK


def test_a_noise_floor_that_cannot_be_written_fails_the_calibration_run(
    pytester: pytest.Pytester, echo: LocalEchoServer
) -> None:
    pytester.makepyfile(
        """
        import os
        import pytest

        @pytest.mark.netperf("p50_added <= 5ms")
        def test_aa(netperf):
            url = os.environ["NETPERF_TEST_URL"]
            netperf.compare(url, reference=url, rate=100, connections=2)
        """
    )
    (pytester.path / ".netperf").mkdir()
    pytester.makeconftest(READ_ONLY_BASELINES)
    result = run(pytester, "--netperf-calibrate")
    result.stdout.fnmatch_lines(
        ["netperf: noise floor not written to */.netperf/_noise.json: Read-only file system*", "*1 passed*"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # asked for with --netperf-calibrate and not done


REPORT_PATHS_TAKEN_DURING_THE_RUN = """
import os
import pytest

@pytest.mark.netperf("p50 < 50ms")
def test_echo(netperf):
    netperf.measure(os.environ["NETPERF_TEST_URL"], rate=100, connections=2)
    os.makedirs("out/results.json")  # the report paths stop being writable during the run
    os.makedirs("out/comment.md")
    open("plots", "w").close()
"""


def test_reports_that_cannot_be_written_keep_the_verdict_and_the_summary_line(
    pytester: pytest.Pytester, echo: LocalEchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "out"))  # a directory by then
    pytester.makepyfile(test_gate=REPORT_PATHS_TAKEN_DURING_THE_RUN)
    result = run(
        pytester,
        "-W",
        "error::UserWarning",
        "--netperf-json=out/results.json",
        "--netperf-markdown=out/comment.md",
        "--netperf-report-dir=plots",
    )
    result.stdout.fnmatch_lines(
        [
            "*p50 < 50ms*PASS*",
            "netperf: test_gate.py::test_echo: plots not written to plots:*",
            "netperf: could not write out/results.json: *",
            "netperf: could not write out/comment.md: *",
            "netperf: could not append to $GITHUB_STEP_SUMMARY: *",
            "*warnings summary*",
            "*NetperfWriteWarning: netperf: could not write out/results.json*",
            "*= 1 passed, * warning* in *",
        ]
    )
    assert result.ret == pytest.ExitCode.OK
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_an_update_run_does_not_ask_for_an_update(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    pytester.makepyfile(test_gate=GATE)
    result = run(pytester, "--netperf-update-baseline")
    result.stdout.fnmatch_lines(
        [
            "*p50 <= 5x baseline*NEW*",
            "*no stored baseline: recorded as NEW; this run wrote it to */test_gate.py__test_echo-*.json",
            "netperf: baseline written: */.netperf/*/test_gate.py__test_echo-*.json",
        ]
    )
    assert "update with --netperf-update-baseline" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.OK
    plain = run(pytester, "-p", "no:randomly", "--netperf-baseline-dir=elsewhere")
    plain.stdout.fnmatch_lines(["*no stored baseline: recorded as NEW (update with --netperf-update-baseline)*"])


def test_a_machines_first_run_records_its_baseline_and_the_next_is_judged(
    pytester: pytest.Pytester, echo: LocalEchoServer
) -> None:
    """--netperf-record-missing-baselines: the first run is NEW and writes the baseline, the
    second is judged against it and writes nothing; a failing run never writes one."""
    pytester.makepyfile(test_gate=GATE)
    first = run(pytester, "--netperf-record-missing-baselines")
    first.stdout.fnmatch_lines(
        [
            "*p50 <= 5x baseline*NEW*",
            "*no stored baseline: recorded as NEW; this run wrote it to */test_gate.py__test_echo-*.json",
        ]
    )
    assert first.ret == pytest.ExitCode.OK
    (line,) = [x for x in first.stdout.lines if x.startswith("netperf: baseline written: ")]
    written = Path(line.split(": ", 2)[2])
    stamp = written.stat().st_mtime_ns
    second = run(pytester, "--netperf-record-missing-baselines")
    # judged against the baseline: PASS, or on a busy runner undecided with 2 rounds (green)
    # the table's row (an INCONCLUSIVE one is also named in pytest's warnings summary)
    (judged,) = [
        x for x in second.stdout.lines if re.match(r"(test_gate\.py::test_echo)?\s+p50 <= 5x baseline\s+baseline\s", x)
    ]
    assert " baseline " in judged and (" PASS " in judged or " INCONCLUSIVE " in judged), judged
    assert second.ret == pytest.ExitCode.OK
    assert "baseline written" not in second.stdout.str()
    assert written.stat().st_mtime_ns == stamp
    pytester.makepyfile(test_gate=GATE.replace('"p50 < 50ms"', '"p50 < 1ns"'))
    failing = run(pytester, "--netperf-record-missing-baselines", "--netperf-baseline-dir=fresh")
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    assert "baseline written" not in failing.stdout.str()
    assert [p.parent.name for p in Path(pytester.path, "fresh").glob("*/*.json")] == [".last-run"], "pending only"


# ------------------------------------------------------------------ marker keywords
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ('rounds="three"', "netperf marker argument rounds='three': invalid literal for int()*"),
        ("rounds=0", "netperf marker argument rounds=0: needs at least 2 rounds*"),
        ("rounds=1", "netperf marker argument rounds=1: needs at least 2 rounds*"),
        ("rounds=2.5", "netperf marker argument rounds=2.5: expected an integer"),
        ("duration=0", "netperf marker argument duration=0.0: a round lasts more than 0 s"),
        ("duration=-1", "netperf marker argument duration=-1.0: a round lasts more than 0 s"),
        ('duration="5s"', "netperf marker argument duration='5s': could not convert*"),
        ("warmup=-1", "netperf marker argument warmup=-1.0: a warmup lasts 0 s or more"),
        ("max_rounds=1", "netperf marker argument max_rounds=1: must be >= rounds (2)"),
        (
            'inconclusive="maybe"',
            "netperf marker argument inconclusive='maybe': expected one of change, estimate, fail, warn, pass",
        ),
        ('driver="wrk"', "netperf marker argument driver='wrk': expected one of *"),
    ],
)
def test_a_bad_marker_keyword_is_a_collection_error_naming_it(
    pytester: pytest.Pytester, no_ci: None, kwargs: str, message: str
) -> None:
    pytester.makepyfile(
        test_marker=f"""
        import pytest

        @pytest.mark.netperf("p50 < 1ms", {kwargs})
        def test_gate(netperf):
            pass

        def test_other():
            pass
        """
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        ["*ERROR collecting test_marker.py*", f"*test_marker.py::test_gate: invalid netperf marker: {message}"]
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_max_rounds_alone_caps_the_session_rounds(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    """max_rounds=2 with the session's default 5 rounds first: 2 rounds, not a raw ValueError."""
    pytester.makepyfile(
        """
        import os
        import pytest

        @pytest.mark.netperf("p50 < 50ms", max_rounds=2, duration=0.3, warmup=0.1)
        def test_capped(netperf):
            netperf.measure(os.environ["NETPERF_TEST_URL"], rate=100, connections=2)
        """
    )
    result = pytester.runpytest_subprocess("--netperf-max-lag=100", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*p50 < 50ms*PASS*2*"])
    assert result.ret == pytest.ExitCode.OK


# ------------------------------------------------------------------ no green without a gate
def test_a_marked_test_without_the_fixture_is_an_error(pytester: pytest.Pytester, no_ci: None) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.netperf("p90 < 1ms")
        def test_forgot_the_fixture():
            assert True
        """
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*test_forgot_the_fixture has the netperf marker but does not request the netperf fixture*"
            "add a `netperf` argument*",
            "*1 failed*",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


DOCKER_GATES = """
import pytest

@pytest.mark.netperf("p50 < 50ms")
def test_gateway(netperf, echo_topology):
    netperf.measure(echo_topology.endpoint("echo"))

@pytest.mark.netperf("p50 < 50ms")
def test_own_skip(netperf):
    pytest.skip("the test's own reason")

@pytest.mark.skipif(True, reason="a skip marker")
@pytest.mark.netperf("p50 < 50ms")
def test_skip_marker(netperf):
    pass

def test_not_a_gate(netperf_docker):
    pass
"""
DOCKER_DOWN = "unix:///nonexistent/docker.sock"


@pytest.mark.parametrize(
    ("ci", "args", "strict"),
    [
        (None, [], False),
        ("false", [], False),
        ("true", [], True),
        ("1", [], True),
        ("true", ["--no-netperf-strict"], False),
        (None, ["--netperf-strict"], True),
        ("true", ["-o", "netperf_strict=false"], False),
        (None, ["-o", "netperf_strict=true"], True),
        ("true", ["-o", "netperf_strict=false", "--netperf-strict"], True),
    ],
)
def test_strict_mode_fails_a_gate_that_would_be_skipped_because_docker_is_down(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str | None, args: list[str], strict: bool
) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("DOCKER_HOST", DOCKER_DOWN)
    pytester.makepyfile(test_docker=DOCKER_GATES)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA", *args)
    # Skips for other reasons stay skips, strict or not.
    result.stdout.fnmatch_lines(
        [
            "SKIPPED * test_docker.py:*: the test's own reason",
            "SKIPPED * test_docker.py:*: a skip marker",
            f"SKIPPED * Docker daemon not reachable at {DOCKER_DOWN}*",  # test_not_a_gate: not a netperf test
        ],
        consecutive=False,
    )
    if strict:
        result.stdout.fnmatch_lines(
            [
                "*ERROR at setup of test_gateway*",
                f"*netperf strict mode: test_docker.py::test_gateway would be skipped: Docker daemon not reachable "
                f"at {DOCKER_DOWN}*",
                "*A merge gate must not pass by not running*--no-netperf-strict*",
            ]
        )
        result.assert_outcomes(skipped=3, errors=1)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
    else:
        result.assert_outcomes(skipped=4)
        assert result.ret == pytest.ExitCode.OK


def test_strict_mode_fails_a_gate_whose_image_is_missing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("NETPERF_PULL", raising=False)  # never contact a registry
    monkeypatch.delenv("NETPERF_IMAGE_ECHO", raising=False)
    pytester.makepyfile(test_docker=DOCKER_GATES)
    missing = "pytest-netperf-test/no-such-image:0"
    args = ["-p", "no:cacheprovider", "-rA", f"--netperf-image=echo={missing}"]

    lenient = pytester.runpytest_subprocess(*args)
    lenient.assert_outcomes(skipped=4)
    assert lenient.ret == pytest.ExitCode.OK  # what CI showed as green before

    result = pytester.runpytest_subprocess(*args, "--netperf-strict")
    result.stdout.fnmatch_lines(["*netperf strict mode: test_docker.py::test_gateway would be skipped: *"])
    output = result.stdout.str()
    # With a Docker daemon the image is named; without one, the daemon is.
    assert f"image {missing}" in output or "Docker daemon not reachable" in output, output
    result.assert_outcomes(skipped=3, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# ------------------------------------------------------------------ the base revision, before anything starts
def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=CI", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def test_an_unknown_base_revision_is_a_usage_error_before_collection(pytester: pytest.Pytester) -> None:
    """#27: an unknown ref was reported only after the head stack had started."""
    pytester.makepyfile(test_gate="def test_never_runs():\n    raise AssertionError('collected and run')\n")
    _git(pytester.path, "init", "-q", "-b", "main")
    _git(pytester.path, "add", "-A")
    _git(pytester.path, "commit", "-q", "-m", "base")
    result = pytester.runpytest_subprocess("--netperf-base=origin/nope", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--netperf-base: unknown revision 'origin/nope': no such commit*"])
    assert "collected" not in result.stdout.str()


def test_a_base_revision_outside_a_git_repository_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_gate="def test_never_runs():\n    pass\n")
    result = pytester.runpytest_subprocess("--netperf-base=main", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*is not inside a git repository; --netperf-base needs one*"])


@pytest.mark.parametrize(
    ("ini", "args", "message"),
    [
        ("", ["--netperf-cost-requests=5"], "--netperf-counting-requests must be >= 10 (got 5)"),
        ("netperf_cost_repetitions = 0", [], "ini netperf_cost_repetitions must be >= * (got 0)*"),
        (
            "netperf_cost_repetitions = 0\nnetperf_counting_repetitions = -1",
            [],
            "ini netperf_counting_repetitions must be >= * (got -1)*",
        ),
    ],
)
def test_the_counting_pass_settings_keep_their_former_cost_names(
    pytester: pytest.Pytester, no_ci: None, ini: str, args: list[str], message: str
) -> None:
    """``--netperf-cost-requests`` and the ``netperf_cost_*`` ini keys, their names before the
    counting pass had one name, are still read (the new key wins), and an error names the
    spelling the user wrote."""
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*args)
    result.stderr.fnmatch_lines([f"ERROR: pytest-netperf: {message}"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
