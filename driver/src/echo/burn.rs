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
//! is therefore the process's, the fastest trial of any of its threads so far, with one more
//! trial every [`RECALIBRATE_EVERY`] short burns of a thread.

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
/// One more calibration trial after this many short burns of a thread (about 0.1% more CPU
/// at 1 µs burns, less at longer ones).
pub const RECALIBRATE_EVERY: u64 = 1 << 14;

/// Spin iterations per nanosecond of CPU time, the fastest trial of this process so far, as
/// the bits of an `f64` (0 until calibrated; positive floats order like their bits).
static ITERATIONS_PER_NS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Short burns this thread has run (a calibration trial every [`RECALIBRATE_EVERY`]).
    static SHORT_BURNS: Cell<u64> = const { Cell::new(0) };
}

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

/// Spend `ns` nanoseconds of this thread's CPU time.
pub fn burn(ns: u64) {
    if ns == 0 {
        return;
    }
    if ns < CLOCKED_FROM_NS {
        let count = SHORT_BURNS.with(|burns| {
            burns.set(burns.get() + 1);
            burns.get()
        });
        if count.is_multiple_of(RECALIBRATE_EVERY) {
            calibration_trial();
        }
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
        // A clock read costs about a microsecond here: one per 1 us burn would double it. Counted,
        // not timed, so a busy machine cannot fail it (a timed 10,000-burn version once measured
        // 1.88x on a loaded CI runner with no change).
        iterations_per_ns(); // the first calibration reads the clock, once per process
        let reads = || CLOCK_READS.with(Cell::get);
        SHORT_BURNS.with(|burns| burns.set(0));
        let before = reads();
        for _ in 0..RECALIBRATE_EVERY - 1 {
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
    fn short_burns_calibrate_again_and_keep_the_fastest() {
        let first = iterations_per_ns();
        let reads = || CLOCK_READS.with(Cell::get);
        SHORT_BURNS.with(|burns| burns.set(RECALIBRATE_EVERY - 1));
        let before = reads();
        burn(1_000); // the RECALIBRATE_EVERY-th short burn of this thread
        assert_eq!(reads() - before, 2, "one more calibration trial");
        assert!(
            iterations_per_ns() >= first,
            "a slower trial lowered the calibration"
        );
    }

    #[test]
    fn zero_is_free() {
        let before = thread_cpu_ns();
        burn(0);
        assert!(thread_cpu_ns() - before < 1_000_000);
    }
}
