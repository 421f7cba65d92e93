"""A team's own Compose stack as a gate target, run by an existing Compose implementation.

``cli`` finds and runs Compose (v2 plugin or docker-compose v1), ``commands`` the command line
of one project, ``project`` holds the pure logic over its normalised configuration (project
names, the override file, known ports), ``launcher`` brings a project up (config, images,
build, ``up``, ready), ``stack`` is the running project (containers, endpoints, facts,
``down``), ``diagnostics`` says why a service did not start (exit code, health check, log
tail), ``session`` keeps one session's stacks.
"""
