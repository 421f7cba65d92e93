//! Open-loop timetables: when each request of one thread is *intended* to be sent.
//!
//! The global timetable is `origin + n * 1e9 / rate` (constant arrivals); thread `j` of
//! `T` owns the indices `n ≡ j (mod T)`, so the rate is split exactly and the threads
//! interleave. Times are computed from the index, never accumulated, so they do not drift.
//! Poisson arrivals use exponential gaps with mean `T * 1e9 / rate` per thread.

/// Arrival process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrivalKind {
    /// Evenly spaced.
    Constant,
    /// Exponential gaps (memoryless arrivals).
    Poisson,
}

/// The timetable of one thread.
#[derive(Debug, Clone)]
pub struct Schedule {
    kind: ArrivalKind,
    origin_ns: u64,
    global_period_ns: f64,
    threads: u64,
    index: u64,
    next_ns: u64,
    poisson_offset_ns: f64,
    rng: u64,
}

impl Schedule {
    /// Timetable for thread `thread` of `threads` at a global `rate` (requests/s).
    pub fn new(
        kind: ArrivalKind,
        rate: f64,
        origin_ns: u64,
        thread: usize,
        threads: usize,
        seed: u64,
    ) -> Self {
        let mut s = Self {
            kind,
            origin_ns,
            global_period_ns: 1e9 / rate,
            threads: threads.max(1) as u64,
            index: thread as u64,
            next_ns: 0,
            poisson_offset_ns: 0.0,
            rng: splitmix(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        };
        s.next_ns = match kind {
            ArrivalKind::Constant => s.constant_at(s.index),
            ArrivalKind::Poisson => {
                s.poisson_offset_ns = s.exp_gap();
                origin_ns + s.poisson_offset_ns as u64
            }
        };
        s
    }

    /// Intended send time of the next request.
    #[inline]
    pub fn peek(&self) -> u64 {
        self.next_ns
    }

    /// Move to the following request; returns the time just consumed.
    #[inline]
    pub fn advance(&mut self) -> u64 {
        let current = self.next_ns;
        match self.kind {
            ArrivalKind::Constant => {
                self.index += self.threads;
                self.next_ns = self.constant_at(self.index);
            }
            ArrivalKind::Poisson => {
                self.poisson_offset_ns += self.exp_gap();
                self.next_ns = self.origin_ns + self.poisson_offset_ns as u64;
            }
        }
        current
    }

    fn constant_at(&self, n: u64) -> u64 {
        self.origin_ns + (n as f64 * self.global_period_ns).round() as u64
    }

    fn exp_gap(&mut self) -> f64 {
        self.rng = splitmix(self.rng);
        // 53 random bits -> u in (0, 1]
        let u = ((self.rng >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        -u.ln() * self.global_period_ns * self.threads as f64
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_threads_interleave_into_the_global_timetable() {
        let rate = 3_000.0;
        let threads = 3;
        let mut all: Vec<u64> = Vec::new();
        for t in 0..threads {
            let mut s = Schedule::new(ArrivalKind::Constant, rate, 1_000, t, threads, 1);
            for _ in 0..1000 {
                all.push(s.advance());
            }
        }
        all.sort_unstable();
        for (n, t) in all.iter().enumerate() {
            let expect = 1_000 + (n as f64 * 1e9 / rate).round() as u64;
            assert_eq!(*t, expect, "request {n}");
        }
    }

    #[test]
    fn constant_has_exact_count_in_a_window_and_no_drift() {
        let mut s = Schedule::new(ArrivalKind::Constant, 7.0, 0, 0, 1, 1);
        let mut count = 0;
        while s.peek() < 10_000_000_000 {
            s.advance();
            count += 1;
        }
        assert_eq!(count, 70);
        let mut s = Schedule::new(ArrivalKind::Constant, 3.0, 0, 0, 1, 1);
        for _ in 0..3_000_000 {
            s.advance();
        }
        assert_eq!(
            s.peek(),
            1_000_000_000_000_000,
            "no accumulated rounding drift after 1e6 s"
        );
    }

    #[test]
    fn poisson_mean_rate_and_gap_spread() {
        let rate = 10_000.0;
        let mut s = Schedule::new(ArrivalKind::Poisson, rate, 0, 0, 1, 42);
        let n = 200_000;
        let mut prev = s.advance();
        let mut gaps = Vec::with_capacity(n);
        for _ in 0..n {
            let t = s.advance();
            assert!(t >= prev);
            gaps.push((t - prev) as f64);
            prev = t;
        }
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        assert!((mean - 100_000.0).abs() < 1_000.0, "mean gap {mean}");
        // exponential: stdev == mean
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.02,
            "cv {}",
            var.sqrt() / mean
        );
    }

    #[test]
    fn poisson_threads_split_the_rate() {
        let threads = 4;
        let mut total = 0;
        for t in 0..threads {
            let mut s = Schedule::new(ArrivalKind::Poisson, 4_000.0, 0, t, threads, 7);
            while s.peek() < 10_000_000_000 {
                s.advance();
                total += 1;
            }
        }
        assert!((total as f64 - 40_000.0).abs() < 800.0, "{total}");
    }
}
