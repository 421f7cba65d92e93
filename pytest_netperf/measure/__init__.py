"""Measuring and judging one test: the per-test gate and its steps.

``gate.py`` builds a measurement per ``measure()``/``compare()`` call (``model.py``: the
series and which one a budget judges), runs its timed rounds (``rounds.py``, with
``design.py``, ``validity.py``, ``contention.py``, ``system_costs.py``, ``wire_counts.py``,
``runner_watch.py``: the machine's state around each round)
and its counting passes (``counting_step.py``, ``counting_pass.py``), and returns each
budget's outcome (``outcomes.py``). ``endpoint.py`` is the contract a target satisfies.
"""
