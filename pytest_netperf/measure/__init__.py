"""Measuring targets in rounds: the result model, histograms, targets and the per-test gate."""
