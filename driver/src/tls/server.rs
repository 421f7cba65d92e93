//! The echo server side: a rustls `ServerConfig` from `echo --tls-*` options.

use std::sync::Arc;

use rustls::server::{ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::ServerConfig;

use super::options::TlsServerOpts;
use super::{pem, provider};

/// Sessions the server keeps for resumption by session ID (and stateful TLS 1.3 tickets).
const SESSION_CACHE: usize = 64 * 1024;

/// The server configuration, or None when `--tls-cert` is not given. TLS 1.2 and 1.3,
/// ALPN `h2` (when `http2`) and `http/1.1`, a session cache, and stateless session tickets
/// unless switched off.
pub fn server_config(
    opts: &TlsServerOpts,
    http2: bool,
) -> Result<Option<Arc<ServerConfig>>, String> {
    let (Some(cert), Some(key)) = (&opts.tls_cert, &opts.tls_key) else {
        return Ok(None);
    };
    let provider = provider();
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| format!("TLS setup: {e}"))?;
    let builder = match &opts.tls_client_ca {
        Some(ca) => {
            let roots = Arc::new(pem::roots(ca)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| format!("bad --tls-client-ca: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(pem::certificates(cert)?, pem::private_key(key)?)
        .map_err(|e| format!("bad --tls-cert/--tls-key: {e}"))?;
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    if !opts.tls_no_tickets {
        config.ticketer =
            rustls::crypto::ring::Ticketer::new().map_err(|e| format!("TLS tickets: {e}"))?;
    }
    Ok(Some(Arc::new(config)))
}
