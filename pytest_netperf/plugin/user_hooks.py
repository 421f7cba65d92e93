"""Calling the hooks a conftest or plugin implements (declared in :mod:`~pytest_netperf.plugin.hookspec`):
the machine class a run files its baselines under, and the facts users add to report rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Callable, Optional

import pytest

from pytest_netperf.baseline.fingerprint import machine_fingerprint
from pytest_netperf.baseline.machine import check_class_name, derived_class, resolve_class
from pytest_netperf.measure.gate import Gate
from pytest_netperf.report.rows import series_facts
from pytest_netperf.settings import Settings

STASH_USER_FACTS = pytest.StashKey[bool]()  # pytest_netperf_row_facts was called for the test

#: The ``--netperf-machine-class`` option's argparse destination (the command line beats the hook).
MACHINE_CLASS_DEST = "netperf_machine_class"


def run_machine_class(config: pytest.Config, settings: Settings) -> str:
    """The machine class of this run: ``--netperf-machine-class`` on the command line, else the
    ``pytest_netperf_machine_class`` hook's name, else the ``netperf_machine_class`` ini key,
    else the class derived from the CPU model and core count.

    A hook's value that cannot be a folder of the baseline directory is a UsageError naming
    the hook, where it is implemented and the value.
    """
    if config.getoption(MACHINE_CLASS_DEST, None):
        return resolve_class(settings.machine_class)  # checked with the other options
    hook = config.hook.pytest_netperf_machine_class
    impls = hook.get_hookimpls()
    if impls:  # the fingerprint asks Docker for its version: only when someone listens
        fingerprint = machine_fingerprint()
        named = hook(config=config, fingerprint=fingerprint, derived=derived_class(fingerprint))
        if named is not None:
            where = ", ".join(impl.plugin_name for impl in impls)
            prefix = f"pytest-netperf: the pytest_netperf_machine_class hook ({where}) returned {named!r}"
            if not isinstance(named, str):
                raise pytest.UsageError(f"{prefix}: expected a machine class name (a str) or None")
            try:
                return check_class_name(named)
            except ValueError as exc:
                raise pytest.UsageError(f"{prefix}: {exc}") from None
    return resolve_class(settings.machine_class or None)


def user_facts(config: pytest.Config, item: pytest.Item, gate: Gate, warn: Callable[[str], None]) -> Optional[str]:
    """Add the ``pytest_netperf_row_facts`` hook's facts to every series of ``gate``, once per
    test; returns why a return value was refused (the test fails with it), or None.

    A name the plugin uses for the series (its own facts and those the report adds to its
    rows, :func:`~pytest_netperf.report.rows.series_facts`) keeps the plugin's value: the
    hook's fact is dropped and ``warn`` says so.
    """
    if item.stash.get(STASH_USER_FACTS, False):
        return None
    item.stash[STASH_USER_FACTS] = True
    hook = config.hook.pytest_netperf_row_facts
    if not hook.get_hookimpls():
        return None
    for m in gate.measurements:
        shown = series_facts(m)  # what the rows will show, the report's own facts included
        for series in m.series():
            results = hook(
                config=config,
                item=item,
                measurement=m.key,
                series=series.label,
                url=series.url,
                facts=dict(series.facts),
            )
            added: dict[str, str] = {}
            for result in reversed(results):  # pluggy calls the nearest conftest first: it wins
                if not isinstance(result, Mapping):
                    return _facts_problem(result, "expected a mapping of fact names to text, or None")
                for name, value in result.items():
                    if not isinstance(name, str) or not name.strip():
                        return _facts_problem(result, f"fact name {name!r}: expected a non-empty str")
                    if value is None:
                        continue
                    if not isinstance(value, (str, int, float)):
                        return _facts_problem(result, f"fact {name!r}: expected a str, int or float, got {value!r}")
                    added[name] = str(value)
            for name, value in added.items():
                if name in series.facts or name in shown.get(series.label, {}):
                    warn(
                        f"{item.nodeid}: the pytest_netperf_row_facts hook's fact {name!r} ({value!r}) was dropped: "
                        f"pytest-netperf sets {name!r} for the {series.label} series itself; choose another name"
                    )
                    continue
                series.facts[name] = value
    return None


def _facts_problem(result: object, problem: str) -> str:
    return f"the pytest_netperf_row_facts hook returned {result!r}: {problem}"
