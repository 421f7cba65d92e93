//! Certificates, keys and CA bundles from PEM files, with errors that name the file.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::RootCertStore;

/// Every certificate of the PEM file `path` (at least one).
pub fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read certificates from {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("no PEM certificate in {}", path.display()));
    }
    Ok(certs)
}

/// The private key (PKCS#8, PKCS#1 or SEC1) of the PEM file `path`.
pub fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| format!("cannot read a private key from {}: {e}", path.display()))
}

/// A trust store holding every CA certificate of the PEM bundle `path`.
pub fn roots(path: &Path) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    for cert in certificates(path)? {
        store
            .add(cert)
            .map_err(|e| format!("bad CA certificate in {}: {e}", path.display()))?;
    }
    Ok(store)
}

/// The system's trust store: `SSL_CERT_FILE`, else the first bundle found at the usual
/// Debian, Fedora, Alpine and SUSE paths.
pub fn system_roots() -> Result<RootCertStore, String> {
    const BUNDLES: [&str; 4] = [
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/cert.pem",
        "/etc/ssl/ca-bundle.pem",
    ];
    if let Some(file) = std::env::var_os("SSL_CERT_FILE") {
        return roots(Path::new(&file));
    }
    let bundle = BUNDLES
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .ok_or_else(|| "no system CA bundle found: give --ca FILE (or --insecure)".to_string())?;
    let mut store = RootCertStore::empty();
    // a system bundle may hold a few certificates webpki cannot parse: skip those
    store.add_parsable_certificates(certificates(bundle)?);
    Ok(store)
}
