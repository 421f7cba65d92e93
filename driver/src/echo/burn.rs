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

/// CPU time this thread has consumed, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
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
    fn short_burns_cost_what_they_ask_not_a_clock_read_each() {
        let rate = iterations_per_ns(); // calibrated before the clock starts
        let iterations = (1_000.0 * rate).round() as u64;
        // Short burns against the bare spin they should be, in alternating chunks so that both
        // meet the same machine: another test spinning on a hyperthread sibling slows every
        // iteration (seen: 10 ms of burns taking 17-20 ms of CPU), but both sides alike. A
        // clock read per burn would add about a microsecond to each 1 µs burn: about 2x.
        let (mut burned, mut bare) = (0, 0);
        for _ in 0..10 {
            let before = thread_cpu_ns();
            for _ in 0..1_000 {
                burn(1_000);
            }
            burned += thread_cpu_ns() - before;
            let before = thread_cpu_ns();
            for _ in 0..1_000 {
                spin(iterations);
            }
            bare += thread_cpu_ns() - before;
        }
        // 10 ms asked; the fastest calibration trial sets the pace, so a busy machine can
        // only make it slower
        assert!(burned >= 8_000_000, "spent {burned} ns for 10 ms asked");
        let ratio = burned as f64 / bare as f64;
        assert!(
            ratio < 1.4,
            "10,000 burns of 1 us took {ratio:.2}x the bare spins ({burned} vs {bare} ns)"
        );
    }

    #[test]
    fn zero_is_free() {
        let before = thread_cpu_ns();
        burn(0);
        assert!(thread_cpu_ns() - before < 1_000_000);
    }
}
