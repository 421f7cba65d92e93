//! The per-thread load event loop (mio/epoll): closed loop keeps every connection busy;
//! open loop sends on a precise timetable (timerfd + optional spin) and measures latency
//! from the intended send time. Requests of the warmup still unanswered when the window
//! ends are censored samples; a target that stops accepting connections ends the round.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use super::conn::{ClientConn, ConnState, InFlight, ReadOutcome};
use super::liveness::{ConnectError, Liveness, Watch};
use super::plan::Plan;
use super::schedule::Schedule;
use super::signal::INTERRUPTED;
use super::stats::{ErrorKind, ThreadStats};
use crate::clock::{minimize_timer_slack, mono_ns, set_realtime_fifo, sleep_until, PreciseTimer};
use crate::health::{thread_cpu, thread_saturated, ThreadClock, ThreadUsage};
use crate::hist;
use crate::tls::diagnose::PLAIN_TO_TLS;

const TIMER: Token = Token(usize::MAX - 1);
/// Wait after a failed connect before trying again on the same slot.
const CONNECT_BACKOFF_NS: u64 = 10_000_000;
/// Longest sleep in epoll (so interruption and window ends are noticed promptly).
const MAX_POLL_NS: u64 = 50_000_000;

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

/// What a worker hands back.
pub struct WorkerResult {
    /// Measurements.
    pub stats: ThreadStats,
    /// How the thread used its time over the measured window.
    pub window: ThreadUsage,
}

struct Worker {
    plan: Arc<Plan>,
    tl: Timeline,
    poll: Poll,
    timer: Option<PreciseTimer>,
    conns: Vec<ClientConn>,
    available: Vec<usize>,
    backlog: VecDeque<InFlight>,
    retries: VecDeque<usize>,
    schedule: Option<Schedule>,
    stats: ThreadStats,
    outstanding: usize,
    stopped: bool,
    /// Requests this thread may still start under `--requests` (None: no count).
    quota: Option<u64>,
    scratch: Vec<u8>,
    next_scan_ns: u64,
    scan_period_ns: u64,
    spin_ns: u64,
    /// Snapshot of this thread's clocks when the window started.
    window_clock: Option<ThreadClock>,
    /// Usage over the window, once it has ended.
    window_usage: Option<ThreadUsage>,
    /// Unanswered requests of the warmup were censored at the end of the window.
    censored_done: bool,
    /// Signs of life of the target, shared by all workers.
    liveness: Arc<Liveness>,
    /// This worker's signs of life and failed connects.
    watch: Watch,
}

/// Run one worker thread until its share of the window is measured.
pub fn run_worker(
    plan: Arc<Plan>,
    tl: Timeline,
    thread: usize,
    conns: Vec<ClientConn>,
    liveness: Arc<Liveness>,
) -> io::Result<WorkerResult> {
    minimize_timer_slack();
    if plan.realtime {
        set_realtime_fifo()?;
    }
    let poll = Poll::new()?;
    let open = plan.rate.is_some();
    let timer = if open {
        let t = PreciseTimer::new()?;
        poll.registry()
            .register(&mut SourceFd(&t.raw_fd()), TIMER, Interest::READABLE)?;
        Some(t)
    } else {
        None
    };
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
    let stats = ThreadStats::new(
        tl.window_start_ns,
        plan.interval_ns,
        plan.interval_count(),
        open,
    );
    let scan_period_ns = (plan.timeout_ns / 20).clamp(1_000_000, MAX_POLL_NS);
    let plan_spin = (
        plan.spin_ns,
        plan.rate.map(|r| 1e9 * plan.threads as f64 / r),
    );
    let plan_quota = plan.requests_of(thread);
    let mut w = Worker {
        plan,
        tl,
        poll,
        timer,
        conns,
        available: Vec::new(),
        backlog: VecDeque::new(),
        retries: VecDeque::new(),
        schedule,
        stats,
        outstanding: 0,
        stopped: false,
        quota: plan_quota,
        scratch: vec![0u8; 64 * 1024],
        next_scan_ns: 0,
        scan_period_ns,
        spin_ns: effective_spin_ns(&plan_spin),
        window_clock: None,
        window_usage: None,
        censored_done: false,
        liveness,
        watch: Watch::default(),
    };
    for i in 0..w.conns.len() {
        if let Some(stream) = &mut w.conns[i].stream {
            w.poll.registry().register(
                stream,
                Token(i),
                Interest::READABLE | Interest::WRITABLE,
            )?;
        }
    }
    let cpu_before = thread_cpu();
    sleep_until(tl.start_ns);
    let started = mono_ns();
    w.run()?;
    let wall = mono_ns() - started;
    let cpu = thread_cpu().since(cpu_before);
    w.stats.cpu = cpu;
    w.stats.wall_ns = wall;
    w.stats.finish();
    // Only an interrupted run ends without a window measurement; fall back to the run.
    let window = w.window_usage.unwrap_or(ThreadUsage {
        cpu_util: if wall > 0 {
            cpu.total() / (wall as f64 / 1e9)
        } else {
            0.0
        },
        busy_util: None,
    });
    Ok(WorkerResult {
        stats: w.stats,
        window,
    })
}

/// Spin only when the gap between this thread's sends is at least 10x the spin window,
/// so busy-polling costs at most ~10% of a core and never pegs a thread at high rates.
fn effective_spin_ns(&(spin_ns, thread_period_ns): &(u64, Option<f64>)) -> u64 {
    match thread_period_ns {
        Some(period) if period >= 10.0 * spin_ns as f64 => spin_ns,
        _ => 0,
    }
}

impl Worker {
    fn open_loop(&self) -> bool {
        self.schedule.is_some()
    }

    fn in_window(&self, t: u64) -> bool {
        t >= self.tl.window_start_ns && t < self.tl.window_end_ns
    }

    fn run(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        let now = mono_ns();
        self.next_scan_ns = now + self.scan_period_ns;
        if self.open_loop() {
            self.available = (0..self.conns.len()).rev().collect();
        } else {
            for i in 0..self.conns.len() {
                self.closed_next(i, now);
            }
        }
        loop {
            if INTERRUPTED.load(Ordering::Relaxed) || self.liveness.is_lost() {
                return Ok(());
            }
            let mut now = mono_ns();
            if let Some(message) = self
                .watch
                .vanished(now, &self.liveness, self.plan.timeout_ns)
            {
                self.liveness.declare_lost(message);
                return Ok(());
            }
            if !self.censored_done && now >= self.tl.window_end_ns {
                self.censor_unanswered();
            }
            self.track_window(now);
            if self.open_loop() && !self.stopped {
                // a worker that wakes late past the window's end still sends what was due inside
                // it (with its lag), so the window holds exactly rate x duration sends
                now = self.dispatch_due(now);
            }
            if !self.stopped && now >= self.tl.window_end_ns {
                self.stopped = true;
            }
            if self.stopped && self.outstanding == 0 {
                return Ok(());
            }
            if now >= self.tl.hard_end_ns {
                self.abandon_outstanding(now);
                return Ok(());
            }
            if now >= self.next_scan_ns {
                self.scan_timeouts(now);
                self.next_scan_ns = now + self.scan_period_ns;
            }
            self.run_retries(now);
            let timeout = self.poll_timeout(now)?;
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            for ev in events.iter() {
                let token = ev.token();
                if token == TIMER {
                    if let Some(t) = &mut self.timer {
                        t.acknowledge();
                    }
                    continue;
                }
                let readable = ev.is_readable() || ev.is_read_closed() || ev.is_error();
                self.on_event(token.0, readable, ev.is_writable());
            }
        }
    }

    /// The window has ended: requests sent (or, open loop, due) before it started and still
    /// unanswered are accounted for by no response or error of the window, so they would
    /// vanish from the round. Each becomes a censored latency sample at its age at the end
    /// of the window (a lower bound of its latency). Requests of the window are still
    /// awaited (drain) and end as a response or an error.
    fn censor_unanswered(&mut self) {
        self.censored_done = true;
        let end = self.tl.window_end_ns;
        let pending = self.conns.iter().filter_map(|c| c.req);
        for r in pending.chain(self.backlog.iter().copied()) {
            if !r.in_window && r.intended_ns < self.tl.window_start_ns {
                self.stats.censor(r.intended_ns, end);
            }
        }
    }

    /// Snapshot this thread's clocks at the window's start and end. A thread saturated over
    /// the window then drops what is still in its queue instead of spending the drain
    /// (up to `--timeout`) on requests it could not send in time.
    fn track_window(&mut self, now: u64) {
        if self.window_clock.is_none() {
            if now >= self.tl.window_start_ns {
                self.window_clock = Some(ThreadClock::now(now));
            }
            return;
        }
        if self.window_usage.is_some() || now < self.tl.window_end_ns {
            return;
        }
        let start = self.window_clock.expect("checked above");
        let usage = start.usage_until(&ThreadClock::now(now));
        self.window_usage = Some(usage);
        if self.open_loop() && thread_saturated(true, &usage) {
            while let Some(r) = self.backlog.pop_front() {
                self.finish_error(r, ErrorKind::QueueTimeout, now);
            }
        }
    }

    /// How long epoll may sleep; arms the precise timer for the next send.
    fn poll_timeout(&mut self, now: u64) -> io::Result<Option<std::time::Duration>> {
        let mut wake = self
            .next_scan_ns
            .min(self.tl.hard_end_ns)
            .min(now + MAX_POLL_NS);
        if self.window_clock.is_none() {
            wake = wake.min(self.tl.window_start_ns);
        }
        if !self.stopped {
            wake = wake.min(self.tl.window_end_ns);
        }
        if let Some(&i) = self.retries.front() {
            wake = wake.min(self.conns[i].retry_at_ns);
        }
        if let (Some(sched), false) = (&self.schedule, self.stopped) {
            // Within the spin window, busy-poll epoll (zero timeout) so responses are still
            // read and timestamped while we wait for the send time.
            let wake_at = sched.peek().saturating_sub(self.spin_ns);
            if wake_at <= now {
                return Ok(Some(std::time::Duration::ZERO));
            }
            if let Some(t) = &mut self.timer {
                t.arm_at(wake_at)?;
            }
        }
        Ok(Some(std::time::Duration::from_nanos(
            wake.saturating_sub(now),
        )))
    }

    /// Open loop: hand out every request whose intended time has come.
    fn dispatch_due(&mut self, now: u64) -> u64 {
        loop {
            let Some(sched) = &mut self.schedule else {
                return now;
            };
            let due = sched.peek();
            if due > now {
                return now;
            }
            if due >= self.tl.window_end_ns {
                self.stopped = true;
                return now;
            }
            if !self.take_quota() {
                self.stopped = true;
                return now;
            }
            let Some(sched) = &mut self.schedule else {
                return now;
            };
            sched.advance();
            let in_window = self.in_window(due);
            if in_window {
                self.stats.scheduled += 1;
                hist::record(&mut self.stats.lag, now - due);
                self.outstanding += 1;
            }
            let req = InFlight {
                intended_ns: due,
                sent_ns: 0,
                in_window,
            };
            match self.take_available() {
                Some(i) => self.assign(i, req, now),
                None => {
                    if in_window {
                        self.stats.queued += 1;
                    }
                    self.backlog.push_back(req);
                }
            }
        }
    }

    fn take_available(&mut self) -> Option<usize> {
        while let Some(i) = self.available.pop() {
            let c = &self.conns[i];
            let usable = c.req.is_none()
                && matches!(
                    c.state,
                    ConnState::Idle | ConnState::Disconnected | ConnState::Connecting
                );
            if usable {
                return Some(i);
            }
        }
        None
    }

    /// Give request `req` to connection `i`: send now, or connect first.
    fn assign(&mut self, i: usize, mut req: InFlight, now: u64) {
        match self.conns[i].state {
            ConnState::Idle => self.send(i, req),
            ConnState::Connecting => self.conns[i].req = Some(req),
            ConnState::Disconnected => {
                self.conns[i].req = Some(req);
                self.connect(i, now);
            }
            ConnState::Busy => {
                req.sent_ns = 0;
                self.backlog.push_front(req);
            }
        }
    }

    fn send(&mut self, i: usize, mut req: InFlight) {
        let now = mono_ns();
        req.sent_ns = now;
        let plan = Arc::clone(&self.plan);
        let conn = &mut self.conns[i];
        conn.begin_request(req);
        match conn.write_request(&plan.request) {
            Ok(n) => self.stats.bytes_sent += n as u64,
            Err(kind) => self.fail(i, kind, now),
        }
    }

    fn connect(&mut self, i: usize, now: u64) {
        let first = self.conns[i].connects == 0;
        self.stats.sockets_opened += 1;
        if !first {
            self.stats.reconnects += 1;
        }
        let addr = self.plan.addr;
        match self.conns[i].start_connect(addr, now) {
            Ok(()) => {
                let stream = self.conns[i].stream.as_mut().expect("connecting");
                let interest = Interest::READABLE | Interest::WRITABLE;
                if self
                    .poll
                    .registry()
                    .register(stream, Token(i), interest)
                    .is_err()
                {
                    self.conns[i].close();
                    self.connect_failed(i, ConnectError::of_kind(ErrorKind::Other), now);
                }
            }
            Err(e) => self.connect_failed(i, e, now),
        }
    }

    fn connect_failed(&mut self, i: usize, error: ConnectError, now: u64) {
        self.watch
            .connect_failed(self.conns[i].connect_started_ns, error);
        let kind = error.kind;
        self.close_conn(i);
        let req = self.conns[i].req.take();
        match req {
            Some(r) => self.finish_error(r, kind, now),
            None if self.in_window(now) => self.stats.error(kind, now),
            None => {}
        }
        self.conns[i].retry_at_ns = now + CONNECT_BACKOFF_NS;
        self.retries.push_back(i);
    }

    fn run_retries(&mut self, now: u64) {
        while let Some(&i) = self.retries.front() {
            if self.conns[i].retry_at_ns > now {
                return;
            }
            self.retries.pop_front();
            self.next_work(i, now);
        }
    }

    fn on_event(&mut self, i: usize, readable: bool, writable: bool) {
        let now = mono_ns();
        match self.conns[i].state {
            ConnState::Disconnected => {}
            ConnState::Connecting => match self.conns[i].finish_connect() {
                Ok(true) => self.on_connected(i, now),
                Ok(false) => {}
                Err(e) => self.connect_failed(i, e, now),
            },
            ConnState::Idle => {
                if readable {
                    // The server closed an idle keep-alive connection (or sent garbage).
                    let (outcome, n) =
                        self.conns[i].read_response(&mut self.scratch, self.plan.framing);
                    self.stats.bytes_received += n as u64;
                    self.note_tls(i);
                    if outcome != ReadOutcome::Pending {
                        self.close_conn(i);
                        self.next_work(i, now);
                    }
                }
            }
            ConnState::Busy => {
                let plan = Arc::clone(&self.plan);
                if writable && self.conns[i].write_pending(&plan.request) {
                    match self.conns[i].write_request(&plan.request) {
                        Ok(n) => self.stats.bytes_sent += n as u64,
                        Err(kind) => return self.fail(i, kind, now),
                    }
                }
                if readable {
                    let (outcome, n) = self.conns[i].read_response(&mut self.scratch, plan.framing);
                    self.stats.bytes_received += n as u64;
                    self.note_tls(i);
                    match outcome {
                        ReadOutcome::Pending => {}
                        ReadOutcome::Complete { status, keep_alive } => {
                            self.complete(i, status, keep_alive, mono_ns())
                        }
                        ReadOutcome::Failed(kind) => self.fail(i, kind, now),
                    }
                }
            }
        }
    }

    fn on_connected(&mut self, i: usize, now: u64) {
        self.watch.alive(now, &self.liveness);
        if let Some(target) = &self.plan.tls {
            if let Err(failure) = self.conns[i].start_tls(target, now) {
                self.stats.cause(failure.kind, &failure.message);
                return self.fail(i, failure.kind, now);
            }
        }
        if self.plan.new_connection_per_request {
            if let Some(r) = self.conns[i].req {
                if r.in_window {
                    hist::record(
                        &mut self.stats.connect,
                        now - self.conns[i].connect_started_ns,
                    );
                }
            }
        }
        match self.conns[i].req.take() {
            Some(req) => self.send(i, req),
            None => self.next_work(i, now),
        }
    }

    fn complete(&mut self, i: usize, status: u16, keep_alive: bool, done: u64) {
        let req = self.conns[i]
            .req
            .take()
            .expect("busy connection has a request");
        self.watch.alive(done, &self.liveness);
        self.stats.completed_total += 1;
        if req.in_window {
            self.stats
                .response(req.intended_ns, req.sent_ns, done, status);
            self.outstanding -= 1;
        }
        if self.in_window(done) {
            self.stats.completion(done);
        }
        if keep_alive && !self.plan.new_connection_per_request {
            self.conns[i].state = ConnState::Idle;
        } else {
            self.close_conn(i);
        }
        self.next_work(i, done);
    }

    /// TLS: count a handshake that completed on connection `i` and keep the cause of a
    /// failure (nothing to do on a cleartext connection).
    fn note_tls(&mut self, i: usize) {
        let (handshake, failure) = self.conns[i].take_tls_events();
        if let Some(h) = handshake {
            let in_window = self.conns[i].req.is_some_and(|r| r.in_window);
            self.stats.tls.handshake(&h, in_window.then(mono_ns));
        }
        if let Some(f) = failure {
            self.stats.cause(f.kind, &f.message);
        }
    }

    /// A request on connection `i` failed: count it, drop the socket, move on.
    fn fail(&mut self, i: usize, kind: ErrorKind, now: u64) {
        if kind == ErrorKind::PlainToTls {
            self.stats.cause(kind, PLAIN_TO_TLS);
        }
        let req = self.conns[i].req.take();
        self.close_conn(i);
        if let Some(r) = req {
            self.finish_error(r, kind, now);
        }
        self.next_work(i, now);
    }

    fn finish_error(&mut self, req: InFlight, kind: ErrorKind, _now: u64) {
        if req.in_window {
            self.stats.error(kind, req.intended_ns);
            self.outstanding -= 1;
        }
    }

    /// Connection `i` is free: give it the next request, or keep it ready.
    fn next_work(&mut self, i: usize, now: u64) {
        if self.conns[i].retry_at_ns > now && self.conns[i].state == ConnState::Disconnected {
            return; // still backing off; run_retries brings it back
        }
        if self.open_loop() {
            if let Some(req) = self.backlog.pop_front() {
                return self.assign(i, req, now);
            }
            let eager = !self.plan.new_connection_per_request && !self.stopped;
            if self.conns[i].state == ConnState::Disconnected && eager {
                self.connect(i, now);
                if self.conns[i].state == ConnState::Disconnected {
                    return; // connect failed; retry queued
                }
            }
            self.available.push(i);
        } else {
            self.closed_next(i, now);
        }
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

    fn closed_next(&mut self, i: usize, now: u64) {
        if self.stopped || now >= self.tl.window_end_ns || !self.take_quota() {
            self.stopped = true;
            return;
        }
        let in_window = self.in_window(now);
        if in_window {
            self.outstanding += 1;
        }
        self.assign(
            i,
            InFlight {
                intended_ns: now,
                sent_ns: 0,
                in_window,
            },
            now,
        );
    }

    fn close_conn(&mut self, i: usize) {
        if let Some(stream) = &mut self.conns[i].stream {
            let _ = self.poll.registry().deregister(stream);
        }
        self.conns[i].close();
    }

    /// Count requests past their timeout and recycle their connections.
    fn scan_timeouts(&mut self, now: u64) {
        let timeout = self.plan.timeout_ns;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match (c.state, c.req) {
                (ConnState::Busy, Some(r)) if r.sent_ns + timeout <= now => {
                    self.fail(i, ErrorKind::Timeout, now)
                }
                (ConnState::Connecting, _) if c.connect_started_ns + timeout <= now => {
                    let error = ConnectError::of_kind(ErrorKind::ConnectTimeout);
                    self.connect_failed(i, error, now)
                }
                _ => {}
            }
        }
        while let Some(r) = self.backlog.front().copied() {
            if r.intended_ns + timeout > now {
                break;
            }
            self.backlog.pop_front();
            self.finish_error(r, ErrorKind::QueueTimeout, now);
        }
    }

    /// The hard end has come: whatever is still outstanding timed out.
    fn abandon_outstanding(&mut self, now: u64) {
        for i in 0..self.conns.len() {
            if let Some(r) = self.conns[i].req.take() {
                self.finish_error(r, ErrorKind::Timeout, now);
            }
        }
        while let Some(r) = self.backlog.pop_front() {
            self.finish_error(r, ErrorKind::QueueTimeout, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::effective_spin_ns;

    #[test]
    fn spin_only_when_sends_are_far_apart() {
        assert_eq!(
            effective_spin_ns(&(50_000, Some(1_000_000.0))),
            50_000,
            "1000 rps per thread"
        );
        assert_eq!(
            effective_spin_ns(&(50_000, Some(100_000.0))),
            0,
            "10k rps per thread"
        );
        assert_eq!(effective_spin_ns(&(50_000, None)), 0, "closed loop");
        assert_eq!(effective_spin_ns(&(0, Some(1e9))), 0);
    }
}
