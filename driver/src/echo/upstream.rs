//! Outgoing keep-alive connection from an echo server to the next service in a chain.

use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::net::TcpStream;

use crate::http1::{parse_response_head, BodyReader, ResponseHead};

/// Where an upstream connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpState {
    /// Non-blocking connect in progress.
    Connecting,
    /// A call is being sent or its response read.
    Active,
    /// Connected and waiting in the pool.
    Idle,
}

/// The result of driving an upstream connection after an event.
#[derive(Debug, PartialEq, Eq)]
pub enum UpOutcome {
    /// Nothing finished yet.
    Pending,
    /// Response complete.
    Done {
        status: u16,
        hops: u32,
        keep_alive: bool,
    },
    /// The call failed; `retryable` when a reused idle connection died before any byte.
    Failed { reason: String, retryable: bool },
}

/// One connection to the next service.
pub struct Upstream {
    /// The socket.
    pub stream: TcpStream,
    /// State.
    pub state: UpState,
    /// Inbound connection (slab index, generation) waiting for this call.
    pub owner: Option<(usize, u64)>,
    /// True when the current call runs on a connection that served an earlier call.
    pub reused: bool,
    out: Vec<u8>,
    out_pos: usize,
    rbuf: Vec<u8>,
    head: Option<ResponseHead>,
    body: BodyReader,
    got_bytes: bool,
}

impl Upstream {
    /// Start a non-blocking connect to `addr`.
    pub fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            state: UpState::Connecting,
            owner: None,
            reused: false,
            out: Vec::new(),
            out_pos: 0,
            rbuf: Vec::new(),
            head: None,
            body: BodyReader::Done,
            got_bytes: false,
        })
    }

    /// Queue a request for `owner`; call [`Upstream::drive`] afterwards.
    pub fn begin(&mut self, owner: (usize, u64), request: &[u8]) {
        self.reused = self.state == UpState::Idle;
        if self.state == UpState::Idle {
            self.state = UpState::Active;
        }
        self.owner = Some(owner);
        self.out.clear();
        self.out.extend_from_slice(request);
        self.out_pos = 0;
        self.rbuf.clear();
        self.head = None;
        self.body = BodyReader::Done;
        self.got_bytes = false;
    }

    /// The request of the current call (for a retry on another connection).
    pub fn request_bytes(&self) -> Vec<u8> {
        self.out.clone()
    }

    /// Progress after an event (or right after `begin`): connect, write, read.
    pub fn drive(&mut self, scratch: &mut [u8]) -> UpOutcome {
        if self.state == UpState::Connecting {
            match self.stream.take_error() {
                Ok(Some(e)) | Err(e) => return self.fail(format!("connect: {e}"), false),
                Ok(None) => {}
            }
            match self.stream.peer_addr() {
                Ok(_) => self.state = UpState::Active,
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return UpOutcome::Pending,
                Err(e) => return self.fail(format!("connect: {e}"), false),
            }
        }
        if self.state == UpState::Idle {
            // Any readiness on an idle connection means the peer closed or misbehaved.
            return UpOutcome::Failed {
                reason: "idle connection closed".into(),
                retryable: false,
            };
        }
        if let Err(e) = self.flush() {
            return self.fail(format!("write: {e}"), self.reused && !self.got_bytes);
        }
        if self.out_pos < self.out.len() {
            return UpOutcome::Pending;
        }
        self.read_response(scratch)
    }

    fn flush(&mut self) -> io::Result<()> {
        while self.out_pos < self.out.len() {
            match self.stream.write(&self.out[self.out_pos..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.out_pos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn read_response(&mut self, scratch: &mut [u8]) -> UpOutcome {
        let mut eof = false;
        loop {
            match self.stream.read(scratch) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    self.got_bytes = true;
                    self.rbuf.extend_from_slice(&scratch[..n]);
                    if n < scratch.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(format!("read: {e}"), self.reused && !self.got_bytes),
            }
        }
        if self.head.is_none() {
            match parse_response_head(&self.rbuf, false) {
                Ok(Some(head)) => {
                    self.rbuf.drain(..head.head_len);
                    self.body = BodyReader::new(head.framing);
                    self.head = Some(head);
                }
                Ok(None) if eof => {
                    return self.fail(
                        "next service closed the connection".into(),
                        self.reused && !self.got_bytes,
                    )
                }
                Ok(None) => return UpOutcome::Pending,
                Err(e) => return self.fail(e.0, false),
            }
        }
        match self.body.feed(&self.rbuf) {
            Ok(used) => {
                self.rbuf.drain(..used);
            }
            Err(e) => return self.fail(e.0, false),
        }
        let head = self.head.as_ref().expect("head parsed");
        let until_close_done = eof && matches!(self.body, BodyReader::UntilClose);
        if self.body.is_done() || until_close_done {
            let keep_alive = head.keep_alive && !eof && self.rbuf.is_empty();
            let out = UpOutcome::Done {
                status: head.status,
                hops: head.hops.unwrap_or(1),
                keep_alive,
            };
            self.state = UpState::Idle;
            self.owner = None;
            return out;
        }
        if eof {
            return self.fail("next service closed mid-response".into(), false);
        }
        UpOutcome::Pending
    }

    fn fail(&mut self, reason: String, retryable: bool) -> UpOutcome {
        UpOutcome::Failed { reason, retryable }
    }
}
