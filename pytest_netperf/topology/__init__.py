"""Topologies as plain data (:mod:`.model`), the seed-scenario builders (:mod:`.builders`)
and the config renderers (:mod:`.render`)."""
