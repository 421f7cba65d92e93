"""The result model: what one measurement round produced, shared by every layer above it.

``model`` holds the data classes (:class:`~pytest_netperf.results.model.RoundResult` and its
parts); ``histogram`` the HdrHistogram helpers their latency summaries are encoded with;
``counted`` what a counted run (valgrind, strace) counted and the marginal cost per request.
``runner`` how busy the machine was around a round (:class:`~pytest_netperf.results.runner.RunnerState`).
Each driver module translates its own output into these classes, with one exception:
:meth:`~pytest_netperf.results.model.LatencySummary.from_json` reads a latency block in the
Rust driver's JSON keys (``count``, ``min``, ``mean``, …, ``p999``, ``histogram``; the Locust
result builder produces the same keys). Nothing here knows the metrics registry.
"""
