"""The pytest plugin (entry point ``netperf``): options, the marker, fixtures and hooks.

pytest registers this package as a plugin; the hooks and the fixture below are its
whole surface. Measuring, judging and reporting live in the core packages.
"""

from pytest_netperf.plugin.fixtures import netperf
from pytest_netperf.plugin.hooks import pytest_addhooks, pytest_addoption, pytest_configure

__all__ = ["netperf", "pytest_addhooks", "pytest_addoption", "pytest_configure"]
