//! A test PKI for the TLS and HTTP/2 tests: a CA, server and client certificates.

use std::path::PathBuf;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

use super::Echo;

/// A test CA with a server certificate (localhost, 127.0.0.1) and a client certificate, as
/// PEM files in a temporary folder removed on drop. All keys are ECDSA P-256.
pub struct Pki {
    dir: PathBuf,
}

impl Pki {
    /// Mint the CA and certificates in a folder of their own (`tag` and the process id).
    pub fn new(tag: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("netperf-pki-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let write = |name: &str, text: String| std::fs::write(dir.join(name), text).unwrap();
        write("ca.pem", ca_cert.pem());
        for (name, sans) in [
            (
                "server",
                vec!["localhost".to_string(), "127.0.0.1".to_string()],
            ),
            ("client", vec!["client.test".to_string()]),
        ] {
            let key = KeyPair::generate().unwrap();
            let cert = CertificateParams::new(sans)
                .unwrap()
                .signed_by(&key, &issuer)
                .unwrap();
            write(&format!("{name}.pem"), cert.pem());
            write(&format!("{name}.key"), key.serialize_pem());
        }
        // a CA nobody trusts, for the unknown-CA case
        let other_key = KeyPair::generate().unwrap();
        let mut other = CertificateParams::new(Vec::<String>::new()).unwrap();
        other
            .distinguished_name
            .push(rcgen::DnType::CommonName, "untrusted CA");
        other.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        write("other-ca.pem", other.self_signed(&other_key).unwrap().pem());
        Pki { dir }
    }

    /// Path of file `name` (ca.pem, server.pem, server.key, client.pem, client.key, other-ca.pem).
    pub fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }

    /// A TLS echo server (extra args appended).
    pub fn echo(&self, extra: &[&str]) -> Echo {
        let (cert, key) = (self.path("server.pem"), self.path("server.key"));
        let mut args = vec!["--tls-cert", &cert, "--tls-key", &key];
        args.extend_from_slice(extra);
        Echo::start(&args)
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The `https://` URL of `path` on `echo`.
pub fn https(echo: &Echo, path: &str) -> String {
    format!("https://127.0.0.1:{}{path}", echo.port)
}
