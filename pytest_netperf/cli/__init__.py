"""The ``netperf`` console script: starter gates, baselines, cleanup, image builds, calibration, Locust workers.

``main`` parses the command line and dispatches ``clean``, ``images build``, ``calibrate``
and ``locust-worker`` (to the cleanup, the image build, pytest and the Locust worker);
``baseline`` holds ``netperf baseline show | diff | update | prune`` (the baseline store
from a shell); ``init`` holds ``netperf init`` (starter gates, pytest settings and CI jobs
for a team's Compose stack).
"""

from pytest_netperf.cli.main import main

__all__ = ["main"]
