"""Internals of the Locust driver (:mod:`pytest_netperf.drivers.locust.driver`).

Two files run *inside* the Locust processes: Locust loads :data:`LISTENER_FILE` next to
the user's locustfile (or next to :data:`DEFAULT_USER_FILE` for simple GET targets).  The
listener records every request into an HdrHistogram, counts errors by kind, excludes the warmup and writes one JSON
document (workers send their part to the master, which merges it losslessly).

The other modules run in the test process: starting and reaping the Locust process groups,
explaining failed runs, and turning the listener's JSON into a ``RoundResult``.  Nothing in
this package imports pytest; only the two ``netperf_*.py`` files import Locust.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent / "in_locust"
#: The Locust plugin file that records the measurement window.
LISTENER_FILE = PACKAGE_DIR / "netperf_listener.py"
#: The locustfile used when the caller gives none: one GET per iteration.
DEFAULT_USER_FILE = PACKAGE_DIR / "netperf_default_user.py"
#: The user class defined in :data:`DEFAULT_USER_FILE`.
DEFAULT_USER_CLASS = "NetperfGetUser"
#: Version tag of the JSON document the listener writes.
OUTPUT_SCHEMA = "netperf-locust/1"
