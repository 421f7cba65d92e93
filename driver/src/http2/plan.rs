//! The HTTP/2 part of a load plan: streams per connection and the request every stream
//! sends (an `http::Request` template), or the gRPC call.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Uri};

use super::grpc;
use crate::cli::HttpOpts;
use crate::exit::Failure;
use crate::url::HttpUrl;

/// Headers HTTP/2 forbids (connection-specific, RFC 9113 8.2.2).
const CONNECTION_HEADERS: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// A gRPC unary call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcPlan {
    /// `/package.Service/Method`.
    pub method: String,
    /// Size of the request message (before framing).
    pub message_bytes: usize,
}

/// What HTTP/2 adds to a [`crate::load::plan::Plan`].
#[derive(Debug, Clone)]
pub struct Http2Plan {
    /// Requests in flight per connection, at most (also capped by the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS).
    pub streams: usize,
    /// h2 over TLS (ALPN), or h2c.
    pub tls: bool,
    /// `scheme://authority/path?query` of every request (the authority from a Host header).
    pub uri: Uri,
    /// Request method.
    pub method: Method,
    /// Request headers (Host became the authority).
    pub headers: HeaderMap,
    /// Request body, if any (the --body-size filler, or the framed gRPC message).
    pub body: Option<Bytes>,
    /// gRPC unary calls, when `--grpc`.
    pub grpc: Option<GrpcPlan>,
}

impl Http2Plan {
    /// The HTTP/2 part of the plan, or None without `--http2`/`--grpc` (refusing their
    /// options then).
    pub fn from_opts(
        opts: &HttpOpts,
        url: &HttpUrl,
        method: &str,
        headers: &[(String, String)],
    ) -> Result<Option<Self>, Failure> {
        let http2 = opts.http2 || opts.grpc;
        if !http2 {
            let given = [
                (
                    opts.streams_per_connection.is_some(),
                    "--streams-per-connection",
                ),
                (opts.grpc_message_file.is_some(), "--grpc-message-file"),
                (opts.grpc_message_hex.is_some(), "--grpc-message-hex"),
            ];
            if let Some((_, flag)) = given.iter().find(|(g, _)| *g) {
                let needs = if flag.starts_with("--grpc") {
                    "--grpc"
                } else {
                    "--http2 (or --grpc)"
                };
                return Err(Failure::usage(format!("{flag} needs {needs}")));
            }
            return Ok(None);
        }
        if url.tcp {
            return Err(Failure::usage(
                "--http2/--grpc are for http:// and https:// URLs, not tcp://",
            ));
        }
        if opts.new_connection_per_request {
            return Err(Failure::usage(
                "--new-connection-per-request is not supported with --http2/--grpc (an HTTP/2 \
                 connection carries many requests; use HTTP/1.1 for a handshake per request)",
            ));
        }
        if !opts.grpc && (opts.grpc_message_file.is_some() || opts.grpc_message_hex.is_some()) {
            return Err(Failure::usage(
                "--grpc-message-file/--grpc-message-hex need --grpc",
            ));
        }
        let mut map = HeaderMap::new();
        let mut authority = url.authority();
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| Failure::usage(format!("bad --header name {k:?}")))?;
            if name == http::header::HOST {
                authority = v.clone();
                continue;
            }
            if CONNECTION_HEADERS.contains(&name.as_str())
                || (name == http::header::TE && !v.eq_ignore_ascii_case("trailers"))
            {
                return Err(Failure::usage(format!(
                    "--header {k}: HTTP/2 forbids connection-specific headers"
                )));
            }
            let value = HeaderValue::from_str(v)
                .map_err(|_| Failure::usage(format!("bad --header value {v:?}")))?;
            map.append(name, value);
        }
        let scheme = if url.tls { "https" } else { "http" };
        let uri: Uri = format!("{scheme}://{authority}{}", url.path_and_query)
            .parse()
            .map_err(|e| Failure::usage(format!("bad URL for HTTP/2 ({authority}): {e}")))?;
        let (method, body, grpc) = if opts.grpc {
            if !matches!(method, "GET" | "POST") {
                return Err(Failure::usage(
                    "--grpc calls are POST requests: drop --method",
                ));
            }
            if opts.body_size > 0 {
                return Err(Failure::usage(
                    "--body-size is not for --grpc: the body is the message (--grpc-message-file \
                     or --grpc-message-hex)",
                ));
            }
            grpc::check_method_path(&url.path_and_query).map_err(Failure::usage)?;
            let message = match (&opts.grpc_message_file, &opts.grpc_message_hex) {
                (Some(path), _) => std::fs::read(path).map_err(|e| {
                    Failure::usage(format!(
                        "cannot read --grpc-message-file {}: {e}",
                        path.display()
                    ))
                })?,
                (None, Some(hex)) => grpc::parse_hex(hex).map_err(Failure::usage)?,
                (None, None) => Vec::new(),
            };
            if message.len() > grpc::MAX_MESSAGE {
                return Err(Failure::usage("the gRPC message is larger than 4 MiB"));
            }
            map.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static(grpc::CONTENT_TYPE),
            );
            map.insert(http::header::TE, HeaderValue::from_static("trailers"));
            let path = url.path_and_query.split('?').next().unwrap_or("/");
            let plan = GrpcPlan {
                method: path.to_string(),
                message_bytes: message.len(),
            };
            (Method::POST, Some(grpc::frame(&message)), Some(plan))
        } else {
            let method = Method::from_bytes(method.as_bytes())
                .map_err(|_| Failure::usage(format!("bad --method {method:?}")))?;
            let body =
                (opts.body_size > 0).then(|| Bytes::from(vec![b'x'; opts.body_size as usize]));
            if let Some(b) = &body {
                if !map.contains_key(http::header::CONTENT_LENGTH) {
                    map.insert(http::header::CONTENT_LENGTH, HeaderValue::from(b.len()));
                }
            }
            (method, body, None)
        };
        Ok(Some(Self {
            streams: opts.streams_per_connection.unwrap_or(1) as usize,
            tls: url.tls,
            uri,
            method,
            headers: map,
            body,
            grpc,
        }))
    }

    /// A new request of the template (the body goes separately).
    pub fn request(&self) -> http::Request<()> {
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }

    /// `h2` or `h2c`.
    pub fn mode(&self) -> &'static str {
        if self.tls {
            "h2"
        } else {
            "h2c"
        }
    }
}
