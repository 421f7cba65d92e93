//! `burn=DURATION`: spend an exact amount of the serving thread's CPU time.
//!
//! The spin reads `CLOCK_THREAD_CPUTIME_ID`, not the wall clock: when the thread is
//! preempted on a busy machine the burn lasts longer in wall time but costs exactly the
//! asked CPU time, which is what a CPU-per-request gate measures.

use std::hint::black_box;

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

/// Spin until this thread has spent `ns` more nanoseconds of CPU time.
pub fn burn(ns: u64) {
    if ns == 0 {
        return;
    }
    let start = thread_cpu_ns();
    let mut acc: u64 = 0x9e37_79b9_7f4a_7c15;
    loop {
        // a little arithmetic between clock reads, kept alive by black_box
        for _ in 0..64 {
            acc = black_box(acc.rotate_left(5) ^ 0x5851_f42d_4c95_7f2d);
        }
        if thread_cpu_ns().saturating_sub(start) >= ns {
            break;
        }
    }
    black_box(acc);
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
    fn zero_is_free() {
        let before = thread_cpu_ns();
        burn(0);
        assert!(thread_cpu_ns() - before < 1_000_000);
    }
}
