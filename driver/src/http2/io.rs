//! The byte streams HTTP/2 runs over: a tokio `TcpStream`, or rustls on top of it through
//! [`TlsIo`], an `AsyncRead`/`AsyncWrite` adapter over a rustls connection that may have
//! been handshaken elsewhere (before the clock on a blocking socket, or by the echo
//! server's mio loop, which hands over its ALPN-h2 connections). [`Wire`] counts the bytes
//! and keeps the first ones the server sent, to name what answered.

use std::io::{self, Read, Write};
use std::ops::DerefMut;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use rustls::{ConnectionCommon, SideData};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::either::Either;

use crate::tls::diagnose::Sniff;

/// Bytes of the first read kept by [`Wire`].
const SNIFF: usize = 16;

/// What crossed one client connection's socket.
#[derive(Debug, Default)]
pub struct Wire {
    /// Bytes read from the socket (TLS records included).
    pub read: AtomicU64,
    /// Bytes written to the socket.
    pub written: AtomicU64,
    /// The first bytes the server sent.
    pub head: OnceLock<Vec<u8>>,
}

impl Wire {
    fn note_read(&self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.read.fetch_add(data.len() as u64, Ordering::Relaxed);
        if self.head.get().is_none() {
            let _ = self.head.set(data[..data.len().min(SNIFF)].to_vec());
        }
    }

    fn note_written(&self, n: usize) {
        self.written.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// The first bytes the server sent (empty when it sent none).
    pub fn first_bytes(&self) -> &[u8] {
        self.head.get().map(Vec::as_slice).unwrap_or(&[])
    }
}

/// `Read`/`Write` over an async stream for rustls: `Pending` becomes `WouldBlock`.
struct SyncIo<'a, 'b, T> {
    io: &'a mut T,
    cx: &'a mut Context<'b>,
    wire: Option<&'a Wire>,
}

impl<T: AsyncRead + Unpin> Read for SyncIo<'_, '_, T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut rb = ReadBuf::new(buf);
        match Pin::new(&mut *self.io).poll_read(self.cx, &mut rb) {
            Poll::Ready(Ok(())) => {
                if let Some(w) = self.wire {
                    w.note_read(rb.filled());
                }
                Ok(rb.filled().len())
            }
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl<T: AsyncWrite + Unpin> Write for SyncIo<'_, '_, T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match Pin::new(&mut *self.io).poll_write(self.cx, buf) {
            Poll::Ready(Ok(n)) => {
                if let Some(w) = self.wire {
                    w.note_written(n);
                }
                Ok(n)
            }
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match Pin::new(&mut *self.io).poll_flush(self.cx) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

/// Bytes read from a socket before it was handed over, served to the next reads first.
struct Replay {
    bytes: Vec<u8>,
    pos: usize,
}

impl Replay {
    fn new(bytes: Vec<u8>) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Serve what is left into `buf`; false when nothing is left.
    fn serve(&mut self, buf: &mut ReadBuf<'_>) -> bool {
        if self.pos >= self.bytes.len() {
            return false;
        }
        let n = buf.remaining().min(self.bytes.len() - self.pos);
        buf.put_slice(&self.bytes[self.pos..self.pos + n]);
        self.pos += n;
        if self.pos == self.bytes.len() {
            self.bytes = Vec::new();
            self.pos = 0;
        }
        true
    }
}

/// A rustls connection (client or server) over a tokio TCP stream.
pub struct TlsIo<C> {
    /// The socket.
    pub tcp: TcpStream,
    /// The TLS session.
    pub session: C,
    /// Plaintext already decrypted before the hand-over, served first.
    pre: Replay,
    /// The first byte the peer sent (to tell a cleartext answer from TLS).
    pub first_byte: Option<u8>,
    /// Why the TLS layer failed, when it did.
    pub error: Option<rustls::Error>,
    wire: Option<Arc<Wire>>,
}

impl<C, SD> TlsIo<C>
where
    C: DerefMut<Target = ConnectionCommon<SD>> + Unpin,
    SD: SideData,
{
    /// Wrap `session` on `tcp`; `pre`: plaintext the session already gave up.
    pub fn new(tcp: TcpStream, session: C, pre: Vec<u8>, wire: Option<Arc<Wire>>) -> Self {
        Self {
            tcp,
            session,
            pre: Replay::new(pre),
            first_byte: None,
            error: None,
            wire,
        }
    }

    fn read_records(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let mut io = SyncIo {
            io: &mut self.tcp,
            cx,
            wire: self.wire.as_deref(),
        };
        let mut sniff = Sniff {
            inner: &mut io,
            first: &mut self.first_byte,
        };
        let n = match self.session.read_tls(&mut sniff) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
            Err(e) => return Poll::Ready(Err(e)),
        };
        if let Err(e) = self.session.process_new_packets() {
            self.error = Some(e.clone());
            let _ = self.write_records(cx); // the alert, so the peer learns why
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, e)));
        }
        Poll::Ready(Ok(n))
    }

    fn write_records(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let mut io = SyncIo {
            io: &mut self.tcp,
            cx,
            wire: self.wire.as_deref(),
        };
        match self.session.write_tls(&mut io) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
            other => Poll::Ready(other),
        }
    }

    /// Drive the handshake to its end (`Ok`), or fail (`self.error` names a TLS failure;
    /// an EOF is `UnexpectedEof`).
    pub fn poll_handshake(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            while self.session.wants_write() {
                match self.write_records(cx) {
                    Poll::Ready(Ok(_)) => {}
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                }
            }
            if !self.session.is_handshaking() {
                return Poll::Ready(Ok(()));
            }
            match self.read_records(cx) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into())),
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<C, SD> AsyncRead for TlsIo<C>
where
    C: DerefMut<Target = ConnectionCommon<SD>> + Unpin,
    SD: SideData,
{
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pre.serve(buf) {
            return Poll::Ready(Ok(()));
        }
        loop {
            match this.session.reader().read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n); // 0: close_notify, the end of the stream
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return Poll::Ready(Ok(())); // TCP closed without close_notify: the end
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
            match this.read_records(cx) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            // key updates and tickets may want an answer
            while this.session.wants_write() {
                match this.write_records(cx) {
                    Poll::Ready(Ok(_)) => {}
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => break,
                }
            }
        }
    }
}

impl<C, SD> AsyncWrite for TlsIo<C>
where
    C: DerefMut<Target = ConnectionCommon<SD>> + Unpin,
    SD: SideData,
{
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let mut taken = 0;
        loop {
            match this.session.writer().write(&buf[taken..]) {
                Ok(n) => taken += n,
                Err(e) => return Poll::Ready(Err(e)),
            }
            while this.session.wants_write() {
                match this.write_records(cx) {
                    Poll::Ready(Ok(0)) | Poll::Pending => {
                        return if taken == 0 {
                            Poll::Pending
                        } else {
                            Poll::Ready(Ok(taken))
                        };
                    }
                    Poll::Ready(Ok(_)) => {}
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                }
            }
            if taken == buf.len() {
                return Poll::Ready(Ok(taken));
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.session.writer().flush()?;
        while this.session.wants_write() {
            match this.write_records(cx) {
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Pin::new(&mut this.tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.session.send_close_notify();
        while this.session.wants_write() {
            match this.write_records(cx) {
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(_)) => break,
                Poll::Pending => return Poll::Pending,
            }
        }
        Pin::new(&mut this.tcp).poll_shutdown(cx)
    }
}

/// A cleartext TCP stream with optional already-read bytes served first, counting the
/// bytes on a [`Wire`].
pub struct PlainIo {
    /// The socket.
    pub tcp: TcpStream,
    pre: Replay,
    wire: Option<Arc<Wire>>,
}

impl PlainIo {
    /// Wrap `tcp`; `pre`: bytes already read from it.
    pub fn new(tcp: TcpStream, pre: Vec<u8>, wire: Option<Arc<Wire>>) -> Self {
        Self {
            tcp,
            pre: Replay::new(pre),
            wire,
        }
    }
}

impl AsyncRead for PlainIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pre.serve(buf) {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let r = Pin::new(&mut this.tcp).poll_read(cx, buf);
        if let (Poll::Ready(Ok(())), Some(w)) = (&r, &this.wire) {
            w.note_read(&buf.filled()[before..]);
        }
        r
    }
}

impl AsyncWrite for PlainIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.tcp).poll_write(cx, buf);
        if let (Poll::Ready(Ok(n)), Some(w)) = (&r, &this.wire) {
            w.note_written(*n);
        }
        r
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.tcp).poll_write_vectored(cx, bufs);
        if let (Poll::Ready(Ok(n)), Some(w)) = (&r, &this.wire) {
            w.note_written(*n);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

/// Either transport, as one type for `h2`'s generic connection: cleartext (h2c) on the left,
/// TLS (h2) on the right.
pub type Io<C> = Either<PlainIo, Box<TlsIo<C>>>;

/// A tokio stream from a connected std socket (made non-blocking, Nagle off).
pub fn tokio_stream(stream: std::net::TcpStream) -> io::Result<TcpStream> {
    stream.set_nonblocking(true)?;
    let _ = stream.set_nodelay(true);
    TcpStream::from_std(stream)
}
