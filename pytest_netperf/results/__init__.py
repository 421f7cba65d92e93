"""The result model: what one measurement round produced, shared by every layer above it.

``model`` holds the data classes (:class:`~pytest_netperf.results.model.RoundResult` and its
parts); ``histogram`` the HdrHistogram helpers their latency summaries are encoded with.
Nothing here knows a driver's wire format or the metrics registry.
"""
