"""The plugin's entry hooks: its own hook declarations, the options, and the session object
made at configure time.

Everything else the plugin does lives in :class:`~pytest_netperf.plugin.session.NetperfPlugin`
(registered here) and in the fixture modules registered beside it.
"""

from __future__ import annotations

import pytest

from pytest_netperf.plugin import base_fixtures, compose_fixtures, docker_fixtures
from pytest_netperf.plugin.markers import MARKER_HELP
from pytest_netperf.plugin.options import add_options, image_overrides, settings_from_config
from pytest_netperf.plugin.session import PLUGIN_NAME, SESSION_KEY, NetperfPlugin


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Declare the hooks a conftest or plugin may implement (:mod:`~pytest_netperf.plugin.hookspec`)."""
    from pytest_netperf.plugin import hookspec

    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    plugin = NetperfPlugin(config, settings_from_config(config), image_overrides(config))
    plugin.check_base_revision()  # a usage error before collection, before any stack starts
    plugin.load_acceptances()  # a malformed --netperf-accept or Netperf-Accept: trailer, likewise
    config.stash[SESSION_KEY] = plugin
    config.pluginmanager.register(plugin, PLUGIN_NAME)
    for module, name in (
        (docker_fixtures, "netperf-docker-fixtures"),
        (compose_fixtures, "netperf-compose-fixtures"),
        (base_fixtures, "netperf-base-fixtures"),
    ):
        if not config.pluginmanager.is_registered(module):
            config.pluginmanager.register(module, name)
