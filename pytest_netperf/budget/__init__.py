"""Budgets: the grammar users write in markers and the metrics registry it reads."""
