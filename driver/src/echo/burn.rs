//! `burn=DURATION`: spend an exact amount of the serving thread's CPU time.
//!
//! Short burns (under [`CLOCKED_FROM_NS`]) run a fixed number of spin iterations, calibrated
//! once per thread against `CLOCK_THREAD_CPUTIME_ID`: reading that clock is a system call
//! costing about a microsecond here, so a loop that checked it would overshoot a 1 µs burn
//! several times over. Long burns check the clock between batches of iterations, where the
//! overshoot is a small fraction. Either way the thread-CPU clock, not the wall clock, is
//! the measure: a preempted thread burns longer in wall time but the same CPU time, which is
//! what a CPU-per-request gate measures.

use std::cell::Cell;
use std::hint::black_box;

/// Burns from this long on check the thread-CPU clock instead of counting iterations.
pub const CLOCKED_FROM_NS: u64 = 100_000;
/// Iterations of one calibration trial (about a millisecond).
const CALIBRATION_ITERATIONS: u64 = 1 << 20;
/// Calibration trials; the fastest wins (a preempted or contended trial only looks slower).
const CALIBRATION_TRIALS: usize = 5;

thread_local! {
    /// Spin iterations per nanosecond of CPU time on this thread (0 until calibrated).
    static ITERATIONS_PER_NS: Cell<f64> = const { Cell::new(0.0) };
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

/// Spin iterations per nanosecond of this thread's CPU time, measured on first use.
fn iterations_per_ns() -> f64 {
    ITERATIONS_PER_NS.with(|rate| {
        if rate.get() <= 0.0 {
            let mut best: f64 = 0.0;
            for _ in 0..CALIBRATION_TRIALS {
                let start = thread_cpu_ns();
                spin(CALIBRATION_ITERATIONS);
                let spent = thread_cpu_ns().saturating_sub(start).max(1);
                best = best.max(CALIBRATION_ITERATIONS as f64 / spent as f64);
            }
            rate.set(best);
        }
        rate.get()
    })
}

/// Spend `ns` nanoseconds of this thread's CPU time.
pub fn burn(ns: u64) {
    if ns == 0 {
        return;
    }
    if ns < CLOCKED_FROM_NS {
        spin((ns as f64 * iterations_per_ns()).round() as u64);
        return;
    }
    let start = thread_cpu_ns();
    while thread_cpu_ns().saturating_sub(start) < ns {
        spin(1024);
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
        iterations_per_ns(); // the calibration reads the clock, once per thread
        let reads = || CLOCK_READS.with(Cell::get);
        let before = reads();
        for _ in 0..10_000 {
            burn(1_000);
        }
        assert_eq!(reads() - before, 0, "short burns read the thread-CPU clock");
        burn(CLOCKED_FROM_NS);
        assert!(reads() - before >= 2, "a long burn checks the clock");
    }

    #[test]
    fn zero_is_free() {
        let before = thread_cpu_ns();
        burn(0);
        assert!(thread_cpu_ns() - before < 1_000_000);
    }
}
