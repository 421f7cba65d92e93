"""Plugin behaviour at collection and configuration time (no measurement needed)."""

from __future__ import annotations

import pytest


def test_marker_is_registered_under_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.netperf("p90 < 1ms", "rps_loss <= 10%")
        def test_gate():
            pass
        """
    )
    result = pytester.runpytest("--strict-markers", "-m", "netperf", "--co", "-q")
    result.stdout.fnmatch_lines(["*test_gate*", "*1 test collected*"])
    assert result.ret == 0


def test_markers_help_lists_netperf(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.netperf(*budgets*"])


def test_malformed_budget_fails_collection_naming_test_and_text(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.netperf("p90 < 5")
        def test_missing_unit():
            pass

        def test_other():
            pass
        """
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting test_bad.py*",
            "*test_bad.py::test_missing_unit: invalid netperf budget*'p90 < 5'*",
        ]
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_malformed_budget_in_parametrize_marks_names_the_param_id(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_params="""
        import pytest

        @pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.netperf("rps_loss <= 10ms"))])
        def test_p(x):
            pass
        """
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*test_params.py::test_p[[]2[]]: invalid netperf budget*rps_loss <= 10ms*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_unknown_marker_keyword_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.netperf("p90 < 1ms", drvier="rust")
        def test_typo():
            pass
        """
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*test_typo*unknown netperf marker argument(s): drvier*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_budget_objects_are_accepted(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from pytest_netperf.budget.grammar import Budget

        @pytest.mark.netperf(Budget.rps_loss(max_pct=10), Budget.latency("p90", "<", "1ms"))
        def test_objects():
            pass
        """
    )
    result = pytester.runpytest("--co", "-q")
    assert result.ret == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--netperf-inconclusive=maybe"], "*pytest-netperf:*inconclusive*maybe*"),
        (["--netperf-confidence=1.5"], "*pytest-netperf:*confidence*"),
        (["--netperf-rounds=zero"], "*pytest-netperf:*rounds*"),
        (["--netperf-image=nginx"], "*--netperf-image expects ROLE=IMAGE*'nginx'*"),
    ],
)
def test_bad_option_values_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(*args)
    result.stderr.fnmatch_lines([message])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_ini_settings_are_read(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        """
        [pytest]
        netperf_inconclusive = sometimes
        """
    )
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest()
    result.stderr.fnmatch_lines(["*pytest-netperf:*inconclusive*sometimes*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_fixture_without_marker_is_an_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_no_marker(netperf):
            pass
        """
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*uses the netperf fixture without @pytest.mark.netperf*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_marker_without_measurement_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.netperf("p90 < 1ms")
        def test_nothing(netperf):
            pass
        """
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*has the netperf marker but measured nothing*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_reference_budget_with_measure_explains_compare(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.netperf("rps_loss <= 10%")
        def test_needs_reference(netperf):
            netperf.measure("http://127.0.0.1:9/")
        """
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*compares with a reference: use netperf.compare(candidate, reference)*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
