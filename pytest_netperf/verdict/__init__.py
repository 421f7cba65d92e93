"""From per-round values to a verdict: estimators, error control, sequential looks, noise floor."""
