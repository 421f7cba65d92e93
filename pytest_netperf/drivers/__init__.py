"""Load drivers: each runs a :class:`LoadShape` against a URL and returns a RoundResult."""
