//! HTTP/1.1 message framing shared by the load client and the echo server.
//!
//! Heads are parsed with `httparse`; bodies are framed by `Content-Length`, chunked
//! transfer coding, or (responses only) the end of the connection.

/// Most headers we look at in one message head.
const MAX_HEADERS: usize = 64;

/// A framing or syntax problem; the connection must be closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

/// How the body of a message is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    /// No body at all.
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Until the peer closes (responses without length, HTTP/1.0 style).
    UntilClose,
}

/// What the client needs from a response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// Status code.
    pub status: u16,
    /// Bytes of the head including the blank line.
    pub head_len: usize,
    /// Body framing.
    pub framing: BodyFraming,
    /// Whether the connection may be reused afterwards.
    pub keep_alive: bool,
    /// Value of `x-netperf-hops`, when present.
    pub hops: Option<u32>,
}

/// Parse a response head from `buf`; `Ok(None)` when more bytes are needed.
pub fn parse_response_head(
    buf: &[u8],
    request_was_head: bool,
) -> Result<Option<ResponseHead>, ProtocolError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let head_len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(ProtocolError(format!("bad response head: {e}"))),
    };
    let status = resp.code.unwrap_or(0);
    let http10 = resp.version == Some(0);
    let mut content_length = None;
    let mut chunked = false;
    let mut conn_close = false;
    let mut conn_keep_alive = false;
    let mut hops = None;
    for h in resp.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            content_length = Some(parse_u64(h.value)?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = contains_token(h.value, b"chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            conn_close |= contains_token(h.value, b"close");
            conn_keep_alive |= contains_token(h.value, b"keep-alive");
        } else if name.eq_ignore_ascii_case("x-netperf-hops") {
            hops = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok());
        }
    }
    let no_body =
        request_was_head || status == 204 || status == 304 || (100..200).contains(&status);
    let framing = if no_body {
        BodyFraming::Empty
    } else if chunked {
        BodyFraming::Chunked
    } else if let Some(n) = content_length {
        if n == 0 {
            BodyFraming::Empty
        } else {
            BodyFraming::Length(n)
        }
    } else {
        BodyFraming::UntilClose
    };
    let keep_alive =
        framing != BodyFraming::UntilClose && !conn_close && (!http10 || conn_keep_alive);
    Ok(Some(ResponseHead {
        status,
        head_len,
        framing,
        keep_alive,
        hops,
    }))
}

/// What the echo server needs from a request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    /// Method, e.g. `GET`.
    pub method: String,
    /// Request target (path and query).
    pub target: String,
    /// Bytes of the head including the blank line.
    pub head_len: usize,
    /// Body framing (never `UntilClose` for requests).
    pub framing: BodyFraming,
    /// Whether the client allows the connection to stay open.
    pub keep_alive: bool,
}

/// Parse a request head from `buf`; `Ok(None)` when more bytes are needed.
pub fn parse_request_head(buf: &[u8]) -> Result<Option<RequestHead>, ProtocolError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(ProtocolError(format!("bad request head: {e}"))),
    };
    let http10 = req.version == Some(0);
    let mut content_length = 0u64;
    let mut chunked = false;
    let mut conn_close = false;
    let mut conn_keep_alive = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            content_length = parse_u64(h.value)?;
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = contains_token(h.value, b"chunked");
        } else if h.name.eq_ignore_ascii_case("connection") {
            conn_close |= contains_token(h.value, b"close");
            conn_keep_alive |= contains_token(h.value, b"keep-alive");
        }
    }
    let framing = if chunked {
        BodyFraming::Chunked
    } else if content_length > 0 {
        BodyFraming::Length(content_length)
    } else {
        BodyFraming::Empty
    };
    Ok(Some(RequestHead {
        method: req.method.unwrap_or("GET").to_string(),
        target: req.path.unwrap_or("/").to_string(),
        head_len,
        framing,
        keep_alive: !conn_close && (!http10 || conn_keep_alive),
    }))
}

fn parse_u64(value: &[u8]) -> Result<u64, ProtocolError> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| ProtocolError("bad Content-Length".into()))
}

fn contains_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|part| part.trim_ascii().eq_ignore_ascii_case(token))
}

/// Incremental body reader: feed bytes, learn how many belong to the body and when it ends.
#[derive(Debug, Clone)]
pub enum BodyReader {
    /// Body complete.
    Done,
    /// Fixed number of bytes still to come.
    Length(u64),
    /// Chunked transfer coding in progress.
    Chunked(ChunkedState),
    /// Everything until the peer closes.
    UntilClose,
}

/// Position inside a chunked body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkedState {
    /// Reading the hex size; value so far and whether a digit was seen.
    Size(u64, bool),
    /// Skipping a chunk extension up to CR LF.
    Extension(u64),
    /// Expecting the LF after the size line's CR.
    SizeLf(u64),
    /// Chunk data bytes still to skip.
    Data(u64),
    /// Expecting CR after data.
    DataCr,
    /// Expecting LF after data.
    DataLf,
    /// At the start of a trailer line (an empty line ends the body).
    TrailerStart,
    /// Inside a trailer line.
    TrailerLine,
    /// Expecting the final LF.
    FinalLf,
    /// Expecting LF after a trailer line's CR.
    TrailerLf,
}

impl BodyReader {
    /// A reader for the given framing.
    pub fn new(framing: BodyFraming) -> Self {
        match framing {
            BodyFraming::Empty => BodyReader::Done,
            BodyFraming::Length(n) => BodyReader::Length(n),
            BodyFraming::Chunked => BodyReader::Chunked(ChunkedState::Size(0, false)),
            BodyFraming::UntilClose => BodyReader::UntilClose,
        }
    }

    /// True once the whole body has been consumed.
    pub fn is_done(&self) -> bool {
        matches!(self, BodyReader::Done)
    }

    /// Consume body bytes from `data`; returns how many bytes belonged to the body.
    pub fn feed(&mut self, data: &[u8]) -> Result<usize, ProtocolError> {
        match self {
            BodyReader::Done => Ok(0),
            BodyReader::UntilClose => Ok(data.len()),
            BodyReader::Length(rem) => {
                let take = (*rem).min(data.len() as u64);
                *rem -= take;
                if *rem == 0 {
                    *self = BodyReader::Done;
                }
                Ok(take as usize)
            }
            BodyReader::Chunked(state) => {
                let (used, done) = feed_chunked(state, data)?;
                if done {
                    *self = BodyReader::Done;
                }
                Ok(used)
            }
        }
    }
}

fn feed_chunked(state: &mut ChunkedState, data: &[u8]) -> Result<(usize, bool), ProtocolError> {
    use ChunkedState::*;
    let bad = |what: &str| Err(ProtocolError(format!("bad chunked body: {what}")));
    let mut i = 0;
    while i < data.len() {
        if let Data(rem) = *state {
            let take = rem.min((data.len() - i) as u64);
            i += take as usize;
            *state = if rem == take {
                DataCr
            } else {
                Data(rem - take)
            };
            continue;
        }
        let b = data[i];
        i += 1;
        *state = match *state {
            Size(v, seen) => match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    let digit = (b as char).to_digit(16).unwrap() as u64;
                    if v > (u64::MAX >> 8) {
                        return bad("chunk size too large");
                    }
                    Size(v * 16 + digit, true)
                }
                b';' | b' ' | b'\t' if seen => Extension(v),
                b'\r' if seen => SizeLf(v),
                _ => return bad("invalid size line"),
            },
            Extension(v) => {
                if b == b'\r' {
                    SizeLf(v)
                } else {
                    Extension(v)
                }
            }
            SizeLf(v) => {
                if b != b'\n' {
                    return bad("missing LF after size");
                }
                if v == 0 {
                    TrailerStart
                } else {
                    Data(v)
                }
            }
            DataCr => {
                if b == b'\r' {
                    DataLf
                } else {
                    return bad("missing CR after data");
                }
            }
            DataLf => {
                if b == b'\n' {
                    Size(0, false)
                } else {
                    return bad("missing LF after data");
                }
            }
            TrailerStart => {
                if b == b'\r' {
                    FinalLf
                } else {
                    TrailerLine
                }
            }
            TrailerLine => {
                if b == b'\r' {
                    TrailerLf
                } else {
                    TrailerLine
                }
            }
            TrailerLf => {
                if b == b'\n' {
                    TrailerStart
                } else {
                    return bad("missing LF in trailer");
                }
            }
            FinalLf => {
                if b != b'\n' {
                    return bad("missing final LF");
                }
                return Ok((i, true));
            }
            Data(_) => unreachable!(),
        };
    }
    Ok((i, false))
}

/// Standard reason phrase for a status code (empty when unknown).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_with_length() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Netperf-Hops: 3\r\n\r\nhello";
        let head = parse_response_head(raw, false).unwrap().unwrap();
        assert_eq!(head.status, 200);
        assert_eq!(head.framing, BodyFraming::Length(5));
        assert!(head.keep_alive);
        assert_eq!(head.hops, Some(3));
        let mut body = BodyReader::new(head.framing);
        assert_eq!(body.feed(&raw[head.head_len..]).unwrap(), 5);
        assert!(body.is_done());
    }

    #[test]
    fn partial_head_needs_more() {
        assert_eq!(
            parse_response_head(b"HTTP/1.1 200 OK\r\nContent-Le", false).unwrap(),
            None
        );
    }

    #[test]
    fn http10_and_close_are_not_keep_alive() {
        let h = parse_response_head(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert!(!h.keep_alive);
        let h = parse_response_head(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n",
            false,
        )
        .unwrap()
        .unwrap();
        assert!(!h.keep_alive);
        let h = parse_response_head(b"HTTP/1.1 200 OK\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, BodyFraming::UntilClose);
        assert!(!h.keep_alive);
        let h = parse_response_head(b"HTTP/1.1 204 No Content\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, BodyFraming::Empty);
        assert!(h.keep_alive);
    }

    #[test]
    fn chunked_body_split_anywhere() {
        let body = b"4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Trailer: y\r\n\r\nNEXT";
        let body_len = body.len() - 4;
        for split in 0..=body_len {
            let mut r = BodyReader::new(BodyFraming::Chunked);
            let a = r.feed(&body[..split]).unwrap();
            assert_eq!(a, split, "first part fully consumed at split {split}");
            let b = r.feed(&body[split..]).unwrap();
            assert!(r.is_done(), "split {split}");
            assert_eq!(a + b, body_len);
        }
    }

    #[test]
    fn chunked_rejects_garbage() {
        let mut r = BodyReader::new(BodyFraming::Chunked);
        assert!(r.feed(b"zz\r\n").is_err());
    }

    #[test]
    fn request_heads() {
        let r = parse_request_head(
            b"POST /x?delay=1ms HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (r.method.as_str(), r.target.as_str()),
            ("POST", "/x?delay=1ms")
        );
        assert_eq!(r.framing, BodyFraming::Length(3));
        assert!(r.keep_alive);
        let r = parse_request_head(b"GET / HTTP/1.0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!r.keep_alive);
        let r = parse_request_head(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(r.keep_alive);
    }
}
