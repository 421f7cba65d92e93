"""The hooks pytest-netperf offers a ``conftest.py`` or a plugin (declared here, registered by
``pytest_addhooks`` in :mod:`pytest_netperf.plugin.hooks`; see docs/hooks.md).

* :func:`pytest_netperf_machine_class`: the machine class stored baselines are filed under;
* :func:`pytest_netperf_json_report`: add to the JSON report before it is written;
* :func:`pytest_netperf_row_facts`: facts shown with the report rows of a measured series.

Implement them by name in a ``conftest.py`` (the rootdir's or the test directory's: the
machine class is decided at configure time, so only a conftest pytest loads at startup
takes part) or in a plugin. pytest checks the argument names against these declarations;
an implementation may take fewer arguments than declared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

import pytest

if TYPE_CHECKING:
    from typing import Union

    FactValue = Optional[Union[str, int, float]]


@pytest.hookspec(firstresult=True)
def pytest_netperf_machine_class(config: pytest.Config, fingerprint: Mapping[str, Any], derived: str) -> Optional[str]:
    """Name the machine class whose baselines this run reads and writes.

    Called once per pytest process (each xdist worker too) at configure time, before any
    test runs. Stored baselines live in ``<baseline dir>/<machine class>/``; by default the
    class is derived from the CPU model and core count (``derived``). A CI whose runner
    types differ in what that slug cannot see (a runner label, a cloud instance type)
    names its class here.

    Precedence: ``--netperf-machine-class`` on the command line (or in ``PYTEST_ADDOPTS``)
    beats this hook and the hook is not called; the hook's name beats the
    ``netperf_machine_class`` ini key, which beats the derived class. Return None to keep
    the ini key's class or the derived one (e.g. on a developer's machine). The first
    implementation that returns a value other than None decides.

    :param config: the pytest config.
    :param fingerprint: this machine's fingerprint, as stored with every baseline
        (``cpu_model``, ``logical_cores``, ``kernel``, ``docker_version``, ``python``,
        ``plugin_version``, ``driver_version``, ``image_digests``); a copy.
    :param derived: the class derived from the fingerprint, e.g. ``intel-xeon-2c``.
    :returns: a class name usable as a folder name (1-64 characters of ``a-z``, ``0-9``,
        ``.``, ``_`` and ``-``, starting with a letter or digit), or None. Anything else
        stops the run with a usage error naming this hook and the value.

    Example ``conftest.py``::

        import os
        import re


        def pytest_netperf_machine_class(config, fingerprint, derived):
            label = os.environ.get("RUNNER_LABEL")  # set by the CI job
            if not label:
                return None  # a developer's machine: keep the derived class
            return re.sub(r"[^a-z0-9._-]+", "-", label.lower()).strip("-")[:64]
    """


@pytest.hookspec
def pytest_netperf_json_report(config: pytest.Config, document: dict[str, Any]) -> None:
    """Add to the JSON report (``--netperf-json``) before it is written.

    Called once per session, in the process that writes the reports (the xdist controller,
    not its workers), just before the document is written; not called when no JSON report
    is asked for or no netperf test ran. Change ``document`` in place; the return value is
    ignored.

    Add keys of your own; leave the plugin's keys (``schema_version``, ``generated_at``,
    ``plugin_version``, ``summary``, ``rows``, ``results``) as they are, since tools read
    them by schema. Values must be JSON-ready (dicts, lists, strings, numbers, booleans,
    None); a non-finite number is written as null. If the hook raises, or a value cannot be
    written as JSON, the JSON report is not written and a warning says why (the verdicts
    stand, like any report that cannot be written).

    :param config: the pytest config.
    :param document: the report document (a dict), to change in place.

    Example ``conftest.py``::

        import os


        def pytest_netperf_json_report(config, document):
            document["ci"] = {
                "runner_label": os.environ.get("RUNNER_LABEL"),
                "job_url": os.environ.get("CI_JOB_URL"),
            }
    """


@pytest.hookspec
def pytest_netperf_row_facts(
    config: pytest.Config, item: pytest.Item, measurement: str, series: str, url: str, facts: Mapping[str, str]
) -> Optional[Mapping[str, FactValue]]:
    """Add facts (name -> text) to the report rows of one measured series.

    Called after a netperf test's gate has judged its budgets (and when its measurement
    was INVALID), before its report rows are made: once per measurement of the test (one
    ``netperf.measure`` or ``netperf.compare`` call) and per series of it (``candidate``,
    ``reference``, ``base``). Under xdist it runs in the worker that ran the test.

    The facts returned are shown like the plugin's own (``images``, ``resources``,
    ``driver cores``): in the terminal table's ``facts:`` section (with ``-v``), in each
    row's details in the Markdown and HTML reports, and in the JSON report under
    ``rows[].facts.<series>`` and ``results.<test id>[].series.<series>.facts``.

    :param config: the pytest config.
    :param item: the test.
    :param measurement: the measurement's key: ``default``, or e.g. ``hops=3`` for a
        measurement named by its parameters.
    :param series: the series label: ``candidate``, ``reference`` or ``base``.
    :param url: the URL the series was measured at.
    :param facts: the series' facts so far (a copy: changing it changes nothing).
    :returns: a mapping of fact names (non-empty strings) to text (a string, an int or a
        float; a value of None leaves that fact out), or None for nothing to add. Every
        implementation is called; when two give the same name, the one pytest calls first
        wins (a conftest nearer the test). A name the plugin already uses for that series
        keeps the plugin's value, with a warning. A return value of another shape fails the
        test with a message naming this hook and the value.

    Example ``conftest.py``::

        import os


        def pytest_netperf_row_facts(item, series):
            if series == "candidate":
                return {"runner": os.environ.get("RUNNER_LABEL"), "owner": "team-edge"}
            return None
    """
