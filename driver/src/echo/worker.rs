//! The per-thread echo event loop: accept, serve inbound connections, run delay timers
//! and calls to the next service.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use mio::net::TcpListener;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use super::burn;
use super::inbound::{Inbound, Protocol, Step};
use super::upstream::{UpOutcome, UpState, Upstream};
use super::Shared;
use crate::clock::{minimize_timer_slack, mono_ns, PreciseTimer};
use crate::slab::Slab;

const LISTENER: Token = Token(0);
const TIMER: Token = Token(1);
const FIRST: usize = 2;

enum Slot {
    In(Inbound),
    Up(Upstream),
}

struct Worker {
    poll: Poll,
    listener: TcpListener,
    timer: PreciseTimer,
    slots: Slab<Slot>,
    delays: BinaryHeap<Reverse<(u64, usize, u64)>>,
    idle_up: Vec<usize>,
    shared: Arc<Shared>,
    next_base: String,
    next_request_prefix: String,
    next_addrs: Vec<SocketAddr>,
    gen: u64,
    scratch: Vec<u8>,
    /// This thread's number (names its HTTP/2 companion thread).
    index: usize,
    /// The HTTP/2 companion runtime, started with the first HTTP/2 connection.
    h2: Option<tokio::runtime::Handle>,
}

/// Run one echo event loop on `listener` forever (returns only on a fatal error).
pub(crate) fn run(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    index: usize,
) -> io::Result<()> {
    minimize_timer_slack();
    let poll = Poll::new()?;
    let mut listener = TcpListener::from_std(listener);
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let timer = PreciseTimer::new()?;
    poll.registry()
        .register(&mut SourceFd(&timer.raw_fd()), TIMER, Interest::READABLE)?;
    let (next_base, next_request_prefix) = match &shared.next {
        Some(url) => (
            url.path_and_query.clone(),
            format!("\r\nHost: {}\r\n\r\n", url.authority()),
        ),
        None => (String::new(), String::new()),
    };
    let mut w = Worker {
        poll,
        listener,
        timer,
        slots: Slab::default(),
        delays: BinaryHeap::new(),
        idle_up: Vec::new(),
        shared,
        next_base,
        next_request_prefix,
        next_addrs: Vec::new(),
        gen: 0,
        scratch: vec![0u8; 64 * 1024],
        index,
        h2: None,
    };
    w.run()
}

impl Worker {
    fn run(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let timeout = match self.delays.peek() {
                Some(Reverse((d, _, _))) if *d <= mono_ns() => Some(std::time::Duration::ZERO),
                Some(Reverse((d, _, _))) => {
                    self.timer.arm_at(*d)?;
                    None
                }
                None => None,
            };
            // a due calibration trial of short burns runs only when nothing is ready to serve
            let calibrate = burn::calibration_due() && timeout != Some(std::time::Duration::ZERO);
            let wait = if calibrate {
                Some(std::time::Duration::ZERO)
            } else {
                timeout
            };
            if let Err(e) = self.poll.poll(&mut events, wait) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if calibrate && events.is_empty() {
                burn::calibrate_if_due();
                continue;
            }
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept(),
                    TIMER => self.timer.acknowledge(),
                    Token(t) => self.on_event(t - FIRST),
                }
            }
            self.fire_delays();
        }
    }

    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    self.gen += 1;
                    let idx = self.slots.vacant_key();
                    let interest = Interest::READABLE | Interest::WRITABLE;
                    if self
                        .poll
                        .registry()
                        .register(&mut stream, Token(idx + FIRST), interest)
                        .is_ok()
                    {
                        let mut conn = Inbound::new(stream, self.gen);
                        if self.shared.http2.is_none() {
                            conn.http1_only();
                        }
                        let conn = match &self.shared.tls {
                            None => conn,
                            Some(config) => match rustls::ServerConnection::new(Arc::clone(config))
                            {
                                Ok(session) => conn.with_tls(session),
                                Err(_) => continue, // dropped: closed
                            },
                        };
                        self.slots.insert(Slot::In(conn));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return, // e.g. EMFILE: try again on the next readiness event
            }
        }
    }

    fn on_event(&mut self, idx: usize) {
        match self.slots.get(idx) {
            Some(Slot::In(_)) => {
                let (ok, protocol) = match self.slots.get_mut(idx) {
                    Some(Slot::In(conn)) => {
                        let ok = conn.read_available(&mut self.scratch).is_ok();
                        (ok, conn.protocol())
                    }
                    _ => (false, Protocol::Http1),
                };
                if !ok {
                    self.close(idx);
                    return;
                }
                match protocol {
                    Protocol::Http1 => self.progress_inbound(idx),
                    Protocol::Http2 => self.hand_over(idx),
                    // a TLS handshake in progress still has records to send
                    Protocol::Undecided => self.flush_inbound(idx),
                }
            }
            Some(Slot::Up(_)) => self.drive_upstream(idx),
            None => {}
        }
    }

    /// Parse, answer and flush an inbound connection; schedule waits; close when done.
    fn progress_inbound(&mut self, idx: usize) {
        let now = mono_ns();
        let has_next = self.shared.next.is_some();
        let step = match self.slots.get_mut(idx) {
            Some(Slot::In(conn)) => {
                conn.process(&self.shared.id_header, has_next, &self.next_base, now)
            }
            _ => return,
        };
        self.handle_step(idx, step);
        self.flush_inbound(idx);
    }

    fn flush_inbound(&mut self, idx: usize) {
        let Some(Slot::In(conn)) = self.slots.get_mut(idx) else {
            return;
        };
        match conn.flush() {
            Ok(true) => {
                if conn.finished() {
                    self.close(idx);
                    return;
                }
                // Output drained: pipelined requests held back by a large body may proceed.
                let has_next = self.shared.next.is_some();
                let step =
                    conn.process(&self.shared.id_header, has_next, &self.next_base, mono_ns());
                let more = conn.has_output();
                if step != Step::Idle || more {
                    self.handle_step(idx, step);
                    self.flush_inbound(idx);
                }
            }
            Ok(false) => {}
            Err(_) => self.close(idx),
        }
    }

    fn handle_step(&mut self, idx: usize, step: Step) {
        match step {
            Step::Idle => {}
            Step::Delay(deadline) => {
                if let Some(Slot::In(conn)) = self.slots.get(idx) {
                    self.delays.push(Reverse((deadline, idx, conn.gen)));
                }
            }
            Step::CallNext(target) => {
                let gen = match self.slots.get(idx) {
                    Some(Slot::In(conn)) => conn.gen,
                    _ => return,
                };
                let request = format!("GET {target} HTTP/1.1{}", self.next_request_prefix);
                self.call_next((idx, gen), request.into_bytes());
            }
        }
    }

    fn fire_delays(&mut self) {
        let now = mono_ns();
        while let Some(Reverse((deadline, idx, gen))) = self.delays.peek().copied() {
            if deadline > now {
                break;
            }
            self.delays.pop();
            if let Some(Slot::In(conn)) = self.slots.get_mut(idx) {
                if conn.gen == gen {
                    conn.delay_done(&self.shared.id_header);
                    self.flush_inbound(idx);
                }
            }
        }
        self.timer.expire_if_past(now);
    }

    /// Send `request` to the next service on a pooled or new connection.
    /// A failed reused connection is retried once on the next pooled or a new one; fresh
    /// connections are never retried, so this recursion is bounded by the pool size.
    fn call_next(&mut self, owner: (usize, u64), request: Vec<u8>) {
        let up_idx = loop {
            match self.idle_up.pop() {
                Some(i) if matches!(self.slots.get(i), Some(Slot::Up(u)) if u.state == UpState::Idle) => {
                    break Some(i)
                }
                Some(_) => continue,
                None => break None,
            }
        };
        let up_idx = match up_idx {
            Some(i) => i,
            None => match self.open_upstream() {
                Ok(i) => i,
                Err(reason) => return self.finish_owner(owner, Err(reason)),
            },
        };
        if let Some(Slot::Up(up)) = self.slots.get_mut(up_idx) {
            up.begin(owner, &request);
        }
        self.drive_upstream(up_idx);
    }

    fn open_upstream(&mut self) -> Result<usize, String> {
        if self.next_addrs.is_empty() {
            let url = self.shared.next.as_ref().ok_or("no --next configured")?;
            self.next_addrs = url.resolve()?;
        }
        let addr = self.next_addrs[0];
        let mut up = Upstream::connect(addr).map_err(|e| {
            self.next_addrs.clear();
            format!("connect {addr}: {e}")
        })?;
        let idx = self.slots.vacant_key();
        self.poll
            .registry()
            .register(
                &mut up.stream,
                Token(idx + FIRST),
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(|e| format!("register: {e}"))?;
        Ok(self.slots.insert(Slot::Up(up)))
    }

    fn drive_upstream(&mut self, idx: usize) {
        let Some(Slot::Up(up)) = self.slots.get_mut(idx) else {
            return;
        };
        let owner = up.owner;
        let was_idle = up.state == UpState::Idle;
        let outcome = up.drive(&mut self.scratch);
        match outcome {
            UpOutcome::Pending => {}
            UpOutcome::Done {
                status,
                hops,
                keep_alive,
            } => {
                if keep_alive {
                    self.idle_up.push(idx);
                } else {
                    self.close(idx);
                }
                if let Some(owner) = owner {
                    let result = if (200..300).contains(&status) {
                        Ok(hops)
                    } else {
                        Err(format!("next service answered {status}"))
                    };
                    self.finish_owner(owner, result);
                }
            }
            UpOutcome::Failed { reason, retryable } => {
                let request = match self.slots.get(idx) {
                    Some(Slot::Up(u)) => u.request_bytes(),
                    _ => Vec::new(),
                };
                self.close(idx);
                if was_idle {
                    return;
                }
                if let Some(owner) = owner {
                    if retryable {
                        self.call_next(owner, request);
                    } else {
                        self.finish_owner(owner, Err(reason));
                    }
                }
            }
        }
    }

    fn finish_owner(&mut self, (idx, gen): (usize, u64), result: Result<u32, String>) {
        let now = mono_ns();
        let step = match self.slots.get_mut(idx) {
            Some(Slot::In(conn)) if conn.gen == gen => {
                conn.next_done(result, &self.shared.id_header, now)
            }
            _ => return,
        };
        self.handle_step(idx, step);
        self.flush_inbound(idx);
    }

    /// An HTTP/2 connection: from now on the companion runtime serves it.
    fn hand_over(&mut self, idx: usize) {
        let Some(settings) = self.shared.http2.clone() else {
            return self.close(idx);
        };
        if self.h2.is_none() {
            match crate::http2::server::companion(format!("echo-h2-{}", self.index)) {
                Ok(handle) => self.h2 = Some(handle),
                Err(e) => {
                    eprintln!("netperf-driver echo: cannot serve HTTP/2: {e}");
                    return self.close(idx);
                }
            }
        }
        let Some(Slot::In(mut conn)) = self.slots.remove(idx) else {
            return;
        };
        let _ = self.poll.registry().deregister(&mut conn.stream);
        let handover = conn.into_handover();
        if let Some(rt) = &self.h2 {
            rt.spawn(crate::http2::server::serve(handover, settings));
        }
    }

    fn close(&mut self, idx: usize) {
        match self.slots.remove(idx) {
            Some(Slot::In(mut c)) => {
                let _ = self.poll.registry().deregister(&mut c.stream);
            }
            Some(Slot::Up(mut u)) => {
                let _ = self.poll.registry().deregister(&mut u.stream);
            }
            None => {}
        }
    }
}
