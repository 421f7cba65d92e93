"""The one core a counting clone runs on (runtime/counting_clone.py ``counting_core``)."""

from __future__ import annotations

from pytest_netperf.runtime.counting_clone import counting_core


def test_clones_take_the_machines_cores_in_turn() -> None:
    """Two tools counting side by side (instructions beside system calls) get different cores."""
    assert [counting_core("", [0, 1], serial) for serial in range(1, 5)] == ["1", "0", "1", "0"]


def test_a_node_pinned_by_its_compose_file_is_counted_on_one_of_its_own_cores() -> None:
    assert {counting_core("2-3", [0, 1, 2, 3], serial) for serial in range(4)} == {"2", "3"}
    assert counting_core("5", [0, 1], 7) == "5"


def test_one_core_is_always_chosen() -> None:
    """A cpuset Docker wrote in a form this does not read, or no usable core known: still one core."""
    assert counting_core("bogus", [3], 1) == "3"
    assert counting_core("", [], 1) == "0"
