"""The user hooks (pytest_netperf/plugin/hookspec.py) from a conftest, end to end.

* ``pytest_netperf_machine_class`` decides the folder a ``--netperf-update-baseline`` run
  writes; the command line beats it, it beats the ini key; a bad name is a usage error;
* ``pytest_netperf_json_report`` adds to the JSON report; a hook that raises costs the
  report, not the verdict;
* ``pytest_netperf_row_facts`` adds facts to a series' rows in every report; a name the
  plugin uses keeps the plugin's value; a bad return value fails the test naming the hook.

Measuring runs use the real driver against a loopback echo server, 2 rounds of 0.3 s;
the configure-time checks run in process and measure nothing (a plain test prints the
session's class).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytester_helpers import json_report, netperf_args

from pytest_netperf.runtime.local import LocalEchoServer

FAST = netperf_args(2, 2, "0.3", "0.1", "--netperf-max-lag=100")

GATE = """
import os
import pytest

@pytest.mark.netperf("p50 < 50ms")
def test_echo(netperf):
    url = os.environ["NETPERF_TEST_URL"]
    netperf.compare(url, reference=url, rate=100, connections=2)
"""

#: A plain test that prints the run's machine class (no measurement).
SHOW_CLASS = """
from pytest_netperf.plugin.session import session_of

def test_show(request):
    print("CLASS=" + session_of(request.config).machine_class)
"""

#: The machine class from the environment, as a CI job would name it from its runner label.
CLASS_HOOK = """
import os

def pytest_netperf_machine_class(config, fingerprint, derived):
    assert derived and fingerprint["logical_cores"]
    return os.environ.get("TEST_RUNNER_CLASS")
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*FAST, *args)


def stored_baselines(directory: Path) -> list[Path]:
    """The stored baseline files (one folder per machine class; not the pending results)."""
    return sorted(p for p in directory.glob("*/*.json") if p.parent.name != ".last-run")


# ------------------------------------------------------------------ machine class
def test_the_hook_names_the_folder_the_baseline_is_written_to(
    pytester: pytest.Pytester, echo: LocalEchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CLASS_HOOK)
    pytester.makepyfile(test_gate=GATE)
    monkeypatch.setenv("TEST_RUNNER_CLASS", "ci-linux-large")
    result = run(pytester, "--netperf-update-baseline")
    assert result.ret == 0, result.stdout.str()
    (stored,) = stored_baselines(pytester.path / ".netperf")
    assert stored.parent.name == "ci-linux-large"
    assert json.loads(stored.read_text())["fingerprint"]["machine_class"] == "ci-linux-large"

    judged = run(pytester)  # the next run of the same class reads it
    assert judged.ret == 0, judged.stdout.str()
    assert "no stored baseline" not in judged.stdout.str()


@pytest.mark.parametrize(
    ("env", "args", "ini", "expected"),
    [
        ("ci-small", [], None, "ci-small"),  # the hook beats the derived class
        ("ci-small", ["--netperf-machine-class=from-cli"], None, "from-cli"),  # the command line beats the hook
        ("ci-small", [], "from-ini", "ci-small"),  # the hook beats the ini key
        (None, [], "from-ini", "from-ini"),  # None keeps the ini key's class
    ],
)
def test_precedence_command_line_then_hook_then_ini(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    no_ci: None,
    env: str | None,
    args: list[str],
    ini: str | None,
    expected: str,
) -> None:
    pytester.makeconftest(CLASS_HOOK)
    pytester.makepyfile(test_show=SHOW_CLASS)
    if ini:
        pytester.makeini(f"[pytest]\nnetperf_machine_class = {ini}\n")
    if env:
        monkeypatch.setenv("TEST_RUNNER_CLASS", env)
    else:
        monkeypatch.delenv("TEST_RUNNER_CLASS", raising=False)
    result = pytester.runpytest("-s", "-p", "no:cacheprovider", *args)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines([f"*CLASS={expected}*"])


def test_none_from_the_hook_keeps_the_derived_class(pytester: pytest.Pytester, no_ci: None) -> None:
    pytester.makeconftest(
        """
        seen = []

        def pytest_netperf_machine_class(derived):
            seen.append(derived)
            return None

        def pytest_configure(config):
            config.derived_seen = seen
        """
    )
    pytester.makepyfile(
        test_show="""
        from pytest_netperf.plugin.session import session_of

        def test_show(request):
            assert request.config.derived_seen == [session_of(request.config).machine_class]
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("'CI Runner/large'", "machine class 'CI Runner/large': use 1-64 characters of a-z, 0-9*"),
        ("''", "machine class '': use 1-64 characters*"),
        ("42", "expected a machine class name (a str) or None"),
    ],
)
def test_a_bad_machine_class_from_the_hook_is_a_usage_error(
    pytester: pytest.Pytester, no_ci: None, value: str, problem: str
) -> None:
    pytester.makeconftest(f"def pytest_netperf_machine_class(config):\n    return {value}\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    shown = value.strip("'")
    result.stderr.fnmatch_lines(
        [f"*pytest-netperf: the pytest_netperf_machine_class hook (*conftest.py) returned *{shown}*: {problem}"]
    )
    assert "Traceback" not in result.stderr.str()


# ------------------------------------------------------------------ JSON document
def test_the_json_report_carries_what_the_hook_added(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    pytester.makeconftest(
        """
        def pytest_netperf_json_report(config, document):
            assert document["schema_version"] == 1 and document["rows"]
            document["ci"] = {"runner_label": "linux-large", "tests": len(document["results"])}
        """
    )
    pytester.makepyfile(test_gate=GATE)
    result = run(pytester, "--netperf-json=out.json")
    assert result.ret == 0, result.stdout.str()
    doc = json_report(pytester, "out.json")
    assert doc["ci"] == {"runner_label": "linux-large", "tests": 1}
    assert doc["rows"][0]["verdict"] == "PASS"  # the plugin's own keys are there too


def test_a_json_hook_that_raises_costs_the_report_not_the_verdict(
    pytester: pytest.Pytester, echo: LocalEchoServer
) -> None:
    pytester.makeconftest(
        """
        def pytest_netperf_json_report(document):
            raise RuntimeError("no runner label")
        """
    )
    pytester.makepyfile(test_gate=GATE)
    result = run(pytester, "--netperf-json=out.json", "--netperf-markdown=out.md")
    assert result.ret == 0, result.stdout.str()
    assert not (pytester.path / "out.json").exists()
    assert (pytester.path / "out.md").exists()  # the other reports are written
    result.stdout.fnmatch_lines(
        ["netperf: could not write out.json: *the pytest_netperf_json_report hook raised RuntimeError: no runner label"]
    )


# ------------------------------------------------------------------ row facts
ROW_FACTS_HOOK = """
def pytest_netperf_row_facts(config, item, measurement, series, url, facts):
    if series != "candidate":
        return None
    assert url.startswith("http://") and "request" not in facts
    return {"runner": "linux-large", "seen": f"{item.name} {measurement} {series}", "skipped": None, "count": 3}
"""


def test_a_conftest_fact_shows_with_the_rows_in_every_report(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    pytester.makeconftest(ROW_FACTS_HOOK)
    pytester.makepyfile(test_gate=GATE)
    result = run(pytester, "-v", "--netperf-json=out.json", "--netperf-markdown=out.md", "--netperf-html=out.html")
    assert result.ret == 0, result.stdout.str()
    added = {"runner": "linux-large", "seen": "test_echo default candidate", "count": "3"}

    doc = json_report(pytester, "out.json")
    (row,) = doc["rows"]
    assert {k: row["facts"]["candidate"][k] for k in added} == added
    assert "runner" not in row["facts"]["reference"] and "skipped" not in row["facts"]["candidate"]
    (measurement,) = doc["results"]["test_gate.py::test_echo"]
    assert measurement["series"]["candidate"]["facts"] == added

    assert "runner: linux-large; seen: test_echo default candidate; count: 3" in (pytester.path / "out.md").read_text()
    assert "runner: linux-large" in (pytester.path / "out.html").read_text()
    result.stdout.fnmatch_lines(["facts:", "  test_gate.py::test_echo: candidate: runner: linux-large; seen: *"])


def test_a_fact_name_the_plugin_uses_keeps_the_plugin_value(pytester: pytest.Pytester, echo: LocalEchoServer) -> None:
    pytester.makeconftest(
        """
        def pytest_netperf_row_facts(series):
            return {"request": "mine", "runner": "linux-large"}
        """
    )
    pytester.makepyfile(test_gate=GATE)
    result = run(pytester, "--netperf-json=out.json")
    assert result.ret == 0, result.stdout.str()
    (row,) = json_report(pytester, "out.json")["rows"]
    assert row["facts"]["candidate"]["runner"] == "linux-large"
    assert row["facts"]["candidate"]["request"].startswith("GET http://")
    result.stdout.fnmatch_lines(["*the pytest_netperf_row_facts hook's fact 'request' ('mine') was dropped*"])


BAD_FACTS = {
    "test_list": "['runner']",
    "test_value": "{'runner': ['a']}",
    "test_name": "{'': 'x'}",
}


def test_a_bad_row_facts_return_fails_the_test_naming_the_hook(
    pytester: pytest.Pytester, echo: LocalEchoServer
) -> None:
    bad = ", ".join(f"{name!r}: {value}" for name, value in BAD_FACTS.items())
    pytester.makeconftest(f"BAD = {{{bad}}}\n\ndef pytest_netperf_row_facts(item):\n    return BAD[item.name]\n")
    gates = "\n".join(GATE.replace("def test_echo(", f"def {name}(") for name in BAD_FACTS)
    pytester.makepyfile(test_gate=gates)
    result = run(pytester, "--netperf-json=out.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    assert "Traceback" not in out
    hook = "the pytest_netperf_row_facts hook returned"
    assert f"{hook} ['runner']: expected a mapping of fact names to text, or None" in out
    assert f"{hook} {{'runner': ['a']}}: fact 'runner': expected a str, int or float, got ['a']" in out
    assert f"{hook} {{'': 'x'}}: fact name '': expected a non-empty str" in out
    rows = json_report(pytester, "out.json")["rows"]
    assert [r["verdict"] for r in rows] == ["PASS"] * 3  # the verdicts stand in the report
