//! The per-thread HTTP/2 load loop: one task on a tokio current-thread runtime drives every
//! connection of its thread (their `h2` connection futures), the streams in flight and the
//! timetable. It keeps the guarantees of the HTTP/1.1 loop ([`crate::load::worker`]): closed
//! loop keeps every stream slot busy; open loop sends on the timetable (a timerfd, plus a
//! spin before each send) and measures latency from the intended send time; requests of the
//! warmup still unanswered when the window ends are censored; a saturated thread is found by
//! the same rules; a target that stops accepting connections ends the round.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use h2::client::{ResponseFuture, SendRequest};
use h2::SendStream;

use super::errors::{classify, Failed};
use super::grpc::MessageReader;
use super::io::{tokio_stream, Io, PlainIo, TlsIo, Wire};
use super::plan::Http2Plan;
use super::precise::Alarm;
use crate::clock::{minimize_timer_slack, mono_ns, sleep_until};
use crate::health::{thread_cpu, ThreadUsage};
use crate::load::conn::InFlight;
use crate::load::liveness::{ConnectError, Liveness, Watch};
use crate::load::pacer::{thread_spin_ns, Pacer, Settle, Timeline};
use crate::load::plan::Plan;
use crate::load::signal::INTERRUPTED;
use crate::load::stats::{ErrorKind, ThreadStats};
use crate::load::tls_conn::{Handshake, TlsConn};
use crate::slab::Slab;
use crate::tls::diagnose::{self, ALPN_REFUSED};

/// Wait after a failed connect before trying again on the same slot.
const CONNECT_BACKOFF_NS: u64 = 10_000_000;
/// Longest sleep (so interruption and window ends are noticed promptly).
const MAX_POLL_NS: u64 = 50_000_000;
/// Open loop with `--spin`: busy-wait this close to a send time instead of yielding to the
/// runtime (one round through tokio's scheduler and epoll takes a few microseconds).
const FINAL_SPIN_NS: u64 = 5_000;

/// The client side of a connection.
pub type ClientIo = Io<rustls::ClientConnection>;
/// An `h2` client connection (drives the socket; must be polled).
pub type Connection = h2::client::Connection<ClientIo, Bytes>;

/// A connection opened before the clock: the socket, and its TLS session when `https://`.
pub struct Preconnected {
    /// The connected socket (blocking until handed over).
    pub stream: std::net::TcpStream,
    /// Its completed TLS handshake.
    pub tls: Option<TlsConn>,
}

/// An HTTP/2 connection up and running.
pub struct Established {
    /// Opens streams.
    pub send: SendRequest<Bytes>,
    /// The connection future.
    pub conn: Pin<Box<Connection>>,
    /// Its byte counts and first bytes.
    pub wire: Arc<Wire>,
    /// The TLS handshake done on the way (reconnects), for the report.
    pub handshake: Option<Handshake>,
}

/// What HTTP/2 adds to a worker's results.
#[derive(Debug, Clone, Default)]
pub struct H2Stats {
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, first seen (None: none announced).
    pub server_max_streams: Option<u64>,
    /// GOAWAY frames seen (connections ended by one, or refused requests).
    pub goaways: u64,
    /// Window calls per grpc-status.
    pub grpc_status: BTreeMap<u32, u64>,
}

impl H2Stats {
    /// Add `other` into `self`.
    pub fn merge(&mut self, other: &H2Stats) {
        self.server_max_streams = self.server_max_streams.or(other.server_max_streams);
        self.goaways += other.goaways;
        for (k, v) in &other.grpc_status {
            *self.grpc_status.entry(*k).or_default() += v;
        }
    }
}

/// What a worker hands back.
pub struct H2WorkerResult {
    /// Measurements.
    pub stats: ThreadStats,
    /// HTTP/2 extras.
    pub h2: H2Stats,
    /// How the thread used its time over the measured window.
    pub window: ThreadUsage,
}

/// The h2 handshake on `io`, then a PING round trip, which also proves that the server
/// speaks HTTP/2 and has sent its SETTINGS (its stream limit is known before the first
/// request). Bounded by `timeout`.
pub async fn h2_handshake(
    io: ClientIo,
    wire: &Arc<Wire>,
    cleartext: bool,
    timeout: Duration,
) -> Result<(SendRequest<Bytes>, Pin<Box<Connection>>), Failed> {
    let work = async {
        let (send, conn) = h2::client::Builder::new()
            .initial_window_size(super::WINDOW)
            .initial_connection_window_size(super::WINDOW)
            .max_concurrent_reset_streams(1024)
            .handshake::<_, Bytes>(io)
            .await
            .map_err(Some)?;
        let mut conn = Box::pin(conn);
        let mut ping = conn.ping_pong().expect("first use of the ping handle");
        let pong = ping.ping(h2::Ping::opaque());
        tokio::pin!(pong);
        std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = conn.as_mut().poll(cx) {
                return Poll::Ready(Err(r.err()));
            }
            pong.as_mut().poll(cx).map_err(Some)
        })
        .await?;
        Ok::<_, Option<h2::Error>>((send, conn))
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(Ok(pair)) => Ok(pair),
        Ok(Err(Some(e))) => Err(classify(&e, wire.first_bytes(), cleartext)),
        Ok(Err(None)) => Err(closed_in_handshake(wire.first_bytes(), cleartext)),
        Err(_) => {
            if cleartext {
                if let Some(f) = super::errors::cleartext_answer(wire.first_bytes()) {
                    return Err(f);
                }
            }
            Err(Failed::new(
                ErrorKind::Timeout,
                format!(
                    "no answer to the HTTP/2 preface within {}s",
                    timeout.as_secs_f64()
                ),
            ))
        }
    }
}

/// The server ended the connection (cleanly) before answering the HTTP/2 handshake.
fn closed_in_handshake(first: &[u8], cleartext: bool) -> Failed {
    if cleartext {
        if let Some(f) = super::errors::cleartext_answer(first) {
            return f;
        }
        return Failed::new(ErrorKind::H2cRefused, super::errors::H2C_CLOSED);
    }
    Failed::new(
        ErrorKind::Reset,
        "the server closed the connection during the HTTP/2 handshake",
    )
}

/// Check the protocol ALPN agreed on a finished TLS handshake: h2, or an `alpn_refused`
/// failure that says what the server offered instead.
pub fn check_alpn(session: &rustls::ClientConnection) -> Result<(), Failed> {
    match session.alpn_protocol() {
        Some(b"h2") => Ok(()),
        Some(b"http/1.1") => Err(Failed::new(
            ErrorKind::AlpnRefused,
            format!("{ALPN_REFUSED}: the server offers only http/1.1 (no h2 in ALPN)"),
        )),
        Some(other) => Err(Failed::new(
            ErrorKind::AlpnRefused,
            format!(
                "{ALPN_REFUSED}: the server chose {:?} instead of h2",
                String::from_utf8_lossy(other)
            ),
        )),
        None => Err(Failed::new(
            ErrorKind::AlpnRefused,
            format!(
                "{ALPN_REFUSED}: the server took no part in ALPN, so it does not offer h2 \
                 (HTTP/1.1 only?)"
            ),
        )),
    }
}

/// The handshake record of a finished session (what the TLS report counts).
pub fn handshake_of(session: &rustls::ClientConnection, started_ns: u64) -> Handshake {
    Handshake {
        started_ns,
        resumed: session.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
        version: session
            .protocol_version()
            .map_or("other", crate::tls::version_name),
        cipher_suite: session
            .negotiated_cipher_suite()
            .and_then(|c| c.suite().as_str())
            .unwrap_or("other"),
        alpn: crate::tls::alpn_name(session.alpn_protocol()),
    }
}

/// Connect, handshake TLS (checking ALPN h2) and HTTP/2: a new connection during the run.
async fn open_connection(plan: Arc<Plan>) -> Result<Established, (Failed, Option<ConnectError>)> {
    let timeout = Duration::from_nanos(plan.timeout_ns);
    let tcp = match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(plan.addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let ce = ConnectError::from_io(&e);
            return Err((Failed::new(ce.kind, format!("connect: {e}")), Some(ce)));
        }
        Err(_) => {
            let ce = ConnectError::of_kind(ErrorKind::ConnectTimeout);
            return Err((Failed::new(ce.kind, "connect timed out"), Some(ce)));
        }
    };
    let _ = tcp.set_nodelay(true);
    let connected_ns = mono_ns();
    let wire = Arc::new(Wire::default());
    let h2 = plan.http2.as_ref().expect("an HTTP/2 plan");
    let (io, handshake) = match &plan.tls {
        Some(target) => {
            let session = target.session().map_err(|e| {
                let f = Failed::new(ErrorKind::TlsHandshake, format!("TLS session: {e}"));
                (f, None)
            })?;
            let mut tls = TlsIo::new(tcp, session, Vec::new(), Some(Arc::clone(&wire)));
            let hs =
                tokio::time::timeout(timeout, std::future::poll_fn(|cx| tls.poll_handshake(cx)));
            let failed = match hs.await {
                Ok(Ok(())) => None,
                Ok(Err(_)) => Some(match &tls.error {
                    Some(e) => {
                        let client_cert = target.settings.client_certificate;
                        diagnose::classify(e, tls.first_byte, client_cert)
                    }
                    None => diagnose::closed_during_handshake(tls.first_byte),
                }),
                Err(_) => Some(diagnose::TlsFailure {
                    kind: ErrorKind::TlsHandshake,
                    message: "handshake failure: no answer to the ClientHello in time".into(),
                }),
            };
            if let Some(f) = failed {
                return Err((Failed::new(f.kind, f.message), None));
            }
            check_alpn(&tls.session).map_err(|f| (f, None))?;
            let record = handshake_of(&tls.session, connected_ns);
            (Io::Right(Box::new(tls)), Some(record))
        }
        None => (
            Io::Left(PlainIo::new(tcp, Vec::new(), Some(Arc::clone(&wire)))),
            None,
        ),
    };
    let (send, conn) = h2_handshake(io, &wire, !h2.tls, timeout)
        .await
        .map_err(|f| (f, None))?;
    Ok(Established {
        send,
        conn,
        wire,
        handshake,
    })
}

/// Wrap a connection opened before the clock and run its HTTP/2 handshake.
pub async fn establish_preconnected(
    pre: Preconnected,
    h2: &Http2Plan,
    timeout: Duration,
) -> Result<Established, Failed> {
    let tcp = tokio_stream(pre.stream)
        .map_err(|e| Failed::new(ErrorKind::Other, format!("socket: {e}")))?;
    let wire = Arc::new(Wire::default());
    let io = match pre.tls {
        Some(tls) => Io::Right(Box::new(TlsIo::new(
            tcp,
            tls.session,
            Vec::new(),
            Some(Arc::clone(&wire)),
        ))),
        None => Io::Left(PlainIo::new(tcp, Vec::new(), Some(Arc::clone(&wire)))),
    };
    let (send, conn) = h2_handshake(io, &wire, !h2.tls, timeout).await?;
    Ok(Established {
        send,
        conn,
        wire,
        handshake: None,
    })
}

/// The answer to one request.
#[derive(Debug)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// gRPC: the grpc-status and grpc-message, or why there was none.
    pub grpc: Option<Result<(u32, String), String>>,
}

/// Read one response to its end (for gRPC, its trailers too).
pub async fn receive(resp: ResponseFuture, grpc: bool) -> Result<Answer, h2::Error> {
    let resp = resp.await?;
    let status = resp.status().as_u16();
    let (parts, mut body) = resp.into_parts();
    let mut reader = MessageReader::default();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        if grpc {
            reader.feed(&chunk);
        }
    }
    if !grpc {
        return Ok(Answer { status, grpc: None });
    }
    let trailers = body.trailers().await?;
    // a trailers-only response carries grpc-status in its headers
    let fields = trailers.as_ref().unwrap_or(&parts.headers);
    let message = fields
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let outcome = match fields
        .get("grpc-status")
        .map(|v| v.to_str().map(str::parse::<u32>))
    {
        Some(Ok(Ok(code))) if code != 0 || reader.complete() => Ok((code, message)),
        Some(Ok(Ok(_))) => Err("grpc-status 0 after a truncated message".to_string()),
        Some(_) => Err("a grpc-status that is not a number".to_string()),
        None if status != 200 => Err(format!("HTTP status {status} without grpc-status")),
        None => Err("no grpc-status in the trailers".to_string()),
    };
    Ok(Answer {
        status,
        grpc: Some(outcome),
    })
}

/// How one request ended.
struct Done {
    key: usize,
    id: u64,
    done_ns: u64,
    result: Result<Answer, h2::Error>,
}

type ReqFut = Pin<Box<dyn Future<Output = Done>>>;
type ConnFut = Pin<Box<dyn Future<Output = (usize, u64, Result<(), h2::Error>)>>>;
type ConnectFut = Pin<
    Box<
        dyn Future<
            Output = (
                usize,
                u64,
                Result<Established, (Failed, Option<ConnectError>)>,
            ),
        >,
    >,
>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Down,
    Connecting,
    Up,
}

/// One connection slot.
struct Slot {
    state: SlotState,
    send: Option<SendRequest<Bytes>>,
    wire: Option<Arc<Wire>>,
    /// Streams in flight on the current connection.
    active: usize,
    /// Streams allowed on it.
    limit: usize,
    /// Generation of the current connection.
    gen: u64,
    connect_started_ns: u64,
    connects: u64,
    retry_at_ns: u64,
    /// The generation of the last connection the server ended with GOAWAY.
    goaway_gen: Option<u64>,
}

/// A request in flight.
struct Flight {
    /// Unique per request (a slab key is reused once a timed-out request is dropped).
    id: u64,
    req: InFlight,
    slot: usize,
    gen: u64,
    /// Its request side: resetting it (RST_STREAM CANCEL) abandons the request on timeout.
    stream: SendStream<Bytes>,
}

/// Bytes that crossed the sockets of closed connections.
#[derive(Default)]
struct WireTotals {
    read: u64,
    written: u64,
}

struct Worker {
    plan: Arc<Plan>,
    h2: Http2Plan,
    pace: Pacer,
    slots: Vec<Slot>,
    flights: Slab<Flight>,
    available: Vec<usize>,
    retries: VecDeque<usize>,
    stats: ThreadStats,
    h2stats: H2Stats,
    wire: WireTotals,
    next_scan_ns: u64,
    scan_period_ns: u64,
    spin_ns: u64,
    liveness: Arc<Liveness>,
    watch: Watch,
    reqs: FuturesUnordered<ReqFut>,
    conns: FuturesUnordered<ConnFut>,
    connecting: FuturesUnordered<ConnectFut>,
    alarm: Alarm,
    /// Futures were added since the last poll of their set.
    pushed: bool,
    /// Last request id given out.
    next_id: u64,
}

enum Step {
    Done,
    Spin,
}

/// Run one HTTP/2 worker thread: handshake HTTP/2 on the connections opened before the
/// clock, say so on `ready`, take the timeline from `start`, then measure its share.
pub fn run_worker(
    plan: Arc<Plan>,
    thread: usize,
    pre: Vec<Preconnected>,
    liveness: Arc<Liveness>,
    ready: std::sync::mpsc::Sender<()>,
    start: std::sync::mpsc::Receiver<Timeline>,
) -> io::Result<H2WorkerResult> {
    minimize_timer_slack();
    let rt = (|| {
        if plan.realtime {
            crate::clock::set_realtime_fifo()?;
        }
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
    })();
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(());
            return Err(e);
        }
    };
    let _guard = rt.enter();
    let h2 = plan.http2.clone().expect("an HTTP/2 plan");
    let timeout = Duration::from_nanos(plan.timeout_ns);
    // HTTP/2 handshakes of the connections opened before the clock (not timed)
    let established: Vec<Result<Established, Failed>> = rt.block_on(async {
        let mut out = Vec::with_capacity(pre.len());
        for p in pre {
            out.push(establish_preconnected(p, &h2, timeout).await);
        }
        out
    });
    let _ = ready.send(());
    let Ok(tl) = start.recv() else {
        return Err(io::Error::other("the run was called off before it started"));
    };
    let pace = Pacer::for_thread(&plan, tl, thread);
    let stats = pace.thread_stats(&plan);
    let spin_ns = thread_spin_ns(&plan);
    let mut w = Worker {
        scan_period_ns: (plan.timeout_ns / 20).clamp(1_000_000, MAX_POLL_NS),
        plan: Arc::clone(&plan),
        h2,
        pace,
        slots: Vec::new(),
        flights: Slab::default(),
        available: Vec::new(),
        retries: VecDeque::new(),
        stats,
        h2stats: H2Stats::default(),
        wire: WireTotals::default(),
        next_scan_ns: 0,
        spin_ns,
        liveness,
        watch: Watch::default(),
        reqs: FuturesUnordered::new(),
        conns: FuturesUnordered::new(),
        connecting: FuturesUnordered::new(),
        alarm: Alarm::new()?,
        pushed: false,
        next_id: 0,
    };
    for result in established {
        let slot = w.slots.len();
        w.slots.push(Slot {
            state: SlotState::Down,
            send: None,
            wire: None,
            active: 0,
            limit: 0,
            gen: 0,
            connect_started_ns: 0,
            connects: 1,
            retry_at_ns: 0,
            goaway_gen: None,
        });
        match result {
            Ok(est) => w.install(slot, est),
            Err(f) => {
                w.stats.cause(f.kind, &f.message);
                w.slots[slot].retry_at_ns = tl.start_ns;
                w.retries.push_back(slot);
            }
        }
    }
    let cpu_before = thread_cpu();
    sleep_until(tl.start_ns);
    rt.block_on(async {
        w.begin();
        loop {
            match std::future::poll_fn(|cx| w.poll_step(cx)).await {
                Ok(Step::Done) => return Ok(()),
                Ok(Step::Spin) => tokio::task::yield_now().await,
                Err(e) => return Err(e),
            }
        }
    })?;
    let cpu = thread_cpu().since(cpu_before);
    w.finish_wire();
    w.stats.cpu = cpu;
    w.stats.finish();
    // only an interrupted run ends without a window measurement
    let window = w.pace.window_usage.unwrap_or_default();
    // the connections go before the runtime that drives their sockets
    let Worker { stats, h2stats, .. } = w;
    Ok(H2WorkerResult {
        stats,
        h2: h2stats,
        window,
    })
}

impl Worker {
    /// A connection is up on `slot`: remember it, and start polling it.
    fn install(&mut self, slot: usize, est: Established) {
        let Established {
            send,
            conn,
            wire,
            handshake,
        } = est;
        if let Some(h) = handshake {
            let timed = self.pace.in_window(mono_ns()).then(mono_ns);
            self.stats.tls.handshake(&h, timed);
        }
        let server_max = send.current_max_send_streams();
        if server_max < u32::MAX as usize {
            self.h2stats
                .server_max_streams
                .get_or_insert(server_max as u64);
        }
        let s = &mut self.slots[slot];
        s.gen += 1;
        s.state = SlotState::Up;
        s.limit = self.h2.streams.min(server_max).max(1);
        s.active = 0;
        s.send = Some(send);
        s.wire = Some(wire);
        let gen = s.gen;
        self.conns.push(Box::pin(async move {
            let r = conn.await;
            (slot, gen, r)
        }));
        self.pushed = true;
    }

    /// The clock has started: closed loop fills every stream slot.
    fn begin(&mut self) {
        let now = mono_ns();
        self.next_scan_ns = now + self.scan_period_ns;
        for i in 0..self.slots.len() {
            if self.slots[i].state == SlotState::Up {
                self.refill(i, now);
            }
        }
    }

    /// Slot `i` has free streams: open loop offers them, closed loop sends.
    fn refill(&mut self, i: usize, now: u64) {
        let free = {
            let s = &self.slots[i];
            if s.state != SlotState::Up {
                return;
            }
            s.limit.saturating_sub(s.active)
        };
        for _ in 0..free {
            self.use_free_stream(i, now);
            if self.slots[i].state != SlotState::Up {
                return;
            }
        }
    }

    fn poll_step(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Step>> {
        loop {
            self.pushed = false;
            let mut progress = false;
            while let Poll::Ready(Some((slot, gen, result))) = self.connecting.poll_next_unpin(cx) {
                self.on_connect(slot, gen, result);
                progress = true;
            }
            while let Poll::Ready(Some((slot, gen, result))) = self.conns.poll_next_unpin(cx) {
                self.on_conn_end(slot, gen, result);
                progress = true;
            }
            while let Poll::Ready(Some(done)) = self.reqs.poll_next_unpin(cx) {
                self.on_done(done);
                progress = true;
            }
            if INTERRUPTED.load(Ordering::Relaxed) || self.liveness.is_lost() {
                return Poll::Ready(Ok(Step::Done));
            }
            let mut now = mono_ns();
            if let Some(message) = self
                .watch
                .vanished(now, &self.liveness, self.plan.timeout_ns)
            {
                self.liveness.declare_lost(message);
                return Poll::Ready(Ok(Step::Done));
            }
            if !self.pace.censored_done && now >= self.pace.tl.window_end_ns {
                let pending: Vec<InFlight> = self
                    .flights
                    .indices()
                    .filter_map(|k| self.flights.get(k).map(|f| f.req))
                    .collect();
                self.pace.censor_unanswered(pending, &mut self.stats);
            }
            self.pace.track_window(now, &mut self.stats);
            if self.pace.open_loop() && !self.pace.stopped {
                now = self.dispatch_due(now);
            }
            match self.pace.settle(now) {
                Settle::Running => {}
                Settle::Done => return Poll::Ready(Ok(Step::Done)),
                Settle::Abandon => {
                    self.abandon_outstanding();
                    return Poll::Ready(Ok(Step::Done));
                }
            }
            if now >= self.next_scan_ns {
                self.scan_timeouts(now);
                self.scan_backlog(now);
                self.next_scan_ns = now + self.scan_period_ns;
            }
            self.run_retries(now);
            if progress || self.pushed {
                continue;
            }
            let mut wake = self.pace.wake_by(now, self.next_scan_ns, MAX_POLL_NS);
            if let Some(&i) = self.retries.front() {
                wake = wake.min(self.slots[i].retry_at_ns);
            }
            if let (Some(sched), false) = (&self.pace.schedule, self.pace.stopped) {
                let due = sched.peek();
                let send_at = due.saturating_sub(self.spin_ns);
                if send_at <= now {
                    if due <= now + FINAL_SPIN_NS {
                        // the last microseconds: a round through the runtime takes longer
                        crate::clock::spin_until(due);
                        continue;
                    }
                    // within the spin window: let the runtime poll the sockets once, then
                    // come back (responses are still read and timestamped meanwhile)
                    return Poll::Ready(Ok(Step::Spin));
                }
                wake = wake.min(send_at);
            }
            match self.alarm.poll_at(cx, wake) {
                Poll::Ready(Ok(())) => continue,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// Open loop: hand out every request whose intended time has come.
    fn dispatch_due(&mut self, now: u64) -> u64 {
        while let Some(req) = self.pace.next_due(now, &mut self.stats) {
            match self.take_available() {
                Some(i) => self.send(i, req),
                None => self.pace.queue(req, &mut self.stats),
            }
        }
        now
    }

    fn take_available(&mut self) -> Option<usize> {
        while let Some(i) = self.available.pop() {
            let s = &self.slots[i];
            if s.state == SlotState::Up && s.active < s.limit {
                return Some(i);
            }
        }
        None
    }

    /// Closed loop: slot `i` opens the next stream, unless the window or the quota has ended.
    fn closed_next(&mut self, i: usize, now: u64) {
        if let Some(req) = self.pace.closed_request(now) {
            self.send(i, req);
        }
    }

    /// Open a stream on slot `i` for `req`.
    fn send(&mut self, i: usize, mut req: InFlight) {
        let now = mono_ns();
        req.sent_ns = now;
        let s = &mut self.slots[i];
        let Some(sender) = s.send.as_mut() else {
            return self.finish_error(req, ErrorKind::Other);
        };
        let end = self.h2.body.is_none();
        let result = sender.send_request(self.h2.request(), end);
        let (resp, mut stream) = match result {
            Ok(pair) => pair,
            Err(e) => return self.send_failed(i, req, e),
        };
        if let Some(body) = &self.h2.body {
            if let Err(e) = stream.send_data(body.clone(), true) {
                return self.send_failed(i, req, e);
            }
        }
        s.active += 1;
        let gen = s.gen;
        self.next_id += 1;
        let id = self.next_id;
        let key = self.flights.insert(Flight {
            id,
            req,
            slot: i,
            gen,
            stream,
        });
        let grpc = self.h2.grpc.is_some();
        self.reqs.push(Box::pin(request(key, id, resp, grpc)));
        self.pushed = true;
    }

    /// `send_request` failed on slot `i`: the connection is going away (a GOAWAY came) or
    /// broken. A graceful GOAWAY (NO_ERROR) refused nothing: the request waits for the next
    /// connection. Anything else is an error of the request.
    fn send_failed(&mut self, i: usize, req: InFlight, e: h2::Error) {
        let graceful = e.is_go_away() && e.is_remote() && e.reason() == Some(h2::Reason::NO_ERROR);
        let connection_gone = e.is_go_away() || e.is_io();
        if connection_gone {
            self.slot_down(i);
        }
        if graceful {
            self.pace.take_back(req);
            return;
        }
        // the connection had answered the handshake: it speaks HTTP/2
        let f = classify(&e, &[], false);
        self.stats.cause(f.kind, &f.message);
        self.finish_error(req, f.kind);
    }

    /// The connection of slot `i` is no longer usable: forget it (its connection future
    /// still runs to its end, failing its streams) and connect again.
    fn slot_down(&mut self, i: usize) {
        let s = &mut self.slots[i];
        if s.state != SlotState::Up {
            return;
        }
        s.state = SlotState::Down;
        s.send = None;
        s.active = 0;
        s.gen += 1;
        if let Some(w) = s.wire.take() {
            self.wire.read += w.read.load(Ordering::Relaxed);
            self.wire.written += w.written.load(Ordering::Relaxed);
        }
        if !self.pace.stopped {
            self.connect(i, mono_ns());
        }
    }

    fn connect(&mut self, i: usize, now: u64) {
        let s = &mut self.slots[i];
        if s.state != SlotState::Down {
            return;
        }
        if s.retry_at_ns > now {
            if !self.retries.contains(&i) {
                self.retries.push_back(i);
            }
            return;
        }
        s.state = SlotState::Connecting;
        s.connect_started_ns = now;
        s.connects += 1;
        s.gen += 1;
        let gen = s.gen;
        self.stats.sockets_opened += 1;
        self.stats.reconnects += 1;
        let plan = Arc::clone(&self.plan);
        self.connecting.push(Box::pin(async move {
            let r = open_connection(plan).await;
            (i, gen, r)
        }));
        self.pushed = true;
    }

    fn run_retries(&mut self, now: u64) {
        while let Some(&i) = self.retries.front() {
            if self.slots[i].retry_at_ns > now {
                return;
            }
            self.retries.pop_front();
            if !self.pace.stopped {
                self.connect(i, now);
            }
        }
    }

    fn on_connect(
        &mut self,
        i: usize,
        gen: u64,
        result: Result<Established, (Failed, Option<ConnectError>)>,
    ) {
        let now = mono_ns();
        if self.slots[i].gen != gen {
            return;
        }
        match result {
            Ok(est) => {
                self.watch.alive(now, &self.liveness);
                self.install(i, est);
                self.refill(i, now);
            }
            Err((f, connect_error)) => {
                if let Some(ce) = connect_error {
                    self.watch
                        .connect_failed(self.slots[i].connect_started_ns, ce);
                }
                self.stats.cause(f.kind, &f.message);
                if self.pace.in_window(now) {
                    self.stats.error(f.kind, now);
                }
                let s = &mut self.slots[i];
                s.state = SlotState::Down;
                s.retry_at_ns = now + CONNECT_BACKOFF_NS;
                self.retries.push_back(i);
            }
        }
    }

    fn on_conn_end(&mut self, i: usize, gen: u64, result: Result<(), h2::Error>) {
        let goaway = match &result {
            Err(e) => {
                let f = classify(e, &[], false);
                self.stats.cause(f.kind, &f.message);
                e.is_go_away() && e.is_remote()
            }
            // a client connection ends cleanly only after the server's GOAWAY
            Ok(()) => true,
        };
        if goaway {
            self.h2stats.goaways += 1;
            // its streams still open fail as the socket closes: because of the GOAWAY
            self.slots[i].goaway_gen = Some(gen);
        }
        if self.slots[i].gen == gen {
            self.slot_down(i);
        }
    }

    fn on_done(&mut self, done: Done) {
        if self.flights.get(done.key).is_none_or(|f| f.id != done.id) {
            return; // timed out and reset already
        }
        let Some(flight) = self.flights.remove(done.key) else {
            return;
        };
        let Flight { req, slot, gen, .. } = flight;
        let still_here = self.slots[slot].gen == gen && self.slots[slot].state == SlotState::Up;
        if still_here {
            self.slots[slot].active -= 1;
        }
        match done.result {
            Ok(answer) => self.answered(req, answer, done.done_ns),
            Err(e) => {
                let mut f = classify(&e, &[], false);
                if e.is_io() && self.slots[slot].goaway_gen == Some(gen) {
                    f = Failed::new(
                        ErrorKind::GoAway,
                        "the server sent GOAWAY and closed the connection with the request \
                         unanswered",
                    );
                }
                self.stats.cause(f.kind, &f.message);
                self.finish_error(req, f.kind);
                if e.is_io() || (e.is_go_away() && still_here) {
                    self.slot_down(slot);
                }
            }
        }
        if still_here && self.slots[slot].state == SlotState::Up {
            self.refill_one(slot, done.done_ns);
        }
    }

    /// One stream of slot `i` became free.
    fn refill_one(&mut self, i: usize, now: u64) {
        let s = &mut self.slots[i];
        // the server may have lowered (or raised) its stream limit since
        if let Some(send) = &s.send {
            s.limit = self.h2.streams.min(send.current_max_send_streams()).max(1);
        }
        if s.active >= s.limit {
            return;
        }
        self.use_free_stream(i, now);
    }

    /// One free stream of slot `i`: open loop sends the oldest queued request or offers the
    /// stream; closed loop sends its connection's next request.
    fn use_free_stream(&mut self, i: usize, now: u64) {
        if self.pace.open_loop() {
            match self.pace.backlog.pop_front() {
                Some(req) => self.send(i, req),
                None => self.available.push(i),
            }
        } else {
            self.closed_next(i, now);
        }
    }

    fn answered(&mut self, req: InFlight, answer: Answer, done: u64) {
        self.watch.alive(done, &self.liveness);
        self.stats.completed_total += 1;
        if self.pace.in_window(done) {
            self.stats.completion(done);
        }
        match answer.grpc {
            None | Some(Ok((0, _))) => {
                if req.in_window {
                    if answer.grpc.is_some() {
                        *self.h2stats.grpc_status.entry(0).or_default() += 1;
                    }
                    self.stats
                        .response(req.intended_ns, req.sent_ns, done, answer.status);
                    self.pace.outstanding -= 1;
                }
            }
            Some(Ok((code, message))) => {
                let kind = ErrorKind::grpc(code).expect("non-zero");
                let method = self.h2.grpc.as_ref().map_or("", |g| g.method.as_str());
                self.stats.cause(
                    kind,
                    &format!(
                        "{method}: grpc-status {}{}",
                        super::grpc::describe_status(code),
                        if message.is_empty() {
                            String::new()
                        } else {
                            format!(": {message}")
                        }
                    ),
                );
                if req.in_window {
                    *self.h2stats.grpc_status.entry(code).or_default() += 1;
                }
                self.finish_error(req, kind);
            }
            Some(Err(why)) => {
                if answer.status != 200 {
                    // not a gRPC answer at all: an HTTP error status, counted as such
                    if req.in_window {
                        self.stats
                            .response(req.intended_ns, req.sent_ns, done, answer.status);
                        self.pace.outstanding -= 1;
                    }
                    return;
                }
                self.stats.cause(ErrorKind::GrpcProtocol, &why);
                self.finish_error(req, ErrorKind::GrpcProtocol);
            }
        }
    }

    fn finish_error(&mut self, req: InFlight, kind: ErrorKind) {
        self.pace.finish_error(req, kind, &mut self.stats);
    }

    /// Requests written more than `--timeout` ago: count them as timeouts and reset their
    /// streams (RST_STREAM CANCEL; their futures then end unheard).
    fn scan_timeouts(&mut self, now: u64) {
        let timeout = self.plan.timeout_ns;
        let late: Vec<usize> = self
            .flights
            .indices()
            .filter(|&k| {
                self.flights
                    .get(k)
                    .is_some_and(|f| f.req.sent_ns + timeout <= now)
            })
            .collect();
        for k in late {
            let Some(mut f) = self.flights.remove(k) else {
                continue;
            };
            f.stream.send_reset(h2::Reason::CANCEL);
            self.finish_error(f.req, ErrorKind::Timeout);
            let s = &mut self.slots[f.slot];
            if s.gen == f.gen && s.state == SlotState::Up {
                s.active -= 1;
                self.refill_one(f.slot, now);
            }
        }
    }

    /// Open loop: requests that waited in the client queue past the timeout.
    fn scan_backlog(&mut self, now: u64) {
        self.pace
            .expire_backlog(now, self.plan.timeout_ns, &mut self.stats);
    }

    fn abandon_outstanding(&mut self) {
        let keys: Vec<usize> = self.flights.indices().collect();
        for k in keys {
            if let Some(f) = self.flights.remove(k) {
                self.finish_error(f.req, ErrorKind::Timeout);
            }
        }
        self.pace.abandon_backlog(&mut self.stats);
    }

    /// Add the bytes of the connections still open to the totals.
    fn finish_wire(&mut self) {
        for s in &mut self.slots {
            if let Some(w) = s.wire.take() {
                self.wire.read += w.read.load(Ordering::Relaxed);
                self.wire.written += w.written.load(Ordering::Relaxed);
            }
        }
        self.stats.bytes_received += self.wire.read;
        self.stats.bytes_sent += self.wire.written;
    }
}

/// One request's future: the response (and trailers). Its timeout is the worker's scan
/// ([`Worker::scan_timeouts`]), which resets the stream, so no timer per request.
async fn request(key: usize, id: u64, resp: ResponseFuture, grpc: bool) -> Done {
    let result = receive(resp, grpc).await;
    Done {
        key,
        id,
        done_ns: mono_ns(),
        result,
    }
}
