//! `burn=DURATION`: spend an exact amount of the serving thread's CPU time.
//!
//! The thread-CPU clock (`CLOCK_THREAD_CPUTIME_ID`), not the wall clock, is the measure: a
//! preempted thread burns longer in wall time but the same CPU time, which is what a
//! CPU-per-request gate measures. Reading it is a system call (about a microsecond here), so
//! burns under [`CLOCKED_FROM_NS`] only run a calibrated number of spin iterations, and longer
//! ones spin half of what is left between reads (a handful of reads, an overshoot of one short
//! batch).
//!
//! A counted spin alone is not a measure of CPU time on a shared host: on a KVM guest the
//! same count took 1x-2x the CPU time from one second to the next (`burn=90us` answered at
//! 4,559-7,985 requests/s over one connection, `burn=150us`, clocked, at 5,285-5,381), and
//! two identical echo containers whose threads had calibrated at different moments burned
//! different amounts (an A/A throughput gate between them read 1.06-1.19x). The calibration
//! is therefore the process's, the fastest trial of any of its threads so far. One more trial
//! is due every [`RECALIBRATE_EVERY`] short burns of the process, and an event loop runs it
//! when it has nothing to serve ([`calibrate_if_due`]): a trial takes about a millisecond, which
//! inside a request would be a latency outlier the gate then measures.

#[cfg(test)]
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

/// Burns from this long on check the thread-CPU clock instead of only counting iterations.
pub const CLOCKED_FROM_NS: u64 = 5_000;
/// The fewest spin iterations between two reads of the clock (a fraction of a microsecond).
const MIN_BATCH: f64 = 256.0;
/// Iterations of one calibration trial (about a millisecond).
const CALIBRATION_ITERATIONS: u64 = 1 << 20;
/// Calibration trials on first use; the fastest wins (a preempted or contended trial only looks slower).
const CALIBRATION_TRIALS: usize = 5;
/// One more calibration trial is due after this many short burns of the process (at most
/// about 0.1% more CPU at 1 µs burns, less at longer ones).
pub const RECALIBRATE_EVERY: u64 = 1 << 14;

/// Spin iterations per nanosecond of CPU time, the fastest trial of this process so far, as
/// the bits of an `f64` (0 until calibrated; positive floats order like their bits).
static ITERATIONS_PER_NS: AtomicU64 = AtomicU64::new(0);

/// Short burns this process has run.
static SHORT_BURNS: AtomicU64 = AtomicU64::new(0);
/// [`SHORT_BURNS`] when the last calibration trial was claimed.
static CALIBRATED_AT: AtomicU64 = AtomicU64::new(0);

#[cfg(test)]
thread_local! {
    /// Reads of the thread-CPU clock on this thread (tests only).
    static CLOCK_READS: Cell<u64> = const { Cell::new(0) };
}

/// CPU time this thread has consumed, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    #[cfg(test)]
    CLOCK_READS.with(|reads| reads.set(reads.get() + 1));
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Run `iterations` of a little arithmetic the compiler cannot remove.
fn spin(iterations: u64) {
    let mut acc: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..iterations {
        acc = black_box(acc.rotate_left(5) ^ 0x5851_f42d_4c95_7f2d);
    }
    black_box(acc);
}

/// One calibration trial: spin iterations per nanosecond of this thread's CPU time, kept
/// in the process's figure when it is the fastest so far.
fn calibration_trial() {
    let start = thread_cpu_ns();
    spin(CALIBRATION_ITERATIONS);
    let spent = thread_cpu_ns().saturating_sub(start).max(1);
    let rate = CALIBRATION_ITERATIONS as f64 / spent as f64;
    ITERATIONS_PER_NS.fetch_max(rate.to_bits(), Ordering::Relaxed);
}

/// Spin iterations per nanosecond of CPU time, calibrated on the process's first use.
fn iterations_per_ns() -> f64 {
    if ITERATIONS_PER_NS.load(Ordering::Relaxed) == 0 {
        for _ in 0..CALIBRATION_TRIALS {
            calibration_trial();
        }
    }
    f64::from_bits(ITERATIONS_PER_NS.load(Ordering::Relaxed))
}

/// Whether [`RECALIBRATE_EVERY`] short burns have run since the last calibration trial.
pub fn calibration_due() -> bool {
    let last = CALIBRATED_AT.load(Ordering::Relaxed);
    SHORT_BURNS.load(Ordering::Relaxed).saturating_sub(last) >= RECALIBRATE_EVERY
}

/// Run one calibration trial when one is due and no other thread has claimed it; call it where
/// a thread has nothing else to do (an event loop with no events ready), never inside a request.
/// True when this call ran the trial.
pub fn calibrate_if_due() -> bool {
    let burns = SHORT_BURNS.load(Ordering::Relaxed);
    let last = CALIBRATED_AT.load(Ordering::Relaxed);
    if burns.saturating_sub(last) < RECALIBRATE_EVERY {
        return false;
    }
    if CALIBRATED_AT
        .compare_exchange(last, burns, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        return false; // another thread claimed this trial
    }
    calibration_trial();
    true
}

/// Spend `ns` nanoseconds of this thread's CPU time.
pub fn burn(ns: u64) {
    if ns == 0 {
        return;
    }
    if ns < CLOCKED_FROM_NS {
        SHORT_BURNS.fetch_add(1, Ordering::Relaxed);
        spin((ns as f64 * iterations_per_ns()).round() as u64);
        return;
    }
    let rate = iterations_per_ns();
    let start = thread_cpu_ns();
    loop {
        let left = ns.saturating_sub(thread_cpu_ns().saturating_sub(start));
        if left == 0 {
            return;
        }
        // half of what is left: a spell at half the calibrated speed still does not overshoot
        spin((left as f64 * rate / 2.0).max(MIN_BATCH) as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held by the tests that count the process's short burns and trials (tests run in
    /// parallel threads of one process).
    static COUNTERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn burns_at_least_the_asked_cpu_time() {
        let before = thread_cpu_ns();
        burn(20_000_000);
        let spent = thread_cpu_ns() - before;
        assert!(spent >= 20_000_000, "spent {spent} ns");
        assert!(spent < 200_000_000, "spent {spent} ns");
    }

    #[test]
    fn short_burns_read_no_clock() {
        let _counters = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
        // A clock read costs about a microsecond here: one per 1 us burn would double it. Counted,
        // not timed, so a busy machine cannot fail it (a timed 10,000-burn version once measured
        // 1.88x on a loaded CI runner with no change). Past RECALIBRATE_EVERY of them a trial is
        // only due: a burn never runs it.
        iterations_per_ns(); // the first calibration reads the clock, once per process
        let reads = || CLOCK_READS.with(Cell::get);
        let before = reads();
        for _ in 0..RECALIBRATE_EVERY + 1 {
            burn(1_000);
        }
        assert_eq!(reads() - before, 0, "short burns read the thread-CPU clock");
        burn(CLOCKED_FROM_NS);
        assert!(reads() - before >= 2, "a long burn checks the clock");
    }

    #[test]
    fn clocked_burns_spend_at_least_the_asked_cpu_time() {
        for ns in [CLOCKED_FROM_NS, 30_000, 90_000] {
            let before = thread_cpu_ns();
            burn(ns);
            let spent = thread_cpu_ns() - before;
            assert!(spent >= ns, "burn({ns}) spent {spent} ns");
        }
    }

    #[test]
    fn a_due_calibration_runs_once_outside_the_burns_and_keeps_the_fastest() {
        let _counters = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
        let first = iterations_per_ns();
        let reads = || CLOCK_READS.with(Cell::get);
        for _ in 0..RECALIBRATE_EVERY {
            burn(1_000);
        }
        assert!(
            calibration_due(),
            "a trial is due after RECALIBRATE_EVERY short burns"
        );
        let before = reads();
        assert!(calibrate_if_due(), "the due trial runs");
        assert_eq!(reads() - before, 2, "one calibration trial");
        assert!(!calibrate_if_due(), "and only once");
        assert!(
            iterations_per_ns() >= first,
            "a slower trial lowered the calibration"
        );
    }

    #[test]
    fn no_trial_runs_before_one_is_due() {
        let _counters = COUNTERS.lock().unwrap_or_else(|e| e.into_inner());
        CALIBRATED_AT.fetch_max(SHORT_BURNS.load(Ordering::Relaxed), Ordering::Relaxed);
        let reads = || CLOCK_READS.with(Cell::get);
        let before = reads();
        assert!(!calibrate_if_due());
        assert_eq!(reads() - before, 0);
    }

    #[test]
    fn zero_is_free() {
        let before = thread_cpu_ns();
        burn(0);
        assert!(thread_cpu_ns() - before < 1_000_000);
    }
}
