//! One client connection to the echo server: parse requests, write responses in order.

use std::io::{self, Read, Write};

use mio::net::TcpStream;

use super::burn;
use super::params::EchoParams;
use super::tls_io;
use crate::http1::{parse_request_head, reason_phrase, BodyReader};

/// Filler bytes for sized bodies.
static FILLER: [u8; 16384] = [b'x'; 16384];
/// Body of a plain echo response.
const DEFAULT_BODY: &[u8] = b"ok\n";
/// Bodies up to this size are copied into the output buffer; larger ones stream.
const INLINE_BODY: u64 = 4096;
/// Largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Unparsed input above this closes the connection.
const MAX_BUFFERED: usize = 4 << 20;

/// A request whose body has been read.
#[derive(Debug, Clone)]
pub struct Request {
    params: Result<EchoParams, String>,
    keep_alive: bool,
    is_head: bool,
    is_health: bool,
}

/// Where the connection is in the request cycle.
enum Phase {
    Head,
    Body { reader: BodyReader, req: Request },
    Waiting { req: Request },
}

/// What the worker must do after [`Inbound::process`].
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing to schedule.
    Idle,
    /// Answer after a timer at this absolute deadline.
    Delay(u64),
    /// Call the next service with this request target.
    CallNext(String),
}

/// One accepted connection.
pub struct Inbound {
    /// The socket.
    pub stream: TcpStream,
    /// Generation, to recognise a reused slab slot.
    pub gen: u64,
    rbuf: Vec<u8>,
    out: Vec<u8>,
    out_pos: usize,
    body_left: u64,
    phase: Phase,
    close_after: bool,
    peer_eof: bool,
    pending_hops: u32,
    /// HTTPS: the TLS session (None: cleartext).
    tls: Option<Box<rustls::ServerConnection>>,
    /// HTTP/1.1 or HTTP/2 is decided (the first bytes, or ALPN, were seen).
    protocol_known: bool,
}

/// Which protocol a new connection speaks, as far as seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Not known yet: a TLS handshake still running, or part of the h2c preface.
    Undecided,
    /// HTTP/1.1 (the mio loop serves it).
    Http1,
    /// HTTP/2: ALPN h2, or the h2c connection preface.
    Http2,
}

impl Inbound {
    /// Wrap an accepted socket.
    pub fn new(stream: TcpStream, gen: u64) -> Self {
        Self {
            stream,
            gen,
            rbuf: Vec::new(),
            out: Vec::with_capacity(256),
            out_pos: 0,
            body_left: 0,
            phase: Phase::Head,
            close_after: false,
            peer_eof: false,
            pending_hops: 1,
            tls: None,
            protocol_known: false,
        }
    }

    /// What this connection speaks, from ALPN or its first bytes (HTTP/2 only when the
    /// server serves it).
    pub fn protocol(&mut self) -> Protocol {
        if self.protocol_known {
            return Protocol::Http1;
        }
        if let Some(tls) = &self.tls {
            if tls.is_handshaking() {
                return Protocol::Undecided;
            }
            self.protocol_known = true;
            return if tls.alpn_protocol() == Some(b"h2") {
                Protocol::Http2
            } else {
                Protocol::Http1
            };
        }
        if self.rbuf.is_empty() {
            return Protocol::Undecided;
        }
        let preface = crate::http2::PREFACE;
        let n = self.rbuf.len().min(preface.len());
        if self.rbuf[..n] != preface[..n] {
            self.protocol_known = true;
            return Protocol::Http1;
        }
        if n < preface.len() {
            return Protocol::Undecided;
        }
        self.protocol_known = true;
        Protocol::Http2
    }

    /// Serve HTTP/1.1 only: never look for HTTP/2.
    pub fn http1_only(&mut self) {
        self.protocol_known = true;
    }

    /// Give up the connection to the HTTP/2 server: the socket, the TLS session, and the
    /// bytes read so far (the caller deregistered the socket).
    pub fn into_handover(self) -> crate::http2::server::Handover {
        use std::os::fd::{FromRawFd, IntoRawFd};
        // SAFETY: the descriptor comes from the mio socket, which gives it up here.
        let stream = unsafe { std::net::TcpStream::from_raw_fd(self.stream.into_raw_fd()) };
        crate::http2::server::Handover {
            stream,
            tls: self.tls,
            pre: self.rbuf,
        }
    }

    /// Serve this connection over TLS with `session` (its handshake still to come).
    pub fn with_tls(mut self, session: rustls::ServerConnection) -> Self {
        self.tls = Some(Box::new(session));
        self
    }

    /// Read everything available.
    pub fn read_available(&mut self, scratch: &mut [u8]) -> io::Result<()> {
        if let Some(tls) = &mut self.tls {
            self.peer_eof |= tls_io::read_into(tls, &mut self.stream, &mut self.rbuf)?;
            if self.rbuf.len() > MAX_BUFFERED {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "too much unparsed input",
                ));
            }
            return Ok(());
        }
        loop {
            match self.stream.read(scratch) {
                Ok(0) => {
                    self.peer_eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.rbuf.extend_from_slice(&scratch[..n]);
                    if self.rbuf.len() > MAX_BUFFERED {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "too much unparsed input",
                        ));
                    }
                    if n < scratch.len() {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Parse and answer buffered requests as far as possible.
    pub fn process(
        &mut self,
        id_header: &[u8],
        has_next: bool,
        next_base: &str,
        now_ns: u64,
    ) -> Step {
        loop {
            if self.close_after || self.body_left > 0 {
                return Step::Idle;
            }
            match &mut self.phase {
                Phase::Waiting { .. } => return Step::Idle,
                Phase::Head => match parse_request_head(&self.rbuf) {
                    Err(e) => {
                        self.rbuf.clear();
                        self.write_response(id_header, 400, Body::Text(e.0), 1, false, false);
                        return Step::Idle;
                    }
                    Ok(None) => {
                        if self.rbuf.len() > MAX_HEAD {
                            self.rbuf.clear();
                            self.write_response(
                                id_header,
                                431,
                                Body::Text("head too large".into()),
                                1,
                                false,
                                false,
                            );
                        }
                        return Step::Idle;
                    }
                    Ok(Some(head)) => {
                        self.rbuf.drain(..head.head_len);
                        let path = head.target.split('?').next().unwrap_or("/");
                        let req = Request {
                            params: EchoParams::from_target(&head.target),
                            keep_alive: head.keep_alive,
                            is_head: head.method.eq_ignore_ascii_case("HEAD"),
                            is_health: path == "/healthz",
                        };
                        self.phase = Phase::Body {
                            reader: BodyReader::new(head.framing),
                            req,
                        };
                    }
                },
                Phase::Body { reader, req } => {
                    let used = match reader.feed(&self.rbuf) {
                        Ok(n) => n,
                        Err(e) => {
                            let r = req.clone();
                            self.rbuf.clear();
                            self.phase = Phase::Head;
                            self.write_response(
                                id_header,
                                400,
                                Body::Text(e.0),
                                1,
                                false,
                                r.is_head,
                            );
                            return Step::Idle;
                        }
                    };
                    self.rbuf.drain(..used);
                    if !reader.is_done() {
                        return Step::Idle;
                    }
                    let req = req.clone();
                    if let Some(step) = self.dispatch(req, id_header, has_next, next_base, now_ns) {
                        return step;
                    }
                }
            }
        }
    }

    /// Decide how to answer a complete request; `Some` when the answer must wait.
    fn dispatch(
        &mut self,
        req: Request,
        id_header: &[u8],
        has_next: bool,
        next_base: &str,
        now_ns: u64,
    ) -> Option<Step> {
        self.phase = Phase::Head;
        if req.is_health {
            self.write_response(
                id_header,
                200,
                Body::Text("ok\n".into()),
                1,
                req.keep_alive,
                req.is_head,
            );
            return None;
        }
        let params = match &req.params {
            Ok(p) => p.clone(),
            Err(msg) => {
                self.write_response(
                    id_header,
                    400,
                    Body::Text(format!("{msg}\n")),
                    1,
                    req.keep_alive,
                    req.is_head,
                );
                return None;
            }
        };
        burn::burn(params.burn_ns);
        if params.depth > 0 {
            if !has_next {
                let msg = "depth>0 needs an echo server started with --next URL\n".to_string();
                self.write_response(
                    id_header,
                    400,
                    Body::Text(msg),
                    1,
                    req.keep_alive,
                    req.is_head,
                );
                return None;
            }
            self.phase = Phase::Waiting { req };
            return Some(Step::CallNext(params.next_target(next_base)));
        }
        if params.delay_ns > 0 {
            self.pending_hops = 1;
            self.phase = Phase::Waiting { req };
            return Some(Step::Delay(now_ns + params.delay_ns));
        }
        self.answer(req, id_header, 1);
        None
    }

    /// The next service answered (`Ok(hops)`) or failed (`Err(reason)`).
    pub fn next_done(
        &mut self,
        result: Result<u32, String>,
        id_header: &[u8],
        now_ns: u64,
    ) -> Step {
        let Phase::Waiting { req } = &self.phase else {
            return Step::Idle;
        };
        let req = req.clone();
        match result {
            Err(reason) => {
                self.phase = Phase::Head;
                let body = Body::Text(format!("next service failed: {reason}\n"));
                self.write_response(id_header, 502, body, 1, req.keep_alive, req.is_head);
                Step::Idle
            }
            Ok(hops) => {
                let hops = hops.saturating_add(1);
                let delay = req.params.as_ref().map(|p| p.delay_ns).unwrap_or(0);
                if delay > 0 {
                    self.pending_hops = hops;
                    Step::Delay(now_ns + delay)
                } else {
                    self.phase = Phase::Head;
                    self.answer(req, id_header, hops);
                    Step::Idle
                }
            }
        }
    }

    /// A delay timer for this connection expired.
    pub fn delay_done(&mut self, id_header: &[u8]) {
        if let Phase::Waiting { req } = &self.phase {
            let req = req.clone();
            self.phase = Phase::Head;
            let hops = self.pending_hops;
            self.answer(req, id_header, hops);
        }
    }

    fn answer(&mut self, req: Request, id_header: &[u8], hops: u32) {
        let (status, body, close) = match &req.params {
            Ok(p) => (
                p.status,
                p.size.map(Body::Filler).unwrap_or(Body::Default),
                p.close,
            ),
            Err(_) => (400, Body::Default, false),
        };
        self.write_response(
            id_header,
            status,
            body,
            hops,
            req.keep_alive && !close,
            req.is_head,
        );
    }

    fn write_response(
        &mut self,
        id_header: &[u8],
        status: u16,
        body: Body,
        hops: u32,
        keep_alive: bool,
        is_head: bool,
    ) {
        let no_body = status == 204 || status == 304;
        let len = match &body {
            Body::Default => DEFAULT_BODY.len() as u64,
            Body::Text(t) => t.len() as u64,
            Body::Filler(n) => *n,
        };
        let _ = write!(self.out, "HTTP/1.1 {status} {}\r\n", reason_phrase(status));
        if !no_body {
            let _ = write!(
                self.out,
                "Content-Length: {len}\r\nContent-Type: text/plain\r\n"
            );
        }
        self.out.extend_from_slice(id_header);
        let _ = write!(self.out, "x-netperf-hops: {hops}\r\n");
        if !keep_alive {
            self.out.extend_from_slice(b"Connection: close\r\n");
            self.close_after = true;
        }
        self.out.extend_from_slice(b"\r\n");
        if no_body || is_head {
            return;
        }
        match body {
            Body::Default => self.out.extend_from_slice(DEFAULT_BODY),
            Body::Text(t) => self.out.extend_from_slice(t.as_bytes()),
            Body::Filler(n) if n <= INLINE_BODY => {
                self.out.extend_from_slice(&FILLER[..n as usize])
            }
            Body::Filler(n) => self.body_left = n,
        }
    }

    /// Write pending output; `Ok(true)` when everything went out.
    pub fn flush(&mut self) -> io::Result<bool> {
        if self.tls.is_some() {
            return self.flush_tls();
        }
        while self.out_pos < self.out.len() {
            match self.stream.write(&self.out[self.out_pos..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.out_pos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.out.clear();
        self.out_pos = 0;
        while self.body_left > 0 {
            let n = self.body_left.min(FILLER.len() as u64) as usize;
            match self.stream.write(&FILLER[..n]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(w) => self.body_left -= w as u64,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// [`Self::flush`] over TLS: handshake records first, then the response encrypted.
    fn flush_tls(&mut self) -> io::Result<bool> {
        let Some(tls) = &mut self.tls else {
            return Ok(true);
        };
        if !tls_io::write_records(tls, &mut self.stream)? {
            return Ok(false);
        }
        if self.out_pos < self.out.len() {
            self.out_pos += tls_io::write_plain(tls, &mut self.stream, &self.out[self.out_pos..])?;
            if self.out_pos < self.out.len() || tls.wants_write() {
                return Ok(false);
            }
        }
        self.out.clear();
        self.out_pos = 0;
        while self.body_left > 0 {
            let n = self.body_left.min(FILLER.len() as u64) as usize;
            let took = tls_io::write_plain(tls, &mut self.stream, &FILLER[..n])?;
            self.body_left -= took as u64;
            if took < n || tls.wants_write() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// True when response bytes are waiting to be written.
    pub fn has_output(&self) -> bool {
        !self.out.is_empty() || self.body_left > 0
    }

    /// True when the connection should be closed now (after a successful flush).
    pub fn finished(&self) -> bool {
        let idle = matches!(self.phase, Phase::Head) && self.body_left == 0 && self.out.is_empty();
        (idle && (self.close_after || self.peer_eof))
            || (self.peer_eof && matches!(self.phase, Phase::Body { .. }))
    }
}

/// Response body choices.
enum Body {
    Default,
    Text(String),
    Filler(u64),
}
