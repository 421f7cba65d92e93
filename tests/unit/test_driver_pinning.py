"""The load driver's cores: the ``driver_cpus`` setting, its resolution, a core that cannot be
pinned to, and the gate's facts. ``auto`` is tested with :func:`default_split` on a given core list.

Real pinned children (``sleep`` and ``sh`` started pinned) are in
tests/integration/test_driver_pinning_children.py.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Optional

import pytest

from pytest_netperf import defaults
from pytest_netperf.drivers.locust.processes import ProcessGroups
from pytest_netperf.drivers.rust import RustDriver
from pytest_netperf.errors import DriverError, NetperfError
from pytest_netperf.measure.gate import DRIVER_CORES_FACT, series_facts
from pytest_netperf.runtime.commands import LocalRunner
from pytest_netperf.runtime.compose.launcher import ComposeLauncher
from pytest_netperf.runtime.compose.session import ComposeStacks
from pytest_netperf.runtime.endpoints import Endpoint
from pytest_netperf.runtime.process_guard import check_cores
from pytest_netperf.runtime.resources import (
    CoreSplit,
    containers_split,
    default_split,
    split_around_driver,
    usable_cores,
)
from pytest_netperf.settings import SettingError, Settings, check_driver_cpus, resolve_driver_cpus

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning needs Linux")

SLEEP = shutil.which("sleep") or "/bin/sleep"


# ------------------------------------------------------------------ the setting
def test_driver_cpus_defaults_to_auto() -> None:
    assert Settings().driver_cpus == defaults.DRIVER_CPUS == "auto"


@pytest.mark.parametrize("text", ["auto", "all", "0", "0-1", "0,2", "0-1,4-5", "AUTO", " 1 "])
def test_driver_cpus_accepts_auto_all_and_cpusets(text: str) -> None:
    assert Settings.from_mapping({"driver_cpus": text}).driver_cpus == text.strip().lower()


@pytest.mark.parametrize("text", ["nonsense", "0-", "-1", "1.5", "0;1", "cores 0-1", "none"])
def test_bad_driver_cpus_is_an_error_naming_the_setting_and_the_value(text: str) -> None:
    with pytest.raises(SettingError) as info:
        Settings.from_mapping({"driver-cpus": text})
    assert info.value.setting == "driver_cpus"
    assert str(info.value) == (
        f"driver_cpus must be auto, all or a cpuset such as 0-1 or 0,2 (got {text.strip().lower()!r})"
    )


def test_check_driver_cpus_takes_only_normalised_text() -> None:
    check_driver_cpus("0-3")
    with pytest.raises(SettingError, match="got 'ALL'"):
        check_driver_cpus("ALL")  # Settings lower-cases; the checker itself does not guess


# ------------------------------------------------------------------ resolution
def test_auto_splits_only_from_four_cores() -> None:
    assert resolve_driver_cpus("auto", [0, 1]) is None
    assert resolve_driver_cpus("auto", [0, 1, 2]) is None
    assert default_split([0, 1]) is None
    assert resolve_driver_cpus("auto", [0, 1, 2, 3]) == "0"
    assert resolve_driver_cpus("auto", list(range(8))) == "0-1"
    assert resolve_driver_cpus("auto", [2, 3, 6, 7, 8, 9, 10, 11]) == "2-3"


def test_all_never_pins_and_a_cpuset_is_normalised() -> None:
    assert resolve_driver_cpus("all", list(range(16))) is None
    assert resolve_driver_cpus("1,0,2", [0, 1, 2, 3]) == "0-2"
    assert resolve_driver_cpus("3", [0, 1, 2, 3]) == "3"


def test_a_cpuset_naming_unusable_cores_is_an_error_naming_them() -> None:
    with pytest.raises(SettingError, match=r"driver_cpus '0-5': core\(s\) 4-5 not available to this process"):
        resolve_driver_cpus("0-5", [0, 1, 2, 3])


def test_a_pinned_driver_leaves_the_system_under_test_the_other_cores() -> None:
    assert split_around_driver("0", [0, 1]) == CoreSplit(driver="0", sut="1")
    assert split_around_driver("0-1", [0, 1, 2, 3]) == CoreSplit(driver="0-1", sut="2-3")
    assert split_around_driver("2", [0, 1, 2, 3]) == CoreSplit(driver="2", sut="0-1,3")
    assert split_around_driver(None, [0, 1]) is None  # not pinned: nobody is
    assert split_around_driver("0-1", [0, 1]) is None  # the driver has every core: the nodes share them
    # auto keeps default_split's layout
    split = default_split([0, 1, 2, 3])
    assert split is not None and split_around_driver(resolve_driver_cpus("auto", [0, 1, 2, 3]), [0, 1, 2, 3]) == split


@pytest.mark.parametrize(
    ("driver_cpus", "cores", "split"),
    [
        ("0", [0, 1], CoreSplit(driver="0", sut="1")),  # pinned on 2 cores: the containers keep off core 0
        ("2", [0, 1, 2, 3], CoreSplit(driver="2", sut="0-1,3")),
        ("all", [0, 1, 2, 3], None),  # not pinned: the containers share every core with the driver
        ("auto", [0, 1], None),  # auto below 4 cores: everything shares
        ("auto", list(range(8)), CoreSplit(driver="0-1", sut="2-7")),
    ],
)
def test_the_containers_split_is_the_one_around_the_sessions_driver(
    driver_cpus: str, cores: list[int], split: Optional[CoreSplit]
) -> None:
    assert containers_split(resolve_driver_cpus(driver_cpus, cores), cores) == split


def test_without_a_netperf_session_the_containers_get_the_default_split() -> None:
    assert containers_split("auto", [0, 1, 2, 3]) == default_split([0, 1, 2, 3]) == CoreSplit(driver="0", sut="1-3")
    assert containers_split("auto", [0, 1]) is None


def test_compose_stacks_take_the_split_they_are_given_none_included() -> None:
    """netperf_compose hands the topologies' split down: a driver that is not pinned (None)
    must not turn into default_split's on the way."""
    pinned = CoreSplit(driver="0", sut="1")
    for given in (pinned, None):
        stacks = ComposeStacks(None, "sid", Path(), find=lambda: None, split=given)  # type: ignore[arg-type,return-value]
        assert stacks.launcher.split == given
    assert ComposeLauncher(None, None, "sid").split == default_split()  # type: ignore[arg-type]


def test_auto_on_this_machine_follows_default_split() -> None:
    split = default_split()
    assert resolve_driver_cpus("auto") == (split.driver if split is not None else None)


# ------------------------------------------------------------------ a core that cannot be used
def test_a_core_this_process_may_not_use_is_a_clear_error_before_any_start(tmp_path: Path) -> None:
    missing = max(usable_cores()) + 1000
    with pytest.raises(ValueError, match=rf"cannot pin to cores '{missing}': core\(s\) {missing} not available"):
        check_cores(str(missing))
    with pytest.raises(DriverError, match=rf"netperf-driver on host: cannot pin to cores '{missing}'"):
        LocalRunner(binary=SLEEP, cpus=str(missing)).run(["netperf-driver", "0"], 5.0)
    with ProcessGroups(tmp_path, cpus=str(missing)) as groups, pytest.raises(ValueError, match="not available"):
        groups.start("master", [SLEEP, "0"])
    assert groups.processes == []


# ------------------------------------------------------------------ the gate's facts
def Target(url: str, facts: Optional[object] = None) -> Endpoint:
    """A target object as a runtime hands it to the gate."""
    return Endpoint(url, None, "host", facts={} if facts is None else facts)  # type: ignore[arg-type]


def test_series_facts_take_the_target_facts_and_add_the_driver_cores() -> None:
    facts = {"images": "edge=pytest-netperf/nginx:local (for nginx:1.27)", "resources": "edge cpus 1"}
    pinned = RustDriver(runner=LocalRunner(binary=SLEEP, cpus="0"))
    assert pinned.cpus == "0"
    assert series_facts(Target("http://127.0.0.1:1/", facts), pinned) == {**facts, DRIVER_CORES_FACT: "0"}
    unpinned = RustDriver(runner=LocalRunner(binary=SLEEP))
    assert unpinned.cpus is None
    assert series_facts(Target("http://127.0.0.1:1/", facts), unpinned) == facts
    assert series_facts("http://127.0.0.1:1/", pinned) == {DRIVER_CORES_FACT: "0"}
    assert series_facts(Target("http://127.0.0.1:1/"), unpinned) == {}


def test_facts_that_are_not_a_mapping_name_the_target() -> None:
    with pytest.raises(NetperfError, match=r"target http://127.0.0.1:1/: facts must be a mapping .* got list"):
        series_facts(Target("http://127.0.0.1:1/", ["images"]), RustDriver(runner=LocalRunner(binary=SLEEP)))
