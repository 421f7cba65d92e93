"""Configuration shared by every level of the suite (see tests/README.md).

Its presence puts ``tests/`` on ``sys.path`` (pytest's default ``prepend`` import mode), so the
shared helper modules here (``netperf_rounds``, ``pytester_helpers``, ``report_pages``,
``cpu_quota``) import by their bare names from ``unit/``, ``plugin/`` and ``integration/`` alike.
"""
