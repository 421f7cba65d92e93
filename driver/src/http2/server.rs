//! The echo server's HTTP/2: the mio loop of each echo thread hands over the connections
//! that speak HTTP/2 (ALPN h2 after the TLS handshake, or the h2c connection preface) to a
//! companion thread running a tokio current-thread runtime and the `h2` server. The query
//! controls are those of HTTP/1.1 (`delay`, `burn`, `size`, `status`, `close`), plus
//! `reset=1` (the stream is answered with RST_STREAM INTERNAL_ERROR) and `goaway=1` (the
//! connection is closed with GOAWAY, the request unanswered); `depth` calls go over
//! HTTP/1.1 only. gRPC: `/netperf.Echo/Echo` answers with the request's message (or a
//! message of `size` bytes), any other method with grpc-status 12 (UNIMPLEMENTED).

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream};
use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, Request, Response, StatusCode};
use rustls::ServerConnection;

use super::grpc;
use super::io::{tokio_stream, Io, PlainIo, TlsIo};
use super::precise;
use crate::clock::mono_ns;
use crate::echo::EchoParams;

/// Streams a client may open at once on one connection.
pub const MAX_STREAMS: u32 = 1024;
/// Filler bytes for sized bodies.
static FILLER: [u8; 16384] = [b'x'; 16384];
/// Body of a plain echo response.
const DEFAULT_BODY: &[u8] = b"ok\n";

/// A connection the mio loop hands over: the socket, its TLS session (handshake done,
/// ALPN h2), and the bytes already read (plaintext) that belong to HTTP/2.
pub struct Handover {
    /// The socket (non-blocking).
    pub stream: std::net::TcpStream,
    /// The TLS session, for h2 over TLS.
    pub tls: Option<Box<ServerConnection>>,
    /// Bytes already read: the preface and what followed.
    pub pre: Vec<u8>,
}

/// What the HTTP/2 side needs of the echo server's settings.
#[derive(Debug, Clone)]
pub struct H2Settings {
    /// `x-netperf-echo` value.
    pub id: Option<HeaderValue>,
}

/// Start a companion thread for HTTP/2 connections; its runtime's handle.
pub fn companion(name: String) -> io::Result<tokio::runtime::Handle> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new().name(name).spawn(move || {
        crate::clock::minimize_timer_slack();
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let _ = tx.send(Ok(rt.handle().clone()));
        if let Err(e) = rt.block_on(precise::drive_timers()) {
            eprintln!("netperf-driver echo: HTTP/2 timers failed: {e}");
        }
    })?;
    rx.recv()
        .map_err(|_| io::Error::other("the HTTP/2 thread did not start"))?
}

/// Serve an HTTP/2 connection handed over by the mio loop (run on the companion runtime).
pub async fn serve(h: Handover, settings: Arc<H2Settings>) {
    let Ok(tcp) = tokio_stream(h.stream) else {
        return;
    };
    let io: Io<ServerConnection> = match h.tls {
        Some(session) => Io::Right(Box::new(TlsIo::new(tcp, *session, h.pre, None))),
        None => Io::Left(PlainIo::new(tcp, h.pre, None)),
    };
    let handshake = h2::server::Builder::new()
        .initial_window_size(super::WINDOW)
        .initial_connection_window_size(super::WINDOW)
        .max_concurrent_streams(MAX_STREAMS)
        .handshake::<_, Bytes>(io);
    let Ok(mut conn) = handshake.await else {
        return;
    };
    while let Some(next) = conn.accept().await {
        let Ok((req, respond)) = next else {
            break;
        };
        match first_look(&req) {
            Look::GoAway => {
                conn.abrupt_shutdown(Reason::NO_ERROR);
                drop(respond);
            }
            Look::Reset => {
                let mut respond = respond;
                respond.send_reset(Reason::INTERNAL_ERROR);
            }
            Look::Answer(answer, close) => {
                answer.send(respond, &settings);
                if close {
                    conn.graceful_shutdown();
                }
            }
            Look::Later => {
                let settings = Arc::clone(&settings);
                tokio::spawn(answer_later(req, respond, settings));
            }
        }
    }
}

/// What to do with a request right away.
enum Look {
    /// Close the connection with GOAWAY (`goaway=1`).
    GoAway,
    /// Reset the stream (`reset=1`).
    Reset,
    /// Answer now (then shut down gracefully when `close`).
    Answer(Answer, bool),
    /// A body to read or a delay to wait: in a task of its own.
    Later,
}

fn is_grpc(req: &Request<RecvStream>) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(grpc::CONTENT_TYPE.as_bytes()))
}

fn target(req: &Request<RecvStream>) -> &str {
    req.uri().path_and_query().map_or("/", |p| p.as_str())
}

fn first_look(req: &Request<RecvStream>) -> Look {
    let path = req.uri().path();
    if is_grpc(req) {
        if path != grpc::ECHO_METHOD {
            return Look::Answer(Answer::unknown_method(path), false);
        }
        return Look::Later; // the message is in the body
    }
    if path == "/healthz" {
        return Look::Answer(Answer::text(200, "ok\n".into()), false);
    }
    let params = match EchoParams::from_target(target(req)) {
        Ok(p) => p,
        Err(msg) => return Look::Answer(Answer::text(400, format!("{msg}\n")), false),
    };
    if params.goaway {
        return Look::GoAway;
    }
    if params.reset {
        return Look::Reset;
    }
    if params.depth > 0 {
        let msg = "depth= calls the next service over HTTP/1.1 only\n".to_string();
        return Look::Answer(Answer::text(400, msg), false);
    }
    if params.delay_ns > 0 || !req.body().is_end_stream() {
        return Look::Later;
    }
    crate::echo::burn(params.burn_ns);
    let head = req.method() == http::Method::HEAD;
    Look::Answer(Answer::echo(&params, head), params.close)
}

/// Read the body, wait, then answer (gRPC calls, delays, uploads).
async fn answer_later(
    req: Request<RecvStream>,
    respond: SendResponse<Bytes>,
    settings: Arc<H2Settings>,
) {
    let grpc = is_grpc(&req);
    let params = EchoParams::from_target(target(&req));
    let head = req.method() == http::Method::HEAD;
    let mut body = req.into_body();
    let mut received = Vec::new();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else {
            return;
        };
        let _ = body.flow_control().release_capacity(chunk.len());
        if grpc && received.len() + chunk.len() <= 5 + grpc::MAX_MESSAGE {
            received.extend_from_slice(&chunk);
        }
    }
    let params = match params {
        Ok(p) => p,
        Err(msg) => {
            let answer = if grpc {
                Answer::grpc_error(3, &msg)
            } else {
                Answer::text(400, format!("{msg}\n"))
            };
            return answer.send(respond, &settings);
        }
    };
    crate::echo::burn(params.burn_ns);
    if params.delay_ns > 0 {
        precise::sleep_until(mono_ns() + params.delay_ns).await;
    }
    let answer = if grpc {
        match grpc::single_message(&received) {
            Some(message) => {
                let reply = match params.size {
                    Some(n) => grpc::frame(
                        &FILLER.repeat((n as usize).div_ceil(FILLER.len()))[..n as usize],
                    ),
                    None => grpc::frame(message),
                };
                Answer::grpc_ok(reply)
            }
            None => Answer::grpc_error(13, "the request body is not one gRPC message"),
        }
    } else {
        Answer::echo(&params, head)
    };
    answer.send(respond, &settings);
}

/// A response to send.
struct Answer {
    status: u16,
    content_type: &'static str,
    body: Body,
    /// gRPC: trailers after the body (or, with no body, a trailers-only response).
    grpc: Option<(u32, String)>,
}

enum Body {
    None,
    Static(&'static [u8]),
    Owned(Bytes),
    Filler(u64),
}

impl Body {
    fn len(&self) -> u64 {
        match self {
            Body::None => 0,
            Body::Static(b) => b.len() as u64,
            Body::Owned(b) => b.len() as u64,
            Body::Filler(n) => *n,
        }
    }
}

impl Answer {
    fn text(status: u16, text: String) -> Self {
        Self {
            status,
            content_type: "text/plain",
            body: Body::Owned(Bytes::from(text)),
            grpc: None,
        }
    }

    fn echo(params: &EchoParams, head: bool) -> Self {
        let status = params.status;
        let body = if head || status == 204 || status == 304 {
            Body::None
        } else {
            match params.size {
                Some(0) => Body::None,
                Some(n) => Body::Filler(n),
                None => Body::Static(DEFAULT_BODY),
            }
        };
        Self {
            status,
            content_type: "text/plain",
            body,
            grpc: None,
        }
    }

    fn grpc_ok(reply: Bytes) -> Self {
        Self {
            status: 200,
            content_type: grpc::CONTENT_TYPE,
            body: Body::Owned(reply),
            grpc: Some((0, String::new())),
        }
    }

    fn grpc_error(code: u32, message: &str) -> Self {
        Self {
            status: 200,
            content_type: grpc::CONTENT_TYPE,
            body: Body::None,
            grpc: Some((code, message.to_string())),
        }
    }

    fn unknown_method(path: &str) -> Self {
        Self::grpc_error(
            12,
            &format!(
                "unknown method {path} (this echo server serves {})",
                grpc::ECHO_METHOD
            ),
        )
    }

    fn send(self, mut respond: SendResponse<Bytes>, settings: &H2Settings) {
        let mut resp = Response::new(());
        *resp.status_mut() = StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK);
        let headers = resp.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(self.content_type));
        if let Some(id) = &settings.id {
            headers.insert(HeaderName::from_static("x-netperf-echo"), id.clone());
        }
        headers.insert(
            HeaderName::from_static("x-netperf-hops"),
            HeaderValue::from_static("1"),
        );
        let trailers_only = self.grpc.is_some() && matches!(self.body, Body::None);
        if trailers_only {
            if let Some((code, message)) = &self.grpc {
                grpc_fields(headers, *code, message);
            }
            let _ = respond.send_response(resp, true);
            return;
        }
        if self.grpc.is_none() {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(self.body.len()));
        }
        let end_now = matches!(self.body, Body::None) && self.grpc.is_none();
        let Ok(mut stream) = respond.send_response(resp, end_now) else {
            return;
        };
        if end_now {
            return;
        }
        let last = self.grpc.is_none();
        let _ = match self.body {
            Body::None => Ok(()),
            Body::Static(b) => stream.send_data(Bytes::from_static(b), last),
            Body::Owned(b) => stream.send_data(b, last),
            Body::Filler(mut n) => {
                let mut r = Ok(());
                while n > 0 && r.is_ok() {
                    let k = n.min(FILLER.len() as u64);
                    n -= k;
                    r = stream.send_data(Bytes::from_static(&FILLER[..k as usize]), last && n == 0);
                }
                r
            }
        };
        if let Some((code, message)) = &self.grpc {
            let mut trailers = HeaderMap::new();
            grpc_fields(&mut trailers, *code, message);
            let _ = stream.send_trailers(trailers);
        }
    }
}

fn grpc_fields(map: &mut HeaderMap, code: u32, message: &str) {
    map.insert(
        HeaderName::from_static("grpc-status"),
        HeaderValue::from(code),
    );
    if !message.is_empty() {
        if let Ok(v) = HeaderValue::from_str(message) {
            map.insert(HeaderName::from_static("grpc-message"), v);
        }
    }
}
