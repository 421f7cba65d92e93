//! HTTP/2 and gRPC: the load driver's `--http2` / `--grpc` (h2 over TLS via ALPN, cleartext
//! h2c with prior knowledge, N streams per connection, gRPC unary calls) and the echo
//! server's HTTP/2 side (ALPN h2, the h2c preface, and the gRPC method `/netperf.Echo/Echo`).
//!
//! The protocol is the `h2` crate's, driven by a tokio current-thread runtime on each
//! thread; the HTTP/1.1 paths stay on their own mio loops. What the load measures is the
//! same as over HTTP/1.1: the plan, timetables, statistics, histograms and saturation rules
//! of [`crate::load`] are shared, not copied.

pub mod client;
pub mod errors;
pub mod grpc;
pub mod io;
pub mod plan;
pub mod precise;
pub mod server;
pub mod worker;

/// The HTTP/2 connection preface a client sends first (RFC 9113, 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Flow-control windows of both sides (stream and connection), as large as HTTP/2 allows
/// minus one, as h2load sets them: flow control never holds a response back, and the
/// receiver sends WINDOW_UPDATE frames rarely.
pub const WINDOW: u32 = (1 << 30) - 1;
