//! Fine turns between two closed loops (`--turn`, `--turn-side`): two driver processes on one
//! host share the time in slots of `--turn` aligned on the host's monotonic clock, in ABBA
//! order (side 0 in slots 0 and 3 of every four, side 1 in slots 1 and 2), each sending only
//! in its own slots. A neighbour's burst longer than a few slots lands on both sides alike and
//! cancels in their ratio, where rounds taken in turns of seconds each catch different bursts.

/// Which side owns slot `k` (ABBA over every four slots).
const PATTERN: [u8; 4] = [0, 1, 1, 0];

/// The sides that can take turns.
pub const SIDES: u8 = 2;

/// One side's share of the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turns {
    /// Length of a slot (ns).
    pub turn_ns: u64,
    /// This process's side (0 or 1).
    pub side: u8,
}

impl Turns {
    /// The slot that holds monotonic time `t`.
    fn slot(&self, t: u64) -> u64 {
        t / self.turn_ns
    }

    /// Whether `k` is one of this side's slots.
    fn owns(&self, k: u64) -> bool {
        PATTERN[(k % 4) as usize] == self.side
    }

    /// Whether this side may send at monotonic time `now`.
    pub fn active(&self, now: u64) -> bool {
        self.owns(self.slot(now))
    }

    /// When this side's next slot starts after `now` (`now` itself when it is active).
    pub fn next_start(&self, now: u64) -> u64 {
        let mut k = self.slot(now);
        if self.owns(k) {
            return now;
        }
        while !self.owns(k) {
            k += 1;
        }
        k * self.turn_ns
    }

    /// How much of `[from, to)` lies in this side's slots (ns).
    pub fn active_ns(&self, from: u64, to: u64) -> u64 {
        if to <= from {
            return 0;
        }
        let (first, last) = (self.slot(from), self.slot(to - 1));
        (first..=last)
            .filter(|&k| self.owns(k))
            .map(|k| {
                let start = (k * self.turn_ns).max(from);
                let end = ((k + 1) * self.turn_ns).min(to);
                end - start
            })
            .sum()
    }

    /// How much of each interval of `interval_ns` from `from` up to `to` lies in this side's
    /// slots (ns): the time a per-interval rate of this side is a rate over.
    pub fn active_per_interval(&self, from: u64, to: u64, interval_ns: u64) -> Vec<u64> {
        let step = interval_ns.max(1);
        (from..to)
            .step_by(step as usize)
            .map(|start| self.active_ns(start, start.saturating_add(step).min(to)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIDE0: Turns = Turns {
        turn_ns: 10,
        side: 0,
    };
    const SIDE1: Turns = Turns {
        turn_ns: 10,
        side: 1,
    };

    #[test]
    fn slots_go_abba() {
        let owners: Vec<u8> = (0..8)
            .map(|k| if SIDE0.active(k * 10 + 5) { 0 } else { 1 })
            .collect();
        assert_eq!(owners, vec![0, 1, 1, 0, 0, 1, 1, 0]);
        for t in 0..200 {
            assert_ne!(
                SIDE0.active(t),
                SIDE1.active(t),
                "exactly one side owns t={t}"
            );
        }
    }

    #[test]
    fn next_start_is_now_or_the_next_owned_slot() {
        assert_eq!(SIDE0.next_start(3), 3);
        assert_eq!(SIDE0.next_start(12), 30);
        assert_eq!(SIDE1.next_start(3), 10);
        assert_eq!(SIDE1.next_start(31), 50);
        assert_eq!(SIDE1.next_start(25), 25);
    }

    #[test]
    fn active_time_splits_a_window_between_the_sides() {
        for (from, to) in [(0, 40), (3, 97), (15, 16), (7, 7), (0, 1000)] {
            assert_eq!(
                SIDE0.active_ns(from, to) + SIDE1.active_ns(from, to),
                to - from
            );
        }
        assert_eq!(SIDE0.active_ns(0, 40), 20);
        assert_eq!(SIDE0.active_ns(5, 35), 10);
        assert_eq!(SIDE1.active_ns(5, 35), 20);
    }

    #[test]
    fn each_interval_gets_its_own_share_of_the_slots() {
        // slots of 10 from 0: side 0 owns [0,10) [30,50) [70,90) ...
        assert_eq!(SIDE0.active_per_interval(0, 100, 25), vec![10, 20, 5, 15]);
        assert_eq!(SIDE1.active_per_interval(0, 100, 25), vec![15, 5, 20, 10]);
        // a last interval cut short by the window's end
        assert_eq!(SIDE0.active_per_interval(5, 60, 40), vec![20, 5]);
        for (from, to, step) in [(3, 997, 100), (0, 1000, 7), (50, 51, 10)] {
            let zero = SIDE0.active_per_interval(from, to, step);
            let one = SIDE1.active_per_interval(from, to, step);
            assert_eq!(zero.len(), (to - from).div_ceil(step) as usize);
            assert_eq!(zero.iter().sum::<u64>(), SIDE0.active_ns(from, to));
            for (a, b) in zero.iter().zip(&one) {
                assert!(a + b <= step, "the sides share each interval");
            }
        }
    }
}
