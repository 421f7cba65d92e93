"""Every default of pytest-netperf, written once.

Settings, the gate, the statistics, the CLI and the option help all read these names.
"""

from __future__ import annotations

#: Where baselines and the A/A noise floor live, relative to the rootdir.
BASELINE_DIR = ".netperf"
#: Rounds per target before the first verdict.
ROUNDS_MIN = 5
#: Rounds at most while a budget stays INCONCLUSIVE.
ROUNDS_MAX = 15
#: Timed rounds of a test whose budgets are all counted (instructions, system calls): they
#: only check that the target answers without errors before the counting pass, which judges
#: the budgets; five rounds there took 25 s of each cost test in the example job.
COUNTED_ONLY_ROUNDS = 2
#: Rounds added per further look of the sequential procedure.
ROUND_BATCH = 5
#: Measured seconds per round.
ROUND_DURATION_S = 5.0
#: Warmup seconds before a target's first round of a measurement, excluded from the results.
WARMUP_S = 1.0
#: Warmup seconds of every later round (the connections are opened again): the system under
#: test is already warm, the new connections only need to settle.
ROUND_WARMUP_S = 0.25
#: Confidence level of every verdict (1 - the false-FAIL rate over all looks).
CONFIDENCE = 0.95
#: Power for the smallest detectable effect (MDE) figures.
POWER = 0.8
#: Alpha-spending rule over the looks of the sequential procedure.
SPENDING = "pocock"
#: What a final INCONCLUSIVE does: change, estimate, fail, warn or pass (verdict/policy.py).
#: ``change`` (red when the estimate is outside the budget and the rounds show a harmful
#: change from no change at the verdict's level) replaced ``estimate``, which turned 5 of 20
#: unchanged gates red on a tight CPU budget; rates in benchmarks/inconclusive_policy.py.
INCONCLUSIVE = "change"
#: How the sides of a comparison share the runner's time (measure/design.py): auto
#: (simultaneous for a target and its base twin at a fixed rate, each on containers of its
#: own; fine turns for two closed loops that can take them; alternate otherwise), alternate
#: (ABBA rounds, one side at a time), simultaneous or turns (two closed loops share each
#: round in fine turns).
#: On two echo containers (benchmarks/gate_power.py) simultaneous rounds caught a +10% CPU
#: and a -5% throughput change in 14 of 15 gates where alternating ones caught 8 of 15, in a
#: third to a quarter of the time, with no false FAIL in 90 unchanged gates.
DESIGN = "auto"
#: Slot length of the ``turns`` design (s): two closed loops share each round in slots of this
#: length, ABBA. Two echo servers on one core, 0.5 s rounds beside ``busy-neighbor --level
#: busy`` (AMD EPYC, 2 cores, 20 pairs): a pair's ratio spread 4.6% in 10 ms slots, 6.0% in
#: 25 ms slots and 17.2% taking whole rounds in turns (idle: 2.4%, 3.7%, 9.4%;
#: benchmarks/fine_turns.py).
TURN_S = 0.01
#: In fine turns, the most a side's median latency may be, as a share of a slot: a closed
#: loop's latency is the queue it keeps at the server, and that queue runs on into the other
#: side's slot after this side's ends. Two echo servers on one core, 10 ms slots, a 5% cut,
#: 12 pairs each at idle (benchmarks/fine_turns.py; sd per pair, turns vs whole rounds): a
#: 1.6 ms queue 1.7-3.2% vs 3.4-4.3%, 3 ms 2.2% vs 1.7%, 9.6 ms 4.6% vs 1.6%, 100 ms 4.5% vs
#: 0.5%; beside ``busy`` the 1.6 ms queue kept a median latency of 1.6-2.0 ms.
TURN_LATENCY_SHARE = 0.3
#: Arrivals of a fixed-rate (open-loop) load when a test names none: ``poisson``
#: (exponential gaps; the Rust driver gets a new seed per side and round) or ``constant``.
#: Constant gaps keep one phase against the other side's load, the runner's timers and each
#: other for a whole round, and that phase sets the round's latency and CPU: two identical
#: echo containers loaded at once differed per pair of rounds by 27.3% in P90 and 8.3% in CPU
#: per request with constant gaps, 4.3% and 3.0% with Poisson gaps
#: (benchmarks/cpu_spread.py --arrival constant,poisson).
ARRIVAL = "poisson"
#: Every arrival schedule of a fixed-rate load (the Locust workers' pacing keeps its own copy:
#: it runs without this package).
ARRIVALS = ("constant", "poisson")
#: A stored baseline of another machine class only: new (not used: NEW), warn (used, with a warning) or fail.
FINGERPRINT_MISMATCH = "new"
#: Open loop: the driver's schedule-lag p99 (ms) above which a round is INVALID.
MAX_LAG_MS = 5.0
#: Times a round whose driver was saturated is measured again before the test is INVALID
#: (a passing disturbance of a shared machine, not a lasting overload).
SATURATED_ROUND_RETRIES = 2
#: The load driver when a test names none.
DRIVER = "rust"
#: Locust worker processes on this machine (0: Locust runs in one process).
LOCUST_WORKERS = 0
#: Cores of the load driver: auto (its own cores where the machine has 4+, else all), all, or a cpuset.
DRIVER_CPUS = "auto"
#: The CPU weight of the stack's containers and the drivers, as a multiple of a cgroup's
#: default (runtime/cpu_priority.py); 1 leaves them at the default weight.
CPU_WEIGHT = 20.0
#: Locust workers on other machines (or containers) the session's master waits for.
LOCUST_REMOTE_WORKERS = 0
#: The port a session's Locust master listens on when remote workers attach (Locust's own default).
LOCUST_MASTER_PORT = 5557
#: The address a session's Locust master binds when remote workers attach.
LOCUST_MASTER_BIND = "0.0.0.0"
#: Seconds the Locust master waits for all its workers to attach before the test is an error.
LOCUST_WORKERS_TIMEOUT_S = 60.0
#: Seconds ``netperf locust-worker`` waits before starting the Locust worker again.
LOCUST_WORKER_RESTART_DELAY_S = 1.0
#: Locust: a process whose event loop wakes a sleeping greenlet later than this at P99 (ms) is
#: saturated (responses wait in the socket for the client). Calibrated with
#: benchmarks/locust_loop_lag.py on a 2-core VM: the floor is ~1.05 ms even idle (gevent's
#: timers wake on whole milliseconds); 50-500 rps gave 1.1-3.4 ms idle and 3.2-5.3 ms with both
#: cores busy (rate still reached), a CPU-starved closed loop 13.5 ms. The old 1 ms bound made
#: every round INVALID.
LOCUST_MAX_LOOP_LAG_MS = 10.0

# ----- L4 (iperf3, tcp:// request/response) -------------------------------------------------
#: Bytes per UDP datagram when a UDP round gives no payload= (the largest that is not
#: fragmented on a 1500-byte Ethernet MTU).
UDP_PAYLOAD_BYTES = 1472
#: A UDP round whose iperf3 client sent less than this share of the datagrams per second it
#: was asked for measured the client, not the path: the round is INVALID.
UDP_MIN_SENT_SHARE = 0.95
#: Largest payload= of an L4 round (bytes per request, write or datagram).
MAX_PAYLOAD_BYTES = 65536
#: The counting pass (instructions and system calls per request): the two exact request counts
#: whose difference each repetition measures (start-up and shut-down cancel), how often the
#: pair is repeated (their range is the verdict's tolerance), and the time bound of one
#: counted run (start under its counting tool, the requests, the stop).
COUNTING_REQUESTS = 1000
#: The smaller count of a counting pass, as a share of COUNTING_REQUESTS.
COUNTING_LOW_SHARE = 0.2
COUNTING_REPETITIONS = 3
COUNTING_TIME_LIMIT_S = 300.0
#: A counted budget whose threshold lies inside the range of the repetitions is PASS
#: when that range (relative to the value) is narrower than this: the count cannot resolve a
#: smaller change (an occasional timer call in a run moves system calls per request by 0.2%).
COUNTED_RESOLUTION = 0.01
#: A counted ratio that fails by less than this many times the spread of its sides'
#: repetitions (COUNTED_CONFIRM_MARGIN_TWO times on two repetitions a side) is counted again,
#: each side COUNTING_CONFIRM_REPETITIONS times, and judged on those counts: a count that
#: depends on timing (reads that split differently) puts two repetitions of an unchanged side's
#: twin wholly above the other side's two one time in six, and three one time in twenty
#: (verdict/counted.py).
COUNTED_CONFIRM_MARGIN = 3.0
COUNTED_CONFIRM_MARGIN_TWO = 12.0
COUNTING_CONFIRM_REPETITIONS = 6
