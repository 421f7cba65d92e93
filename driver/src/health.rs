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

/// A thread above this CPU share counts as pegged.
pub const CPU_PEGGED: f64 = 0.95;
/// Open loop: completing less than this share of the scheduled requests is saturation.
pub const MIN_ACHIEVED: f64 = 0.99;

/// What the saturation rules look at.
#[derive(Debug, Clone, Default)]
pub struct HealthInputs {
    /// Open loop (rate given)?
    pub open_loop: bool,
    /// Completed / scheduled requests in the window (open loop).
    pub achieved_ratio: Option<f64>,
    /// p99 of the schedule lag (open loop).
    pub lag_p99_ns: Option<u64>,
    /// Bound for the lag p99.
    pub max_lag_ns: u64,
    /// CPU share of each worker thread over its run.
    pub thread_cpu_util: Vec<f64>,
}

/// Reasons this run's client was saturated (empty when healthy).
pub fn saturation_reasons(h: &HealthInputs) -> Vec<String> {
    let mut reasons = Vec::new();
    if h.open_loop {
        if let Some(r) = h.achieved_ratio {
            if r < MIN_ACHIEVED {
                reasons.push(format!(
                    "achieved {:.1}% of requested rate (< {:.0}%)",
                    r * 100.0,
                    MIN_ACHIEVED * 100.0
                ));
            }
        }
        if let Some(lag) = h.lag_p99_ns {
            if lag > h.max_lag_ns {
                reasons.push(format!(
                    "schedule lag p99 {:.1} us above bound {:.1} us",
                    lag as f64 / 1e3,
                    h.max_lag_ns as f64 / 1e3
                ));
            }
        }
    }
    for (i, u) in h.thread_cpu_util.iter().enumerate() {
        if *u > CPU_PEGGED {
            reasons.push(format!(
                "thread {i} CPU at {:.0}% (> {:.0}%)",
                u * 100.0,
                CPU_PEGGED * 100.0
            ));
        }
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn healthy_open_loop_has_no_reasons() {
        let h = HealthInputs {
            open_loop: true,
            achieved_ratio: Some(0.999),
            lag_p99_ns: Some(30_000),
            max_lag_ns: 1_000_000,
            thread_cpu_util: vec![0.2, 0.3],
        };
        assert!(saturation_reasons(&h).is_empty());
    }

    #[test]
    fn each_rule_fires() {
        let h = HealthInputs {
            open_loop: true,
            achieved_ratio: Some(0.931),
            lag_p99_ns: Some(2_500_000),
            max_lag_ns: 1_000_000,
            thread_cpu_util: vec![0.5, 0.97],
        };
        let r = saturation_reasons(&h);
        assert_eq!(r.len(), 3, "{r:?}");
        assert!(r[0].contains("achieved 93.1% of requested rate"));
        assert!(r[1].contains("schedule lag p99 2500.0 us"));
        assert!(r[2].contains("thread 1 CPU at 97%"));
    }

    #[test]
    fn closed_loop_only_checks_cpu() {
        let h = HealthInputs {
            open_loop: false,
            achieved_ratio: Some(0.1),
            lag_p99_ns: Some(u64::MAX),
            max_lag_ns: 1,
            thread_cpu_util: vec![0.5],
        };
        assert!(saturation_reasons(&h).is_empty());
    }

    #[test]
    fn thread_cpu_grows_with_work() {
        let before = thread_cpu();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed().as_millis() < 30 {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        assert!(thread_cpu().since(before).total() > 0.01);
    }
}
