//! Name why an HTTP/2 request or connection failed: RST_STREAM and GOAWAY from the server,
//! a server that does not speak h2c (it answered HTTP/1.x) or HTTP at all over TLS, and
//! I/O errors as over HTTP/1.1.

use crate::load::stats::ErrorKind;
use crate::tls::diagnose::{looks_like_tls, PLAIN_TO_TLS};

/// Message for h2c against a server that answered HTTP/1.x.
pub const H2C_REFUSED: &str = "h2c refused: the server answered the HTTP/2 connection preface \
     with HTTP/1.x (it speaks HTTP/1.1 only; drop http=\"2\"/--http2, or enable h2c on it)";
/// Message for h2c against a server that closed without a word.
pub const H2C_CLOSED: &str = "h2c refused: the server closed the connection without answering \
     the HTTP/2 connection preface (does it speak h2c with prior knowledge?)";

/// A failure, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    /// How it is counted.
    pub kind: ErrorKind,
    /// What happened, in one line.
    pub message: String,
}

impl Failed {
    /// A failure of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// What the first bytes the server sent on a cleartext connection say, if anything: an
/// HTTP/1.x answer to the preface, or TLS records (an HTTPS port).
pub fn cleartext_answer(first: &[u8]) -> Option<Failed> {
    if first.starts_with(b"HTTP/1.") || first.starts_with(b"HTTP/0.") {
        return Some(Failed::new(ErrorKind::H2cRefused, H2C_REFUSED));
    }
    if looks_like_tls(first) {
        return Some(Failed::new(ErrorKind::PlainToTls, PLAIN_TO_TLS));
    }
    None
}

/// Classify an `h2` error. `first`: the first bytes the server sent on the connection
/// (cleartext only; empty when none or over TLS); `cleartext`: an h2c connection.
pub fn classify(e: &h2::Error, first: &[u8], cleartext: bool) -> Failed {
    if cleartext {
        if let Some(f) = cleartext_answer(first) {
            return f;
        }
    }
    let reason = e
        .reason()
        .map(|r| format!("{r:?}"))
        .unwrap_or_else(|| "no reason".into());
    if e.is_go_away() && e.is_remote() {
        return Failed::new(
            ErrorKind::GoAway,
            format!("the server sent GOAWAY ({reason}) with this request outstanding or after it"),
        );
    }
    if e.is_reset() && e.is_remote() {
        return Failed::new(
            ErrorKind::RstStream,
            format!("the server reset the stream (RST_STREAM {reason})"),
        );
    }
    if let Some(io) = e.get_io() {
        if cleartext && first.is_empty() && io.kind() != std::io::ErrorKind::TimedOut {
            return Failed::new(ErrorKind::H2cRefused, H2C_CLOSED);
        }
        let kind = match io.kind() {
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::BrokenPipe => ErrorKind::Reset,
            _ => ErrorKind::from_io(io),
        };
        return Failed::new(kind, format!("HTTP/2 connection failed: {io}"));
    }
    if e.is_go_away() {
        // our side gave up on the connection (a protocol error of the server's frames)
        return Failed::new(ErrorKind::Other, format!("HTTP/2 protocol error: {e}"));
    }
    Failed::new(ErrorKind::Other, format!("HTTP/2 error: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleartext_answers_are_named() {
        let f = cleartext_answer(b"HTTP/1.1 400 Bad Request\r\n").unwrap();
        assert_eq!(f.kind, ErrorKind::H2cRefused);
        assert!(f.message.contains("HTTP/1.1 only"), "{}", f.message);
        let f = cleartext_answer(&[0x15, 0x03, 0x03, 0x00, 0x02]).unwrap();
        assert_eq!(f.kind, ErrorKind::PlainToTls);
        assert_eq!(cleartext_answer(b"\0\0\x12\x04"), None);
    }

    #[test]
    fn local_errors_are_other_unless_the_server_answered_http1() {
        let local: h2::Error = h2::Reason::PROTOCOL_ERROR.into();
        let f = classify(&local, b"", false);
        assert_eq!(f.kind, ErrorKind::Other, "{}", f.message);
        let f = classify(&local, b"HTTP/1.1 400 Bad Request", true);
        assert_eq!(f.kind, ErrorKind::H2cRefused);
        assert_eq!(
            classify(&local, b"HTTP/1.1 400", false).kind,
            ErrorKind::Other
        );
    }
}
