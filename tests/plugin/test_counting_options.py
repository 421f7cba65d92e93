"""The counting pass's options at configure time: one repetition is a usage error naming the
option as the user wrote it (the current name and the former ``--netperf-cost-repetitions``)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("option", ["--netperf-counting-repetitions", "--netperf-cost-repetitions"])
def test_one_counting_repetition_is_a_usage_error_saying_it_has_no_spread(
    pytester: pytest.Pytester, no_ci: None, option: str
) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(option, "1")
    result.stderr.fnmatch_lines(["ERROR: pytest-netperf: *-repetitions must be >= 2 (got 1)*no spread*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_two_counting_repetitions_are_accepted(pytester: pytest.Pytester, no_ci: None) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    assert pytester.runpytest("--netperf-counting-repetitions", "2").ret == pytest.ExitCode.OK


def test_a_counted_budget_on_every_node_is_a_collection_error_naming_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_costs="""
        import pytest

        @pytest.mark.netperf("syscalls_per_request[*] <= 1.0x base")
        def test_whole_stack(netperf):
            pass
        """
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting test_costs.py*",
            "*test_costs.py::test_whole_stack: invalid netperf budget*counting pass counts one node*",
        ]
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
