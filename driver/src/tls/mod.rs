//! TLS for the load driver (`https://` targets) and the echo server (`--tls-cert`), with
//! rustls and its `ring` crypto provider (which cross-builds for the manylinux and musl
//! wheels, unlike aws-lc-rs).

pub mod client;
pub mod diagnose;
pub mod options;
pub mod pem;
pub mod server;

use std::sync::Arc;

use rustls::crypto::CryptoProvider;

/// The crypto provider every TLS configuration of this crate uses (ring).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// `TLSv1.2` / `TLSv1.3` for a negotiated protocol version.
pub fn version_name(version: rustls::ProtocolVersion) -> &'static str {
    match version {
        rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2",
        rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3",
        _ => "other",
    }
}

/// The name of a negotiated ALPN protocol (`http/1.1`, `h2`; `other` for anything else).
pub fn alpn_name(protocol: Option<&[u8]>) -> Option<&'static str> {
    match protocol? {
        b"http/1.1" => Some("http/1.1"),
        b"h2" => Some("h2"),
        _ => Some("other"),
    }
}
