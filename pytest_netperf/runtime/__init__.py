"""Realizing topologies: the Docker runtime, readiness, labels, cleanup, local processes.

Importing this package does not contact Docker; the functions in its modules do when called.
"""
