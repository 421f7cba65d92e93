//! One client connection of the load generator: connect, write a request, read and
//! frame the response. Timing and accounting live in the worker.

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::net::TcpStream;

use super::liveness::ConnectError;
use super::stats::ErrorKind;
use super::tls_conn::{Handshake, Pull, TlsConn};
use crate::http1::{parse_response_head, BodyReader};
use crate::tls::client::TlsTarget;
use crate::tls::diagnose::{looks_like_tls, TlsFailure};

/// Connection state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// No socket.
    Disconnected,
    /// Non-blocking connect in progress.
    Connecting,
    /// Connected, no request outstanding.
    Idle,
    /// A request is being written or its response read.
    Busy,
}

/// A request assigned to a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlight {
    /// Intended send time (open loop) or first attempt time (closed loop).
    pub intended_ns: u64,
    /// When the request was written (0 until then).
    pub sent_ns: u64,
    /// Counted in the measured window?
    pub in_window: bool,
}

/// How a response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// An HTTP/1.1 response; `head`: the request was HEAD, so there is no body.
    Http { head: bool },
    /// Raw TCP request/response: the server echoes the request's bytes, so the response is
    /// complete when this many bytes have come back.
    Echo(usize),
}

/// Result of reading from a busy connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Response not complete yet.
    Pending,
    /// Response complete.
    Complete { status: u16, keep_alive: bool },
    /// The connection failed.
    Failed(ErrorKind),
}

/// One connection slot.
pub struct ClientConn {
    /// Socket, when connected or connecting.
    pub stream: Option<TcpStream>,
    /// State.
    pub state: ConnState,
    /// Outstanding request.
    pub req: Option<InFlight>,
    /// When the current connect started.
    pub connect_started_ns: u64,
    /// Sockets opened on this slot so far.
    pub connects: u64,
    /// Do not reconnect before this time.
    pub retry_at_ns: u64,
    /// TLS session of an `https://` connection (None: cleartext, the fast path).
    pub tls: Option<Box<TlsConn>>,
    wpos: usize,
    head_buf: Vec<u8>,
    head: Option<(u16, bool)>,
    body: BodyReader,
    echoed: usize,
}

impl ClientConn {
    /// An empty slot.
    pub fn disconnected() -> Self {
        Self {
            stream: None,
            state: ConnState::Disconnected,
            req: None,
            connect_started_ns: 0,
            connects: 0,
            retry_at_ns: 0,
            tls: None,
            wpos: 0,
            head_buf: Vec::new(),
            head: None,
            body: BodyReader::Done,
            echoed: 0,
        }
    }

    /// A slot holding a connection opened before the run (already counted as a socket).
    pub fn connected(stream: std::net::TcpStream) -> io::Result<Self> {
        stream.set_nonblocking(true)?;
        let mut c = Self::disconnected();
        c.stream = Some(TcpStream::from_std(stream));
        c.state = ConnState::Idle;
        c.connects = 1;
        Ok(c)
    }

    /// Attach the TLS session of a connection that completed its handshake before the run.
    pub fn with_tls(mut self, tls: TlsConn) -> Self {
        self.tls = Some(Box::new(tls));
        self
    }

    /// The TCP connection is up: start the TLS handshake (the ClientHello goes out now).
    pub fn start_tls(&mut self, target: &TlsTarget, now_ns: u64) -> Result<(), TlsFailure> {
        let mut tls = TlsConn::new(target, now_ns)?;
        if let Some(stream) = &mut self.stream {
            tls.flush(stream).map_err(|kind| TlsFailure {
                kind,
                message: "the connection failed while sending the ClientHello".into(),
            })?;
        }
        self.tls = Some(Box::new(tls));
        Ok(())
    }

    /// A handshake completed and why the connection failed, since last asked (TLS only).
    pub fn take_tls_events(&mut self) -> (Option<Handshake>, Option<TlsFailure>) {
        match &mut self.tls {
            Some(t) => (t.finished.take(), t.failure.take()),
            None => (None, None),
        }
    }

    /// Start a non-blocking connect.
    pub fn start_connect(&mut self, addr: SocketAddr, now_ns: u64) -> Result<(), ConnectError> {
        self.reset_parser();
        self.tls = None;
        self.connect_started_ns = now_ns;
        self.connects += 1;
        let stream = TcpStream::connect(addr).map_err(|e| ConnectError::from_io(&e))?;
        let _ = stream.set_nodelay(true);
        self.stream = Some(stream);
        self.state = ConnState::Connecting;
        Ok(())
    }

    /// After a readiness event while connecting: `Ok(true)` once connected.
    pub fn finish_connect(&mut self) -> Result<bool, ConnectError> {
        let Some(stream) = &self.stream else {
            return Err(ConnectError::of_kind(ErrorKind::Other));
        };
        match stream.take_error() {
            Ok(Some(e)) | Err(e) => return Err(ConnectError::from_io(&e)),
            Ok(None) => {}
        }
        match stream.peer_addr() {
            Ok(_) => {
                self.state = ConnState::Idle;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(ConnectError::from_io(&e)),
        }
    }

    /// Begin writing `request`; the state becomes `Busy`.
    pub fn begin_request(&mut self, req: InFlight) {
        self.req = Some(req);
        self.state = ConnState::Busy;
        self.wpos = 0;
        self.reset_parser();
    }

    /// Write what is left of `request`; `Ok(bytes written now)`.
    pub fn write_request(&mut self, request: &[u8]) -> Result<usize, ErrorKind> {
        let Some(stream) = &mut self.stream else {
            return Err(ErrorKind::Other);
        };
        if let Some(tls) = &mut self.tls {
            return tls.write(stream, request, &mut self.wpos);
        }
        let start = self.wpos;
        while self.wpos < request.len() {
            match stream.write(&request[self.wpos..]) {
                Ok(0) => return Err(ErrorKind::Reset),
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ErrorKind::from_io(&e)),
            }
        }
        Ok(self.wpos - start)
    }

    /// True while part of the request is still unwritten.
    pub fn write_pending(&self, request: &[u8]) -> bool {
        self.state == ConnState::Busy
            && (self.wpos < request.len()
                || self.tls.as_ref().is_some_and(|t| t.session.wants_write()))
    }

    /// Read what is available and frame the response. Returns the outcome and the
    /// number of bytes read.
    pub fn read_response(&mut self, scratch: &mut [u8], framing: Framing) -> (ReadOutcome, usize) {
        if self.stream.is_none() {
            return (ReadOutcome::Failed(ErrorKind::Other), 0);
        }
        if let Some(mut tls) = self.tls.take() {
            let result = self.read_tls_response(&mut tls, scratch, framing);
            self.tls = Some(tls);
            return result;
        }
        let mut total = 0;
        loop {
            let read = self.stream.as_mut().expect("checked above").read(scratch);
            let n = match read {
                Ok(0) => return (self.eof_outcome(), total),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return (ReadOutcome::Pending, total)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return (ReadOutcome::Failed(ErrorKind::from_io(&e)), total),
            };
            total += n;
            let outcome = match framing {
                Framing::Http { head } => self.consume(&scratch[..n], head),
                Framing::Echo(len) => self.consume_echo(n, len),
            };
            match outcome {
                ReadOutcome::Pending if n == scratch.len() => continue,
                ReadOutcome::Pending if matches!(self.body, BodyReader::UntilClose) => continue,
                other => return (other, total),
            }
        }
    }

    /// The TLS counterpart of [`Self::read_response`]: read records until the socket would
    /// block, frame the plaintext as it is decrypted.
    fn read_tls_response(
        &mut self,
        tls: &mut TlsConn,
        scratch: &mut [u8],
        framing: Framing,
    ) -> (ReadOutcome, usize) {
        let mut total = 0;
        loop {
            let pulled = tls.pull(self.stream.as_mut().expect("checked by the caller"));
            if let Pull::Records(n) = pulled {
                total += n;
            }
            let mut closed = false;
            loop {
                match tls.session.reader().read(scratch) {
                    Ok(0) => {
                        closed = true; // close_notify
                        break;
                    }
                    Ok(n) => {
                        let outcome = match framing {
                            Framing::Http { head } => self.consume(&scratch[..n], head),
                            Framing::Echo(len) => self.consume_echo(n, len),
                        };
                        match outcome {
                            ReadOutcome::Pending => {}
                            // TLS records inside TLS: garbage, not a cleartext client's mistake
                            ReadOutcome::Failed(ErrorKind::PlainToTls) => {
                                return (ReadOutcome::Failed(ErrorKind::Other), total)
                            }
                            other => return (other, total),
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        closed = true; // TCP closed without close_notify
                        break;
                    }
                }
            }
            match pulled {
                Pull::Records(_) if !closed => {}
                Pull::WouldBlock if !closed => return (ReadOutcome::Pending, total),
                Pull::Failed(kind) => return (ReadOutcome::Failed(kind), total),
                _ => return (self.eof_outcome(), total),
            }
        }
    }

    /// The server closed the connection: a response framed by the close is complete,
    /// anything else is a read error.
    fn eof_outcome(&self) -> ReadOutcome {
        if matches!(self.body, BodyReader::UntilClose) && self.head.is_some() {
            let status = self.head.map(|h| h.0).unwrap_or(0);
            ReadOutcome::Complete {
                status,
                keep_alive: false,
            }
        } else {
            ReadOutcome::Failed(ErrorKind::ReadError)
        }
    }

    fn consume_echo(&mut self, n: usize, len: usize) -> ReadOutcome {
        self.echoed += n;
        match self.echoed.cmp(&len) {
            std::cmp::Ordering::Less => ReadOutcome::Pending,
            std::cmp::Ordering::Equal => ReadOutcome::Complete {
                status: 200,
                keep_alive: true,
            },
            std::cmp::Ordering::Greater => ReadOutcome::Failed(ErrorKind::Other), // more than was sent
        }
    }

    fn consume(&mut self, data: &[u8], head_request: bool) -> ReadOutcome {
        let mut rest = data;
        if self.head.is_none() {
            let parsed = if self.head_buf.is_empty() {
                parse_response_head(data, head_request)
            } else {
                self.head_buf.extend_from_slice(data);
                parse_response_head(&self.head_buf, head_request)
            };
            match parsed {
                Ok(Some(h)) => {
                    self.head = Some((h.status, h.keep_alive));
                    self.body = BodyReader::new(h.framing);
                    if self.head_buf.is_empty() {
                        rest = &data[h.head_len..];
                    } else {
                        let buf = std::mem::take(&mut self.head_buf);
                        return self.consume_body(&buf[h.head_len..]);
                    }
                }
                Ok(None) => {
                    if self.head_buf.is_empty() {
                        self.head_buf.extend_from_slice(data);
                    }
                    if self.head_buf.len() > 64 * 1024 {
                        return ReadOutcome::Failed(ErrorKind::Other);
                    }
                    return ReadOutcome::Pending;
                }
                Err(_) => {
                    let seen = if self.head_buf.is_empty() {
                        data
                    } else {
                        &self.head_buf
                    };
                    if looks_like_tls(seen) {
                        return ReadOutcome::Failed(ErrorKind::PlainToTls);
                    }
                    return ReadOutcome::Failed(ErrorKind::Other);
                }
            }
        }
        self.consume_body(rest)
    }

    fn consume_body(&mut self, data: &[u8]) -> ReadOutcome {
        match self.body.feed(data) {
            Ok(used) => {
                if self.body.is_done() {
                    if used != data.len() {
                        return ReadOutcome::Failed(ErrorKind::Other); // bytes beyond the response
                    }
                    let (status, keep_alive) = self.head.expect("head parsed");
                    return ReadOutcome::Complete { status, keep_alive };
                }
                ReadOutcome::Pending
            }
            Err(_) => ReadOutcome::Failed(ErrorKind::Other),
        }
    }

    fn reset_parser(&mut self) {
        self.echoed = 0;
        self.head_buf.clear();
        self.head = None;
        self.body = BodyReader::Done;
    }

    /// Drop the socket (the caller deregisters it first).
    pub fn close(&mut self) {
        self.stream = None;
        self.tls = None;
        self.state = ConnState::Disconnected;
        self.reset_parser();
    }
}
