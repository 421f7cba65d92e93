"""A team's own Compose stack as a gate target, run by an existing Compose implementation.

``cli`` finds and runs Compose (v2 plugin or docker-compose v1), ``project`` holds the pure
logic over its normalised configuration (project names, the override file, known ports),
``stack`` brings a project up and down, ``session`` keeps one session's stacks.
"""
