//! gRPC over HTTP/2, the unary subset: length-prefixed messages (a compressed flag byte,
//! a 4-byte big-endian length, the message), `content-type: application/grpc`,
//! `te: trailers`, and `grpc-status` in the trailers (or in a trailers-only response).

use bytes::{BufMut, Bytes, BytesMut};

/// The media type of gRPC requests and responses.
pub const CONTENT_TYPE: &str = "application/grpc";
/// The echo server's gRPC method: answers with the request's message.
pub const ECHO_METHOD: &str = "/netperf.Echo/Echo";
/// Largest message accepted (gRPC's default receive limit, 4 MiB).
pub const MAX_MESSAGE: usize = 4 << 20;

/// gRPC status code names (0..=16), as the specification spells them.
pub const STATUS_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// `12 (UNIMPLEMENTED)` for a status code.
pub fn describe_status(code: u32) -> String {
    match STATUS_NAMES.get(code as usize) {
        Some(name) => format!("{code} ({name})"),
        None => format!("{code}"),
    }
}

/// One message framed for the wire (uncompressed).
pub fn frame(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + message.len());
    out.put_u8(0);
    out.put_u32(message.len() as u32);
    out.put_slice(message);
    out.freeze()
}

/// A path that names a gRPC method: `/package.Service/Method` (a query is allowed: only
/// the echo server reads it).
pub fn check_method_path(path_and_query: &str) -> Result<(), String> {
    let path = path_and_query.split('?').next().unwrap_or("");
    let mut parts = path.strip_prefix('/').unwrap_or("").split('/');
    let service = parts.next().unwrap_or("");
    let method = parts.next().unwrap_or("");
    if service.is_empty() || method.is_empty() || parts.next().is_some() {
        return Err(format!(
            "--grpc: the URL's path {path:?} must name a method: /package.Service/Method"
        ));
    }
    Ok(())
}

/// Parse hex digits (whitespace allowed between bytes) into bytes.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err("--grpc-message-hex: an odd number of hex digits".into());
    }
    digits
        .chunks(2)
        .map(|pair| {
            let s = std::str::from_utf8(pair).unwrap_or("??");
            u8::from_str_radix(s, 16)
                .map_err(|_| format!("--grpc-message-hex: {s:?} is not a hex byte"))
        })
        .collect()
}

/// Reads the length-prefixed messages of a response body as its DATA arrives.
#[derive(Debug, Default)]
pub struct MessageReader {
    header: [u8; 5],
    have: usize,
    left: usize,
    /// Complete messages seen.
    pub messages: u32,
    /// A message said it was compressed (we never ask for compression).
    pub compressed: bool,
}

impl MessageReader {
    /// Feed DATA bytes.
    pub fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.left > 0 {
                let n = self.left.min(data.len());
                self.left -= n;
                data = &data[n..];
                if self.left == 0 {
                    self.messages += 1;
                }
                continue;
            }
            let n = (5 - self.have).min(data.len());
            self.header[self.have..self.have + n].copy_from_slice(&data[..n]);
            self.have += n;
            data = &data[n..];
            if self.have == 5 {
                self.have = 0;
                self.compressed |= self.header[0] != 0;
                self.left = u32::from_be_bytes([
                    self.header[1],
                    self.header[2],
                    self.header[3],
                    self.header[4],
                ]) as usize;
                if self.left == 0 {
                    self.messages += 1;
                }
            }
        }
    }

    /// The body ended between messages.
    pub fn complete(&self) -> bool {
        self.have == 0 && self.left == 0
    }
}

/// Extract one whole message from a request body (the echo server's side): the bytes
/// after the 5-byte prefix, or None when the body is not exactly one message.
pub fn single_message(body: &[u8]) -> Option<&[u8]> {
    if body.len() < 5 || body[0] != 0 {
        return None;
    }
    let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    (body.len() == 5 + len).then(|| &body[5..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_reads_messages() {
        let framed = frame(b"hello");
        assert_eq!(&framed[..], b"\0\0\0\0\x05hello");
        assert_eq!(single_message(&framed), Some(&b"hello"[..]));
        assert_eq!(single_message(b"\0\0\0\0\x09hello"), None);
        let mut r = MessageReader::default();
        for chunk in framed.chunks(2) {
            r.feed(chunk);
        }
        r.feed(&frame(b""));
        assert_eq!((r.messages, r.complete(), r.compressed), (2, true, false));
        r.feed(b"\x01\0\0");
        assert!(!r.complete());
    }

    #[test]
    fn method_paths_and_hex() {
        assert!(check_method_path("/netperf.Echo/Echo").is_ok());
        assert!(check_method_path("/netperf.Echo/Echo?delay=1ms").is_ok());
        for bad in ["/", "/x", "/a/b/c", "//m", "/s/"] {
            assert!(check_method_path(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_hex("0a 05 68").unwrap(), vec![0x0a, 0x05, 0x68]);
        assert!(parse_hex("abc").is_err());
        assert!(parse_hex("zz").is_err());
        assert_eq!(describe_status(12), "12 (UNIMPLEMENTED)");
        assert_eq!(describe_status(99), "99");
    }
}
