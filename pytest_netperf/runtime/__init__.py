"""Realizing topologies and reading what they spend: Docker, Compose, local processes, probes, cleanup.

Bringing targets up:
``docker`` brings a Topology up as a bridge network plus containers (:class:`DockerRuntime`);
``running`` is the started topology (addresses, logs, probes, endpoints, ``down``);
``endpoints`` the :class:`Endpoint` handed to the gate and the guard of its address;
``isolation`` the capabilities and network isolation every container gets;
``readiness`` polls a node until it answers; ``listening`` reads which ports a container
listens on; ``host_ports`` finds free host ports; ``resources`` splits the host's cores
between driver and system under test; ``l4_paths`` reaches one L4 server three ways;
``local`` runs echo servers as local processes; ``compose/`` runs a team's Compose stack.

Running drivers: ``commands`` (host runners), ``runners`` (a driver in a short-lived
container), ``process_guard`` (children that die with their parent).

Reading costs: ``cgroups`` and ``costs`` (CPU, memory, packets per node), ``wire`` (packet
counters of one interface), ``counting_clone`` and ``trace_output`` (valgrind/strace clones
of a node for the counting pass).

``cleanup`` removes what pytest-netperf created. Importing this package does not contact
Docker; the functions in its modules do when called.
"""
