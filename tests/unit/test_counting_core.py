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


def test_the_cores_are_the_docker_daemons_not_this_process() -> None:
    """A remote daemon (DOCKER_HOST) may have other cores than the machine pytest runs on: a
    cpuset naming a core it lacks would not start."""
    from types import SimpleNamespace

    from docker.errors import APIError

    from pytest_netperf.runtime.counting_clone import NodeCounter
    from pytest_netperf.runtime.resources import usable_cores

    def counter(info: object) -> NodeCounter:
        client = SimpleNamespace(info=info)
        return NodeCounter(client, SimpleNamespace(attrs={}), "lb", "net", 80)

    assert counter(lambda: {"NCPU": 4})._daemon_cores() == [0, 1, 2, 3]

    def refused() -> dict:
        raise APIError("daemon said no")

    assert counter(refused)._daemon_cores() == usable_cores()
    assert counter(lambda: {})._daemon_cores() == usable_cores()
