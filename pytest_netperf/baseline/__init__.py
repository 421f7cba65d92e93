"""Stored baselines: the file model, the per-machine store and the machine fingerprint."""
