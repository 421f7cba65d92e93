//! The TLS side of one client connection: a rustls `ClientConnection` driven through its
//! non-blocking API (`read_tls` / `process_new_packets` / `write_tls`) on the mio socket,
//! plus the blocking handshake of the connections opened before the clock starts.

use std::io::{self, Read, Write};
use std::time::Duration;

use rustls::ClientConnection;

use super::stats::ErrorKind;
use crate::tls::client::TlsTarget;
use crate::tls::diagnose::{self, Sniff, TlsFailure};

/// After a TLS 1.3 handshake before the run, how long to wait for the server's verdict on
/// our client certificate (it comes after the client's Finished, so after the handshake).
const SETTLE: Duration = Duration::from_millis(100);

/// A completed handshake, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// When the TCP connection was up (the ClientHello was queued).
    pub started_ns: u64,
    /// An abbreviated handshake (session resumed).
    pub resumed: bool,
    /// `TLSv1.2` / `TLSv1.3`.
    pub version: &'static str,
    /// IANA name of the cipher suite.
    pub cipher_suite: &'static str,
    /// ALPN protocol agreed (`http/1.1`, `h2`), None when the server took no part in ALPN.
    pub alpn: Option<&'static str>,
}

/// What one pass of reading TLS records gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pull {
    /// Records read and processed (this many bytes from the socket).
    Records(usize),
    /// Nothing more to read now.
    WouldBlock,
    /// The server closed the TCP connection.
    Eof,
    /// The connection failed (see [`TlsConn::failure`]).
    Failed(ErrorKind),
}

/// TLS state of one connection.
pub struct TlsConn {
    /// The rustls session.
    pub session: ClientConnection,
    started_ns: u64,
    first_byte: Option<u8>,
    client_cert: bool,
    /// A handshake completed and not yet taken by the worker.
    pub finished: Option<Handshake>,
    /// Why the connection failed, when it did.
    pub failure: Option<TlsFailure>,
}

impl TlsConn {
    /// A new session on a connection that came up at `now_ns` (its ClientHello queued).
    pub fn new(target: &TlsTarget, now_ns: u64) -> Result<Self, TlsFailure> {
        let session = target.session().map_err(|e| TlsFailure {
            kind: ErrorKind::TlsHandshake,
            message: format!("TLS session: {e}"),
        })?;
        Ok(Self {
            session,
            started_ns: now_ns,
            first_byte: None,
            client_cert: target.settings.client_certificate,
            finished: None,
            failure: None,
        })
    }

    /// Write queued TLS records until done or the socket would block.
    pub fn flush<S: Write>(&mut self, stream: &mut S) -> Result<(), ErrorKind> {
        while self.session.wants_write() {
            match self.session.write_tls(stream) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ErrorKind::from_io(&e)),
            }
        }
        Ok(())
    }

    /// Hand what is left of `request` (from `*wpos`) to the session and write the records;
    /// the number of request bytes taken now. Before the handshake completes rustls holds
    /// the request and sends it right after the client's Finished.
    pub fn write<S: Write>(
        &mut self,
        stream: &mut S,
        request: &[u8],
        wpos: &mut usize,
    ) -> Result<usize, ErrorKind> {
        let start = *wpos;
        loop {
            let mut took = 0;
            if *wpos < request.len() {
                took = self
                    .session
                    .writer()
                    .write(&request[*wpos..])
                    .map_err(|e| ErrorKind::from_io(&e))?;
                *wpos += took;
            }
            if !self.session.wants_write() {
                break;
            }
            match self.session.write_tls(stream) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ErrorKind::from_io(&e)),
            }
            if took == 0 && *wpos >= request.len() && !self.session.wants_write() {
                break;
            }
        }
        Ok(*wpos - start)
    }

    /// Read and process one batch of TLS records; answers the handshake.
    pub fn pull<S: Read + Write>(&mut self, stream: &mut S) -> Pull {
        let mut sniff = Sniff {
            inner: &mut *stream,
            first: &mut self.first_byte,
        };
        let n = match self.session.read_tls(&mut sniff) {
            Ok(0) => {
                if self.session.is_handshaking() {
                    return self.fail(diagnose::closed_during_handshake(self.first_byte));
                }
                return Pull::Eof;
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Pull::WouldBlock,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Pull::Records(0),
            Err(e) => return Pull::Failed(ErrorKind::from_io(&e)),
        };
        let handshaking = self.session.is_handshaking();
        if let Err(e) = self.session.process_new_packets() {
            let failure = diagnose::classify(&e, self.first_byte, self.client_cert);
            let _ = self.flush(stream); // the alert, so the server learns why
            return self.fail(failure);
        }
        if handshaking && !self.session.is_handshaking() {
            self.finished = Some(self.handshake());
        }
        if let Err(kind) = self.flush(stream) {
            return Pull::Failed(kind);
        }
        Pull::Records(n)
    }

    fn fail(&mut self, failure: TlsFailure) -> Pull {
        let kind = failure.kind;
        self.failure = Some(failure);
        Pull::Failed(kind)
    }

    fn handshake(&self) -> Handshake {
        let s = &self.session;
        Handshake {
            started_ns: self.started_ns,
            resumed: s.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            version: s
                .protocol_version()
                .map_or("other", crate::tls::version_name),
            cipher_suite: s
                .negotiated_cipher_suite()
                .and_then(|c| c.suite().as_str())
                .unwrap_or("other"),
            alpn: crate::tls::alpn_name(s.alpn_protocol()),
        }
    }

    /// Handshake on a blocking socket before the run (with `timeout` on each read);
    /// after TLS 1.3, waits briefly for the server's verdict on the client certificate.
    pub fn handshake_blocking(
        target: &TlsTarget,
        stream: &mut std::net::TcpStream,
        timeout: Duration,
    ) -> Result<Self, TlsFailure> {
        let mut tls = Self::new(target, 0)?;
        let io_failure = |e: io::Error| TlsFailure {
            kind: ErrorKind::TlsHandshake,
            message: if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) {
                format!(
                    "handshake failure: no answer to the ClientHello within {}s",
                    timeout.as_secs_f64()
                )
            } else {
                format!("handshake failure: {e}")
            },
        };
        let _ = stream.set_read_timeout(Some(timeout));
        while tls.session.is_handshaking() {
            tls.flush_blocking(stream).map_err(io_failure)?;
            match tls.pull(stream) {
                Pull::Records(_) => {}
                Pull::Failed(_) => {
                    return Err(tls
                        .failure
                        .take()
                        .unwrap_or_else(|| io_failure(io::Error::other("connection failed"))))
                }
                Pull::Eof => return Err(diagnose::closed_during_handshake(tls.first_byte)),
                Pull::WouldBlock => return Err(io_failure(io::ErrorKind::TimedOut.into())),
            }
        }
        tls.flush_blocking(stream).map_err(io_failure)?;
        if tls.session.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3) {
            let _ = stream.set_read_timeout(Some(SETTLE.min(timeout)));
            if let Pull::Failed(_) = tls.pull(stream) {
                if let Some(f) = tls.failure.take() {
                    return Err(f);
                }
            }
        }
        let _ = stream.set_read_timeout(None);
        Ok(tls)
    }

    fn flush_blocking(&mut self, stream: &mut std::net::TcpStream) -> io::Result<()> {
        while self.session.wants_write() {
            self.session.write_tls(stream)?;
        }
        Ok(())
    }
}
