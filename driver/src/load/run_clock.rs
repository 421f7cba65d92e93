//! The clock of one load run, whatever the protocol: when its phases start (shared by all
//! worker threads), and how the run ends: an interrupted run, a target that vanished or a
//! failed thread fail it; otherwise the threads' measurements merge into its figures.

use std::sync::atomic::Ordering;

use super::liveness::Liveness;
use super::pacer::Timeline;
use super::plan::Plan;
use super::preflight::Preflight;
use super::signal;
use super::stats::ThreadStats;
use super::turns::Turns;
use crate::clock::mono_ns;
use crate::exit::Failure;
use crate::health::{process_cpu, CpuTimes, ThreadUsage};
use crate::report::RunFacts;

/// Grace after the last timeout before outstanding requests are abandoned.
const DRAIN_GRACE_NS: u64 = 100_000_000;
/// Time the worker threads get between the clock's start and the load's.
const START_DELAY_NS: u64 = 5_000_000;

/// A run's phases and the process's CPU when its clock started.
pub struct RunClock {
    /// The phases every worker thread follows.
    pub tl: Timeline,
    cpu_before: CpuTimes,
    turns: Option<Turns>,
    /// Length of a reported interval of the window (ns).
    interval_ns: u64,
}

impl RunClock {
    /// Start the clock of a run of `plan`: load begins in a few milliseconds, then the
    /// warmup, the window, and the drain of up to `--timeout`.
    pub fn start(plan: &Plan) -> Self {
        let cpu_before = process_cpu();
        let start_ns = mono_ns() + START_DELAY_NS;
        let window_start_ns = start_ns + plan.warmup_ns;
        let window_end_ns = window_start_ns + plan.duration_ns;
        let tl = Timeline {
            start_ns,
            window_start_ns,
            window_end_ns,
            hard_end_ns: window_end_ns + plan.timeout_ns + DRAIN_GRACE_NS,
        };
        RunClock {
            tl,
            cpu_before,
            turns: plan.turns,
            interval_ns: plan.interval_ns,
        }
    }

    /// The run has ended: its failure (interrupted, the target vanished, a thread failed),
    /// or the threads' `merged` measurements with the pre-flight handshakes and the run's
    /// facts (`threads`: how each worker used its time over the window).
    pub fn finish(
        &self,
        merged: Option<ThreadStats>,
        failure: Option<Failure>,
        liveness: &Liveness,
        pre: &Preflight,
        threads: Vec<ThreadUsage>,
    ) -> Result<(ThreadStats, RunFacts), Failure> {
        if signal::INTERRUPTED.load(Ordering::Relaxed) {
            return Err(Failure::interrupted());
        }
        if let Some(message) = liveness.lost_message() {
            return Err(Failure::vanished(message));
        }
        if let Some(f) = failure {
            return Err(f);
        }
        let wall_s = (mono_ns() - self.tl.start_ns) as f64 / 1e9;
        let cpu = process_cpu().since(self.cpu_before);
        let mut stats = merged.ok_or_else(|| Failure::other("no worker threads"))?;
        stats.tls.merge(&pre.tls);
        stats.finish();
        let facts = RunFacts {
            cpu,
            wall_s,
            threads,
            preflight_sockets: pre.sockets,
            window_active_ns: self
                .turns
                .map(|t| t.active_ns(self.tl.window_start_ns, self.tl.window_end_ns)),
            interval_active_ns: self.turns.map(|t| {
                t.active_per_interval(
                    self.tl.window_start_ns,
                    self.tl.window_end_ns,
                    self.interval_ns,
                )
            }),
        };
        Ok((stats, facts))
    }
}
