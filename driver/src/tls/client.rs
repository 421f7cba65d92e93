//! The client side: a rustls `ClientConfig` from the `http` options, and the server name
//! (SNI) to present.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

use super::options::{Switch, TlsClientOpts, TlsVersion};
use super::{pem, provider};

/// Sessions kept for resumption (per process; TLS 1.3 tickets are used once each).
const SESSION_CACHE: usize = 4096;

/// What every TLS connection of a run shares.
#[derive(Debug, Clone)]
pub struct TlsTarget {
    /// The client configuration (its session store is shared by all connections).
    pub config: Arc<ClientConfig>,
    /// Name sent as SNI and checked against the certificate.
    pub server_name: ServerName<'static>,
    /// Settings as reported in the JSON document.
    pub settings: TlsSettings,
}

/// The TLS settings of a run, as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// The server name (SNI, and the name the certificate must carry).
    pub server_name: String,
    /// `ca` (--ca), `system` or `insecure`.
    pub verify: &'static str,
    /// A client certificate is presented (mutual TLS).
    pub client_certificate: bool,
    /// Session resumption on reconnect.
    pub resumption: bool,
    /// Versions offered, e.g. `["TLSv1.2", "TLSv1.3"]`.
    pub versions: Vec<&'static str>,
}

impl TlsTarget {
    /// Build from the options; `host` is the name for SNI (the Host header's, or the URL's).
    pub fn from_opts(opts: &TlsClientOpts, host: &str) -> Result<Self, String> {
        let provider = provider();
        let versions: Vec<&'static rustls::SupportedProtocolVersion> = match opts.tls_version {
            Some(TlsVersion::V12) => vec![&rustls::version::TLS12],
            Some(TlsVersion::V13) => vec![&rustls::version::TLS13],
            None => vec![&rustls::version::TLS13, &rustls::version::TLS12],
        };
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&versions)
            .map_err(|e| format!("TLS setup: {e}"))?;
        let (builder, verify) = if opts.insecure {
            let verifier = Arc::new(InsecureVerifier(Arc::clone(&provider)));
            (
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(verifier),
                "insecure",
            )
        } else {
            let (roots, verify) = match &opts.ca {
                Some(path) => (pem::roots(path)?, "ca"),
                None => (pem::system_roots()?, "system"),
            };
            (builder.with_root_certificates(roots), verify)
        };
        let mut config = match (&opts.cert, &opts.key) {
            (Some(cert), Some(key)) => builder
                .with_client_auth_cert(pem::certificates(cert)?, pem::private_key(key)?)
                .map_err(|e| format!("bad --cert/--key: {e}"))?,
            _ => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let resumption = opts.tls_resumption != Some(Switch::Off);
        config.resumption = if resumption {
            Resumption::in_memory_sessions(SESSION_CACHE)
        } else {
            Resumption::disabled()
        };
        let server_name = ServerName::try_from(host.to_string())
            .map_err(|_| format!("{host:?} is not a valid TLS server name"))?;
        Ok(Self {
            config: Arc::new(config),
            server_name,
            settings: TlsSettings {
                server_name: host.to_string(),
                verify,
                client_certificate: opts.cert.is_some(),
                resumption,
                versions: versions
                    .iter()
                    .rev()
                    .map(|v| super::version_name(v.version))
                    .collect(),
            },
        })
    }

    /// The same target offering ALPN `h2` first (then `http/1.1`, so that a server without
    /// HTTP/2 says so by choosing it), for `--http2`.
    pub fn for_http2(&self) -> Self {
        let mut config = (*self.config).clone();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Self {
            config: Arc::new(config),
            server_name: self.server_name.clone(),
            settings: self.settings.clone(),
        }
    }

    /// A new client session (its ClientHello queued).
    pub fn session(&self) -> Result<rustls::ClientConnection, rustls::Error> {
        rustls::ClientConnection::new(Arc::clone(&self.config), self.server_name.clone())
    }
}

/// `--insecure`: accepts any certificate chain and name, but still checks that the server
/// holds the key of the certificate it sent (the handshake signature), as curl -k does.
#[derive(Debug)]
struct InsecureVerifier(Arc<CryptoProvider>);

impl ServerCertVerifier for InsecureVerifier {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The server name for SNI: the `Host` header override's host part, else the URL's host.
pub fn sni_host(url_host: &str, host_header: Option<&str>) -> String {
    let Some(value) = host_header.map(str::trim).filter(|v| !v.is_empty()) else {
        return url_host.to_string();
    };
    if let Some(v6) = value.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6).to_string();
    }
    match value.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host.to_string(),
        _ => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sni_prefers_the_host_header() {
        assert_eq!(sni_host("127.0.0.1", None), "127.0.0.1");
        assert_eq!(
            sni_host("127.0.0.1", Some("shop.example:8443")),
            "shop.example"
        );
        assert_eq!(sni_host("h", Some(" shop.example ")), "shop.example");
        assert_eq!(sni_host("h", Some("[::1]:443")), "::1");
    }

    #[test]
    fn insecure_config_offers_both_versions_and_http11() {
        let opts = TlsClientOpts {
            insecure: true,
            ..Default::default()
        };
        let t = TlsTarget::from_opts(&opts, "localhost").unwrap();
        assert_eq!(t.settings.versions, vec!["TLSv1.2", "TLSv1.3"]);
        assert_eq!(t.settings.verify, "insecure");
        assert!(t.settings.resumption);
        assert_eq!(t.config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        let opts = TlsClientOpts {
            insecure: true,
            tls_version: Some(TlsVersion::V12),
            tls_resumption: Some(Switch::Off),
            ..Default::default()
        };
        let t = TlsTarget::from_opts(&opts, "127.0.0.1").unwrap();
        assert_eq!(t.settings.versions, vec!["TLSv1.2"]);
        assert!(!t.settings.resumption);
    }
}
