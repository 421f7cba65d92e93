"""Code that runs inside the Locust processes (loaded by Locust next to the locustfile).

Only :mod:`netperf_listener` and :mod:`netperf_default_user` import Locust; the helpers
(recording windows, pacing, error kinds, connection counting) are plain Python so the
test process can unit-test them.
"""
