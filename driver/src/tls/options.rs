//! Command-line options of TLS, flattened into `http` and `echo` (see [`crate::cli`]).

use clap::{Args, ValueEnum};

/// Which TLS protocol versions the driver offers.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2 only.
    #[value(name = "1.2")]
    V12,
    /// TLS 1.3 only.
    #[value(name = "1.3")]
    V13,
}

/// On or off.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

/// TLS options of `netperf-driver http` (used with `https://` URLs only).
#[derive(Args, Debug, Clone, Default)]
pub struct TlsClientOpts {
    /// https://: trust the CAs of this PEM bundle (default: the system's trust store).
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub ca: Option<std::path::PathBuf>,
    /// https://: accept any server certificate (the handshake signature is still checked).
    #[arg(long)]
    pub insecure: bool,
    /// https://: client certificate chain (PEM) for mutual TLS; needs --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<std::path::PathBuf>,
    /// https://: private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<std::path::PathBuf>,
    /// https://: resume TLS sessions (tickets or session IDs) on reconnect.
    #[arg(long, value_enum, value_name = "on|off")]
    pub tls_resumption: Option<Switch>,
    /// https://: allow only this TLS version (default: 1.2 and 1.3).
    #[arg(long, value_enum, value_name = "1.2|1.3")]
    pub tls_version: Option<TlsVersion>,
}

impl TlsClientOpts {
    /// The first TLS option given, to refuse it on a cleartext URL.
    pub fn first_given(&self) -> Option<&'static str> {
        [
            (self.ca.is_some(), "--ca"),
            (self.insecure, "--insecure"),
            (self.cert.is_some(), "--cert"),
            (self.tls_resumption.is_some(), "--tls-resumption"),
            (self.tls_version.is_some(), "--tls-version"),
        ]
        .into_iter()
        .find(|(given, _)| *given)
        .map(|(_, name)| name)
    }
}

/// TLS options of `netperf-driver echo`.
#[derive(Args, Debug, Clone, Default)]
pub struct TlsServerOpts {
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// Private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Mutual TLS: require client certificates signed by a CA of this PEM bundle.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<std::path::PathBuf>,
    /// Issue no session tickets (resumption then uses the server's session cache only).
    #[arg(long, requires = "tls_cert")]
    pub tls_no_tickets: bool,
}
