"""The ``netperf`` console script (baselines, images, cleanup)."""

from pytest_netperf.cli.main import main

__all__ = ["main"]
