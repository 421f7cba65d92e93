//! Client health: CPU usage from getrusage and the rules that mark a run saturated.

/// User and system CPU seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTimes {
    /// User CPU seconds.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
}

impl CpuTimes {
    /// `self - earlier`.
    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            user_s: self.user_s - earlier.user_s,
            sys_s: self.sys_s - earlier.sys_s,
        }
    }

    /// User plus system.
    pub fn total(self) -> f64 {
        self.user_s + self.sys_s
    }
}

fn rusage(who: libc::c_int) -> CpuTimes {
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer; `who` is RUSAGE_SELF or RUSAGE_THREAD.
    unsafe { libc::getrusage(who, &mut ru) };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    CpuTimes {
        user_s: secs(ru.ru_utime),
        sys_s: secs(ru.ru_stime),
    }
}

/// CPU used by the whole process so far.
pub fn process_cpu() -> CpuTimes {
    rusage(libc::RUSAGE_SELF)
}

/// CPU used by the calling thread so far.
pub fn thread_cpu() -> CpuTimes {
    rusage(libc::RUSAGE_THREAD)
}

/// CPU and run-queue time of the calling thread from `/proc/thread-self/schedstat`
/// (nanoseconds on a CPU, nanoseconds runnable but waiting for one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedTimes {
    /// Time spent running.
    pub on_cpu_ns: u64,
    /// Time spent runnable on a run queue, waiting for a CPU.
    pub run_delay_ns: u64,
}

/// The calling thread's scheduler times; `None` when the kernel does not expose them.
pub fn thread_sched() -> Option<SchedTimes> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    parse_schedstat(&text)
}

fn parse_schedstat(text: &str) -> Option<SchedTimes> {
    let mut fields = text.split_ascii_whitespace().map(|f| f.parse::<u64>().ok());
    Some(SchedTimes {
        on_cpu_ns: fields.next()??,
        run_delay_ns: fields.next()??,
    })
}

/// A snapshot of one thread's clocks, taken by the thread itself.
#[derive(Debug, Clone, Copy)]
pub struct ThreadClock {
    at_ns: u64,
    cpu: CpuTimes,
    sched: Option<SchedTimes>,
}

impl ThreadClock {
    /// Snapshot the calling thread at monotonic time `now_ns`.
    pub fn now(now_ns: u64) -> Self {
        Self {
            at_ns: now_ns,
            cpu: thread_cpu(),
            sched: thread_sched(),
        }
    }

    /// When the snapshot was taken (monotonic ns).
    pub fn at_ns(&self) -> u64 {
        self.at_ns
    }

    /// Shares of the wall time between `self` and `later` (both of the same thread).
    pub fn usage_until(&self, later: &ThreadClock) -> ThreadUsage {
        let wall_ns = later.at_ns.saturating_sub(self.at_ns);
        if wall_ns == 0 {
            return ThreadUsage::default();
        }
        let wall_s = wall_ns as f64 / 1e9;
        let busy_util = match (self.sched, later.sched) {
            (Some(a), Some(b)) => {
                let busy = b.on_cpu_ns.saturating_sub(a.on_cpu_ns)
                    + b.run_delay_ns.saturating_sub(a.run_delay_ns);
                Some(busy as f64 / wall_ns as f64)
            }
            _ => None,
        };
        ThreadUsage {
            cpu_util: later.cpu.since(self.cpu).total().max(0.0) / wall_s,
            busy_util,
        }
    }
}

/// How one load thread used its time over the measured window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ThreadUsage {
    /// CPU (user + system) / wall time.
    pub cpu_util: f64,
    /// (time on a CPU + time runnable but waiting for a CPU) / wall time: the share of the
    /// window in which the thread was not idle in epoll. `None` without schedstat.
    pub busy_util: Option<f64>,
}

impl ThreadUsage {
    /// The same use over `factor` times less wall time (a side's own slots under `--turn`).
    pub fn scaled(self, factor: f64) -> Self {
        ThreadUsage {
            cpu_util: self.cpu_util * factor,
            busy_util: self.busy_util.map(|b| b * factor),
        }
    }
}

/// A thread above this CPU share counts as pegged.
pub const CPU_PEGGED: f64 = 0.95;
/// Open loop: a thread busy (on a CPU or waiting for one) above this share had no idle
/// time left to keep its timetable.
pub const BUSY_PEGGED: f64 = 0.95;
/// Open loop: answering less than this share of the scheduled requests, with a saturated
/// thread, is reported as a shortfall of the client.
pub const MIN_ACHIEVED: f64 = 0.99;

/// Is a thread with this window usage saturated? Closed loop: CPU pegged. Open loop also:
/// never idle (CPU plus run-queue wait pegged), e.g. when it shares its core.
pub fn thread_saturated(open_loop: bool, u: &ThreadUsage) -> bool {
    u.cpu_util > CPU_PEGGED || (open_loop && u.busy_util.is_some_and(|b| b > BUSY_PEGGED))
}

/// Was the client's own CPU the limit (some load thread's CPU pegged)? When a run is
/// saturated without it, its threads were waiting for a CPU that something else on the
/// machine held: the caller can tell who from what the rest of the machine spent.
pub fn cpu_bound(threads: &[ThreadUsage]) -> bool {
    threads.iter().any(|u| u.cpu_util > CPU_PEGGED)
}

/// What the saturation rules look at.
#[derive(Debug, Clone, Default)]
pub struct HealthInputs {
    /// Open loop (rate given)?
    pub open_loop: bool,
    /// Responses (any status) / scheduled requests in the window (open loop).
    pub achieved_ratio: Option<f64>,
    /// Requests that never left the client queue (open loop).
    pub queue_timeouts: u64,
    /// p99 of the schedule lag (open loop).
    pub lag_p99_ns: Option<u64>,
    /// Bound for the lag p99.
    pub max_lag_ns: u64,
    /// Usage of each worker thread over the measured window.
    pub threads: Vec<ThreadUsage>,
}

/// What a saturated client fell short in; each kind spoils different figures of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SaturationKind {
    /// A load thread's own CPU was the limit: rates and latencies measure the client.
    ClientCpu,
    /// The load loop ran behind its timetable (or never idled waiting for a CPU): latencies
    /// include the client's wait (coordinated omission); counts and CPU per request do not.
    Schedule,
    /// Requests the schedule asked for never left the client: the sent rate and the
    /// client-side errors are the client's.
    SendRate,
}

/// One reason a run's client was saturated.
#[derive(Debug, Clone, PartialEq)]
pub struct Saturation {
    /// Which figures it spoils.
    pub kind: SaturationKind,
    /// What happened, in words.
    pub reason: String,
}

/// Reasons this run's client was saturated (empty when healthy).
///
/// Errors and a low `achieved_ratio` alone never make a run saturated: a slow target with
/// too few connections also fills the client queue, and that is the target's result. They
/// are named as the client's shortfall only when a load thread was saturated.
pub fn saturations(h: &HealthInputs) -> Vec<Saturation> {
    let mut found = Vec::new();
    let mut push = |kind, reason| found.push(Saturation { kind, reason });
    for (i, u) in h.threads.iter().enumerate() {
        if u.cpu_util > CPU_PEGGED {
            push(
                SaturationKind::ClientCpu,
                format!(
                    "thread {i} CPU at {:.0}% over the window (> {:.0}%)",
                    u.cpu_util * 100.0,
                    CPU_PEGGED * 100.0
                ),
            );
        } else if thread_saturated(h.open_loop, u) {
            let busy = u.busy_util.unwrap_or(0.0);
            push(
                SaturationKind::Schedule,
                format!(
                    "thread {i} never idle over the window: {:.0}% on CPU + {:.0}% waiting for a CPU (> {:.0}%)",
                    u.cpu_util * 100.0,
                    (busy - u.cpu_util).max(0.0) * 100.0,
                    BUSY_PEGGED * 100.0
                ),
            );
        }
    }
    if !h.open_loop {
        return found;
    }
    if let Some(lag) = h.lag_p99_ns {
        if lag > h.max_lag_ns {
            push(
                SaturationKind::Schedule,
                format!(
                    "schedule lag p99 {:.1} us above bound {:.1} us",
                    lag as f64 / 1e3,
                    h.max_lag_ns as f64 / 1e3
                ),
            );
        }
    }
    let client_bound = !found.is_empty();
    if let (Some(r), true) = (h.achieved_ratio, client_bound) {
        if r < MIN_ACHIEVED {
            found.push(Saturation {
                kind: SaturationKind::SendRate,
                reason: format!(
                    "achieved {:.1}% of requested rate (< {:.0}%); {} requests never left the client queue",
                    r * 100.0,
                    MIN_ACHIEVED * 100.0,
                    h.queue_timeouts
                ),
            });
        }
    }
    found
}

/// The reasons of [`saturations`] as text.
pub fn saturation_reasons(h: &HealthInputs) -> Vec<String> {
    saturations(h).into_iter().map(|s| s.reason).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(cpu: f64, busy: Option<f64>) -> ThreadUsage {
        ThreadUsage {
            cpu_util: cpu,
            busy_util: busy,
        }
    }

    fn open(ratio: f64, threads: Vec<ThreadUsage>) -> HealthInputs {
        HealthInputs {
            open_loop: true,
            achieved_ratio: Some(ratio),
            queue_timeouts: 0,
            lag_p99_ns: Some(30_000),
            max_lag_ns: 1_000_000,
            threads,
        }
    }

    #[test]
    fn healthy_open_loop_has_no_reasons() {
        let h = open(0.999, vec![usage(0.2, Some(0.25)), usage(0.3, None)]);
        assert!(saturation_reasons(&h).is_empty());
    }

    #[test]
    fn each_rule_fires() {
        let mut h = open(0.931, vec![usage(0.5, Some(0.6)), usage(0.97, Some(0.99))]);
        h.lag_p99_ns = Some(2_500_000);
        h.queue_timeouts = 69;
        let r = saturation_reasons(&h);
        assert_eq!(r.len(), 3, "{r:?}");
        assert!(
            r[0].contains("thread 1 CPU at 97% over the window"),
            "{r:?}"
        );
        assert!(r[1].contains("schedule lag p99 2500.0 us"), "{r:?}");
        assert!(r[2].contains("achieved 93.1% of requested rate"), "{r:?}");
        let kinds: Vec<_> = saturations(&h).into_iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                SaturationKind::ClientCpu,
                SaturationKind::Schedule,
                SaturationKind::SendRate
            ]
        );
        assert!(
            r[2].contains("69 requests never left the client queue"),
            "{r:?}"
        );
    }

    #[test]
    fn open_loop_thread_waiting_for_a_cpu_is_saturated() {
        let h = open(0.4, vec![usage(0.70, Some(0.99))]);
        let r = saturation_reasons(&h);
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(
            r[0].contains("thread 0 never idle over the window: 70% on CPU + 29% waiting"),
            "{r:?}"
        );
        assert!(r[1].contains("achieved 40.0%"), "{r:?}");
    }

    #[test]
    fn slow_target_shortfall_alone_is_not_client_saturation() {
        let mut h = open(0.4, vec![usage(0.3, Some(0.35))]);
        h.queue_timeouts = 6_000;
        assert!(
            saturation_reasons(&h).is_empty(),
            "queue timeouts with an idle client are the target's errors"
        );
    }

    #[test]
    fn closed_loop_only_checks_cpu() {
        let h = HealthInputs {
            open_loop: false,
            achieved_ratio: Some(0.1),
            queue_timeouts: 5,
            lag_p99_ns: Some(u64::MAX),
            max_lag_ns: 1,
            threads: vec![usage(0.5, Some(1.0))],
        };
        assert!(saturation_reasons(&h).is_empty());
        let h = HealthInputs {
            threads: vec![usage(0.96, Some(1.0))],
            ..h
        };
        assert_eq!(saturation_reasons(&h).len(), 1);
        assert!(!thread_saturated(false, &usage(0.5, Some(1.0))));
        assert!(thread_saturated(true, &usage(0.5, Some(0.96))));
    }

    #[test]
    fn cpu_bound_only_when_a_thread_is_pegged_on_its_own_cpu() {
        assert!(cpu_bound(&[usage(0.3, Some(0.4)), usage(0.97, Some(0.99))]));
        assert!(
            !cpu_bound(&[usage(0.70, Some(0.99))]),
            "waiting for a CPU is not using one"
        );
        assert!(!cpu_bound(&[]));
    }

    #[test]
    fn schedstat_parses_and_usage_divides_by_the_interval() {
        assert_eq!(
            parse_schedstat("2500000 700000 31\n"),
            Some(SchedTimes {
                on_cpu_ns: 2_500_000,
                run_delay_ns: 700_000
            })
        );
        assert_eq!(parse_schedstat("garbage"), None);
        let a = ThreadClock {
            at_ns: 0,
            cpu: CpuTimes::default(),
            sched: Some(SchedTimes::default()),
        };
        let b = ThreadClock {
            at_ns: 2_000_000_000,
            cpu: CpuTimes {
                user_s: 0.5,
                sys_s: 0.5,
            },
            sched: Some(SchedTimes {
                on_cpu_ns: 1_000_000_000,
                run_delay_ns: 900_000_000,
            }),
        };
        let u = a.usage_until(&b);
        assert!((u.cpu_util - 0.5).abs() < 1e-9);
        assert!((u.busy_util.unwrap() - 0.95).abs() < 1e-9);
        assert_eq!(b.usage_until(&a), ThreadUsage::default(), "empty interval");
    }

    #[test]
    fn thread_cpu_grows_with_work() {
        // Spin until this thread has used 20 ms of CPU (bounded by 10 s of wall time), so a
        // machine busy with other work slows the test down instead of failing it.
        let before = ThreadClock::now(crate::clock::mono_ns());
        let cpu_before = thread_cpu().total();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while thread_cpu().total() - cpu_before < 0.02 && start.elapsed().as_secs() < 10 {
            for _ in 0..10_000 {
                x = x.wrapping_mul(31).wrapping_add(7);
            }
        }
        std::hint::black_box(x);
        let after = ThreadClock::now(crate::clock::mono_ns());
        let u = before.usage_until(&after);
        assert!(thread_cpu().total() - cpu_before >= 0.02, "{u:?}");
        assert!(u.cpu_util > 0.0, "{u:?}");
        if let Some(b) = u.busy_util {
            assert!(b >= u.cpu_util * 0.9, "{u:?}");
        }
    }
}
