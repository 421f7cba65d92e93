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
use super::pacer::{thread_spin_ns, Pacer, Settle, Timeline};
use super::plan::Plan;
use super::signal::INTERRUPTED;
use super::stats::{ErrorKind, ThreadStats};
use crate::clock::{minimize_timer_slack, mono_ns, set_realtime_fifo, sleep_until, PreciseTimer};
use crate::health::{thread_cpu, ThreadUsage};
use crate::hist;
use crate::tls::diagnose::PLAIN_TO_TLS;

const TIMER: Token = Token(usize::MAX - 1);
/// Wait after a failed connect before trying again on the same slot.
const CONNECT_BACKOFF_NS: u64 = 10_000_000;
/// Longest sleep in epoll (so interruption and window ends are noticed promptly).
const MAX_POLL_NS: u64 = 50_000_000;

/// What a worker hands back.
pub struct WorkerResult {
    /// Measurements.
    pub stats: ThreadStats,
    /// How the thread used its time over the measured window.
    pub window: ThreadUsage,
}

struct Worker {
    plan: Arc<Plan>,
    pace: Pacer,
    poll: Poll,
    timer: Option<PreciseTimer>,
    conns: Vec<ClientConn>,
    available: Vec<usize>,
    retries: VecDeque<usize>,
    stats: ThreadStats,
    scratch: Vec<u8>,
    next_scan_ns: u64,
    scan_period_ns: u64,
    spin_ns: u64,
    /// Signs of life of the target, shared by all workers.
    liveness: Arc<Liveness>,
    /// This worker's signs of life and failed connects.
    watch: Watch,
    /// Closed loop under `--turn`: free connections waiting for this side's next slot.
    waiting: Vec<usize>,
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
    let pace = Pacer::for_thread(&plan, tl, thread);
    let stats = pace.thread_stats(&plan);
    let scan_period_ns = (plan.timeout_ns / 20).clamp(1_000_000, MAX_POLL_NS);
    let spin_ns = thread_spin_ns(&plan);
    let mut w = Worker {
        plan,
        pace,
        poll,
        timer,
        conns,
        available: Vec::new(),
        retries: VecDeque::new(),
        stats,
        scratch: vec![0u8; 64 * 1024],
        next_scan_ns: 0,
        scan_period_ns,
        spin_ns,
        liveness,
        watch: Watch::default(),
        waiting: Vec::new(),
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
    let window = w.pace.window_usage.unwrap_or(ThreadUsage {
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

impl Worker {
    fn run(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        let now = mono_ns();
        self.next_scan_ns = now + self.scan_period_ns;
        if self.pace.open_loop() {
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
            if !self.pace.censored_done && now >= self.pace.tl.window_end_ns {
                let pending = self.conns.iter().filter_map(|c| c.req);
                self.pace.censor_unanswered(pending, &mut self.stats);
            }
            self.pace.track_window(now, &mut self.stats);
            if self.pace.open_loop() && !self.pace.stopped {
                // a worker that wakes late past the window's end still sends what was due inside
                // it (with its lag), so the window holds exactly rate x duration sends
                now = self.dispatch_due(now);
            }
            match self.pace.settle(now) {
                Settle::Running => {}
                Settle::Done => return Ok(()),
                Settle::Abandon => {
                    self.abandon_outstanding();
                    return Ok(());
                }
            }
            if now >= self.next_scan_ns {
                self.scan_timeouts(now);
                self.next_scan_ns = now + self.scan_period_ns;
            }
            self.run_retries(now);
            self.resume_waiting(now);
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

    /// How long epoll may sleep; arms the precise timer for the next send.
    fn poll_timeout(&mut self, now: u64) -> io::Result<Option<std::time::Duration>> {
        let mut wake = self.pace.wake_by(now, self.next_scan_ns, MAX_POLL_NS);
        if let Some(&i) = self.retries.front() {
            wake = wake.min(self.conns[i].retry_at_ns);
        }
        if let (Some(turns), false) = (&self.pace.turns, self.waiting.is_empty()) {
            wake = wake.min(turns.next_start(now));
        }
        if let (Some(sched), false) = (&self.pace.schedule, self.pace.stopped) {
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
        while let Some(req) = self.pace.next_due(now, &mut self.stats) {
            match self.take_available() {
                Some(i) => self.assign(i, req, now),
                None => self.pace.queue(req, &mut self.stats),
            }
        }
        now
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
                self.pace.backlog.push_front(req);
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
            Some(r) => self.finish_error(r, kind),
            None if self.pace.in_window(now) => self.stats.error(kind, now),
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
            self.pace.outstanding -= 1;
        }
        if self.pace.in_window(done) {
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
            self.finish_error(r, kind);
        }
        self.next_work(i, now);
    }

    fn finish_error(&mut self, req: InFlight, kind: ErrorKind) {
        self.pace.finish_error(req, kind, &mut self.stats);
    }

    /// Connection `i` is free: give it the next request, or keep it ready.
    fn next_work(&mut self, i: usize, now: u64) {
        if self.conns[i].retry_at_ns > now && self.conns[i].state == ConnState::Disconnected {
            return; // still backing off; run_retries brings it back
        }
        if self.pace.open_loop() {
            if let Some(req) = self.pace.backlog.pop_front() {
                return self.assign(i, req, now);
            }
            let eager = !self.plan.new_connection_per_request && !self.pace.stopped;
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

    /// Closed loop: connection `i` sends the next request, unless the window or the quota has ended.
    fn closed_next(&mut self, i: usize, now: u64) {
        if let Some(req) = self.pace.closed_request(now) {
            self.assign(i, req, now);
        } else if !self.pace.stopped {
            self.waiting.push(i); // the other side's slot (--turn)
        }
    }

    /// Closed loop under `--turn`: once this side's slot has come, the connections that
    /// waited for it send again.
    fn resume_waiting(&mut self, now: u64) {
        let mine = self.pace.turns.is_some_and(|t| t.active(now));
        if mine || self.pace.stopped {
            for i in std::mem::take(&mut self.waiting) {
                self.closed_next(i, now);
            }
        }
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
        self.pace.expire_backlog(now, timeout, &mut self.stats);
    }

    /// The hard end has come: whatever is still outstanding timed out.
    fn abandon_outstanding(&mut self) {
        for i in 0..self.conns.len() {
            if let Some(r) = self.conns[i].req.take() {
                self.finish_error(r, ErrorKind::Timeout);
            }
        }
        self.pace.abandon_backlog(&mut self.stats);
    }
}
