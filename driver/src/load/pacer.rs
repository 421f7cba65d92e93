//! When a load worker starts its requests, whatever the protocol: the round's phases, the
//! open-loop timetable or the closed loop's next request, the `--requests` quota, the
//! requests of the window still unanswered, the client-side queue, and the thread's clocks
//! over the window. The HTTP/1.1 loop ([`crate::load::worker`]) and the HTTP/2 loop
//! ([`crate::http2::worker`]) keep their connections; this keeps their schedule, so both
//! give the same guarantees (latency from the intended send time, censored warmup requests,
//! a saturated thread's queue dropped).

use std::collections::VecDeque;

use super::conn::InFlight;
use super::plan::Plan;
use super::schedule::Schedule;
use super::stats::{ErrorKind, ThreadStats};
use super::turns::Turns;
use crate::health::{thread_saturated, ThreadClock, ThreadUsage};
use crate::hist;

/// Phase boundaries shared by all threads (absolute monotonic ns).
#[derive(Debug, Clone, Copy)]
pub struct Timeline {
    /// Load starts (warmup begins).
    pub start_ns: u64,
    /// Measured window starts.
    pub window_start_ns: u64,
    /// Measured window ends; no new requests after this.
    pub window_end_ns: u64,
    /// Give up on outstanding requests after this.
    pub hard_end_ns: u64,
}

/// The `--spin` of each worker thread of `plan`: spin only when the gap between a thread's
/// sends is at least 10x the spin window, so busy-polling costs at most ~10% of a core and
/// never pegs a thread at high rates (closed loop: no spin).
pub fn thread_spin_ns(plan: &Plan) -> u64 {
    effective_spin_ns(
        plan.spin_ns,
        plan.rate.map(|r| 1e9 * plan.threads as f64 / r),
    )
}

fn effective_spin_ns(spin_ns: u64, thread_period_ns: Option<f64>) -> u64 {
    match thread_period_ns {
        Some(period) if period >= 10.0 * spin_ns as f64 => spin_ns,
        _ => 0,
    }
}

/// Where a worker's round stands after [`Pacer::settle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Requests are still to be sent or awaited.
    Running,
    /// The window has ended and every request of it is answered or failed.
    Done,
    /// The hard end has come: what is still outstanding is abandoned.
    Abandon,
}

/// One worker thread's schedule of requests (see the module's text).
pub struct Pacer {
    /// The round's phases.
    pub tl: Timeline,
    /// Open loop: the timetable of intended send times (None: closed loop).
    pub schedule: Option<Schedule>,
    /// Requests of the window sent or due and not yet answered or failed.
    pub outstanding: usize,
    /// No new request starts (the window or the quota has ended).
    pub stopped: bool,
    /// Open loop: requests due while no connection could take them, oldest first.
    pub backlog: VecDeque<InFlight>,
    /// Usage over the window, once it has ended.
    pub window_usage: Option<ThreadUsage>,
    /// Unanswered requests of the warmup were censored at the end of the window.
    pub censored_done: bool,
    /// Requests this thread may still start under `--requests` (None: no count).
    quota: Option<u64>,
    /// Snapshot of this thread's clocks when the window started.
    window_clock: Option<ThreadClock>,
    /// Closed loop under `--turn`: the slots in which this side may send (None: always).
    pub turns: Option<Turns>,
}

impl Pacer {
    /// A pacer over `tl`; open loop when `schedule` is given; at most `quota` requests.
    pub fn new(tl: Timeline, schedule: Option<Schedule>, quota: Option<u64>) -> Self {
        Pacer {
            tl,
            schedule,
            outstanding: 0,
            stopped: false,
            backlog: VecDeque::new(),
            window_usage: None,
            censored_done: false,
            quota,
            window_clock: None,
            turns: None,
        }
    }

    /// The pacer of worker `thread` of `plan`: its share of the rate's timetable (open
    /// loop) and of `--requests`.
    pub fn for_thread(plan: &Plan, tl: Timeline, thread: usize) -> Self {
        let schedule = plan.rate.map(|rate| {
            Schedule::new(
                plan.arrival,
                rate,
                tl.start_ns,
                thread,
                plan.threads,
                plan.seed,
            )
        });
        let mut pacer = Pacer::new(tl, schedule, plan.requests_of(thread));
        pacer.turns = plan.turns;
        pacer
    }

    /// Empty measurements of this thread's round.
    pub fn thread_stats(&self, plan: &Plan) -> ThreadStats {
        ThreadStats::new(
            self.tl.window_start_ns,
            plan.interval_ns,
            plan.interval_count(),
            self.open_loop(),
        )
    }

    /// Requests are sent on a timetable.
    pub fn open_loop(&self) -> bool {
        self.schedule.is_some()
    }

    /// `t` lies in the measured window.
    pub fn in_window(&self, t: u64) -> bool {
        t >= self.tl.window_start_ns && t < self.tl.window_end_ns
    }

    /// No request starts once the window has ended; the round is done when every request
    /// of the window has ended, or abandoned at the hard end.
    pub fn settle(&mut self, now: u64) -> Settle {
        if !self.stopped && now >= self.tl.window_end_ns {
            self.stopped = true;
        }
        if self.stopped && self.outstanding == 0 {
            Settle::Done
        } else if now >= self.tl.hard_end_ns {
            Settle::Abandon
        } else {
            Settle::Running
        }
    }

    /// The latest a worker may sleep until at `now`: its next timeout scan, the window's
    /// start and end, the hard end, and at most `max_sleep_ns` (so interruption is noticed).
    /// The timetable's next send is the worker's to add (it may spin before it).
    pub fn wake_by(&self, now: u64, next_scan_ns: u64, max_sleep_ns: u64) -> u64 {
        let mut wake = next_scan_ns
            .min(self.tl.hard_end_ns)
            .min(now + max_sleep_ns);
        if self.window_clock.is_none() {
            wake = wake.min(self.tl.window_start_ns);
        }
        if !self.stopped {
            wake = wake.min(self.tl.window_end_ns);
        }
        wake
    }

    /// Count one more request against `--requests`; false once the count is used up.
    fn take_quota(&mut self) -> bool {
        match &mut self.quota {
            Some(0) => false,
            Some(left) => {
                *left -= 1;
                true
            }
            None => true,
        }
    }

    /// Closed loop: the request a freed connection sends at `now`; None (and stopped) once
    /// the window or the quota has ended.
    pub fn closed_request(&mut self, now: u64) -> Option<InFlight> {
        if self.stopped || now >= self.tl.window_end_ns || !self.take_quota() {
            self.stopped = true;
            return None;
        }
        if self.turns.is_some_and(|t| !t.active(now)) {
            return None; // the other side's slot: the connection waits for this side's next one
        }
        let in_window = self.in_window(now);
        if in_window {
            self.outstanding += 1;
        }
        Some(InFlight {
            intended_ns: now,
            sent_ns: 0,
            in_window,
        })
    }

    /// Open loop: the next request whose intended time has come by `now`, its schedule lag
    /// recorded in `stats`; None when none is due, or (stopped) once the window or the quota
    /// has ended.
    pub fn next_due(&mut self, now: u64, stats: &mut ThreadStats) -> Option<InFlight> {
        let due = self.schedule.as_ref()?.peek();
        if due > now {
            return None;
        }
        if due >= self.tl.window_end_ns || !self.take_quota() {
            self.stopped = true;
            return None;
        }
        if let Some(schedule) = &mut self.schedule {
            schedule.advance();
        }
        let in_window = self.in_window(due);
        if in_window {
            stats.scheduled += 1;
            hist::record(&mut stats.lag, now - due);
            self.outstanding += 1;
        }
        Some(InFlight {
            intended_ns: due,
            sent_ns: 0,
            in_window,
        })
    }

    /// Open loop: `req` waits in the client-side queue (no connection could take it).
    pub fn queue(&mut self, req: InFlight, stats: &mut ThreadStats) {
        if req.in_window {
            stats.queued += 1;
        }
        self.backlog.push_back(req);
    }

    /// `req` was never sent (its connection went away gracefully): open loop, it goes back
    /// to the front of the queue; closed loop, it is taken back from the window and the
    /// quota (the connection's stream slots start again on the next connection).
    pub fn take_back(&mut self, req: InFlight) {
        if self.open_loop() {
            self.backlog.push_front(req);
            return;
        }
        if req.in_window {
            self.outstanding -= 1;
        }
        if let Some(left) = &mut self.quota {
            *left += 1;
        }
    }

    /// `req` ended in an error of `kind` (counted when it belongs to the window).
    pub fn finish_error(&mut self, req: InFlight, kind: ErrorKind, stats: &mut ThreadStats) {
        if req.in_window {
            stats.error(kind, req.intended_ns);
            self.outstanding -= 1;
        }
    }

    /// Snapshot this thread's clocks at the window's start and end. A thread saturated over
    /// the window then drops what is still in its queue instead of spending the drain
    /// (up to `--timeout`) on requests it could not send in time.
    pub fn track_window(&mut self, now: u64, stats: &mut ThreadStats) {
        let Some(start) = self.window_clock else {
            if now >= self.tl.window_start_ns {
                self.window_clock = Some(ThreadClock::now(now));
            }
            return;
        };
        if self.window_usage.is_some() || now < self.tl.window_end_ns {
            return;
        }
        let mut usage = start.usage_until(&ThreadClock::now(now));
        if let Some(turns) = self.turns {
            // the thread waits out the other side's slots: its use of its own slots is what
            // tells whether it was the limit there
            let active = turns.active_ns(start.at_ns(), now);
            if active > 0 {
                usage = usage.scaled(now.saturating_sub(start.at_ns()) as f64 / active as f64);
            }
        }
        self.window_usage = Some(usage);
        if self.open_loop() && thread_saturated(true, &usage) {
            self.abandon_backlog(stats);
        }
    }

    /// The window has ended: requests sent (or, open loop, due) before it started and still
    /// unanswered (`pending` on the connections, and the queue) are accounted for by no
    /// response or error of the window, so they would vanish from the round. Each becomes a
    /// censored latency sample at its age at the end of the window (a lower bound of its
    /// latency). Requests of the window are still awaited (drain) and end as a response or
    /// an error.
    pub fn censor_unanswered(
        &mut self,
        pending: impl IntoIterator<Item = InFlight>,
        stats: &mut ThreadStats,
    ) {
        self.censored_done = true;
        let (start, end) = (self.tl.window_start_ns, self.tl.window_end_ns);
        for r in pending.into_iter().chain(self.backlog.iter().copied()) {
            if !r.in_window && r.intended_ns < start {
                stats.censor(r.intended_ns, end);
            }
        }
    }

    /// Requests that waited in the client-side queue `timeout_ns` past their intended time
    /// end as queue timeouts.
    pub fn expire_backlog(&mut self, now: u64, timeout_ns: u64, stats: &mut ThreadStats) {
        while let Some(r) = self.backlog.front().copied() {
            if r.intended_ns + timeout_ns > now {
                break;
            }
            self.backlog.pop_front();
            self.finish_error(r, ErrorKind::QueueTimeout, stats);
        }
    }

    /// Every request still in the client-side queue ends as a queue timeout.
    pub fn abandon_backlog(&mut self, stats: &mut ThreadStats) {
        while let Some(r) = self.backlog.pop_front() {
            self.finish_error(r, ErrorKind::QueueTimeout, stats);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::effective_spin_ns;

    #[test]
    fn spin_only_when_sends_are_far_apart() {
        assert_eq!(
            effective_spin_ns(50_000, Some(1_000_000.0)),
            50_000,
            "1000 rps per thread"
        );
        assert_eq!(
            effective_spin_ns(50_000, Some(100_000.0)),
            0,
            "10k rps per thread"
        );
        assert_eq!(effective_spin_ns(50_000, None), 0, "closed loop");
        assert_eq!(effective_spin_ns(0, Some(1e9)), 0);
    }
}
