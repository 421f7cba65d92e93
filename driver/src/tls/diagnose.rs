//! Name the cause of a TLS failure: a rejected certificate, a failed handshake, a server that
//! does not speak TLS (`https://` to a cleartext port), or TLS answering plain HTTP.

use std::io::{self, Read};

use rustls::{AlertDescription, CertificateError, Error};

use crate::load::stats::ErrorKind;

/// A classified TLS failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFailure {
    /// How it is counted in the report.
    pub kind: ErrorKind,
    /// One line naming the cause.
    pub message: String,
}

/// Message for `https://` against a server that answered in cleartext.
pub const NOT_TLS: &str = "the server did not answer TLS: is the port plain HTTP?";
/// Message for `http://` against a server that answered with TLS records.
pub const PLAIN_TO_TLS: &str =
    "the server answered plain HTTP with TLS: is the port HTTPS? (use an https:// URL)";

/// How an ALPN refusal starts.
pub const ALPN_REFUSED: &str = "ALPN refused";

/// True when `data` starts like a TLS record (handshake, alert, change cipher spec or
/// application data, version 3.x): what a TLS server answers to a cleartext request.
pub fn looks_like_tls(data: &[u8]) -> bool {
    matches!(data, [0x14..=0x17, 0x03, ..])
}

/// Classify `error` from `process_new_packets`. `first_byte`: the first byte the server
/// sent on this connection; `client_cert`: we presented a client certificate.
pub fn classify(error: &Error, first_byte: Option<u8>, client_cert: bool) -> TlsFailure {
    let cleartext = first_byte.is_some_and(|b| !(0x14..=0x17).contains(&b));
    if cleartext {
        return failure(ErrorKind::NotTls, NOT_TLS.to_string());
    }
    match error {
        Error::InvalidCertificate(e) => failure(
            ErrorKind::TlsCertificate,
            format!("server certificate rejected: {}", certificate_cause(e)),
        ),
        Error::AlertReceived(alert) if is_client_certificate_alert(*alert) => {
            let cause = if client_cert {
                "the server rejected our client certificate"
            } else {
                "the server requires a client certificate (mutual TLS: give --cert and --key)"
            };
            failure(
                ErrorKind::TlsCertificate,
                format!("{cause} (alert {alert:?})"),
            )
        }
        Error::AlertReceived(AlertDescription::NoApplicationProtocol) => failure(
            ErrorKind::AlpnRefused,
            format!("{ALPN_REFUSED}: the server supports none of the ALPN protocols offered"),
        ),
        Error::AlertReceived(AlertDescription::ProtocolVersion) => failure(
            ErrorKind::TlsHandshake,
            "handshake failure: no TLS version in common (see --tls-version)".to_string(),
        ),
        Error::AlertReceived(alert) => failure(
            ErrorKind::TlsHandshake,
            format!("handshake failure: the server sent alert {alert:?}"),
        ),
        Error::InvalidMessage(_) if first_byte.is_none() => {
            failure(ErrorKind::NotTls, NOT_TLS.to_string())
        }
        other => failure(
            ErrorKind::TlsHandshake,
            format!("handshake failure: {other}"),
        ),
    }
}

/// The server closed the connection before the handshake completed.
pub fn closed_during_handshake(first_byte: Option<u8>) -> TlsFailure {
    match first_byte {
        Some(b) if !(0x14..=0x17).contains(&b) => failure(ErrorKind::NotTls, NOT_TLS.to_string()),
        Some(_) => failure(
            ErrorKind::TlsHandshake,
            "handshake failure: the server closed the connection during the handshake".into(),
        ),
        None => failure(
            ErrorKind::TlsHandshake,
            "handshake failure: the server closed the connection without answering the \
             ClientHello (is the port plain HTTP?)"
                .into(),
        ),
    }
}

fn failure(kind: ErrorKind, message: String) -> TlsFailure {
    TlsFailure { kind, message }
}

fn is_client_certificate_alert(alert: AlertDescription) -> bool {
    matches!(
        alert,
        AlertDescription::CertificateRequired
            | AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateRevoked
    )
}

fn certificate_cause(e: &CertificateError) -> String {
    match e {
        CertificateError::UnknownIssuer => {
            "not signed by a CA we trust (unknown CA: give --ca FILE, or --insecure)".into()
        }
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            "not valid for the server name (bad name: the URL's host, or a Host header, must \
             match the certificate)"
                .into()
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => "expired".into(),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "not valid yet".into()
        }
        other => format!("{other:?}"),
    }
}

/// A reader that records the first byte the peer sent (through rustls's `read_tls`), so a
/// failed handshake can tell a cleartext answer from TLS records.
pub struct Sniff<'a, R> {
    pub inner: &'a mut R,
    pub first: &'a mut Option<u8>,
}

impl<R: Read> Read for Sniff<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 && self.first.is_none() {
            *self.first = Some(buf[0]);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_records_are_recognised() {
        assert!(looks_like_tls(&[0x15, 0x03, 0x03, 0x00, 0x02]));
        assert!(looks_like_tls(&[0x16, 0x03, 0x01]));
        assert!(!looks_like_tls(b"HTTP/1.1 200 OK"));
        assert!(!looks_like_tls(&[0x15]));
    }

    #[test]
    fn causes_are_named() {
        let e = Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let f = classify(&e, Some(0x16), false);
        assert_eq!(f.kind, ErrorKind::TlsCertificate);
        assert!(f.message.contains("unknown CA"), "{}", f.message);
        let e = Error::AlertReceived(AlertDescription::CertificateRequired);
        let f = classify(&e, Some(0x15), false);
        assert_eq!(f.kind, ErrorKind::TlsCertificate);
        assert!(f.message.contains("--cert"), "{}", f.message);
        let e = Error::AlertReceived(AlertDescription::HandshakeFailure);
        assert_eq!(classify(&e, Some(0x15), true).kind, ErrorKind::TlsHandshake);
        let e = Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType);
        let f = classify(&e, Some(b'H'), false);
        assert_eq!((f.kind, f.message.as_str()), (ErrorKind::NotTls, NOT_TLS));
        assert_eq!(closed_during_handshake(Some(b'H')).kind, ErrorKind::NotTls);
        assert_eq!(closed_during_handshake(None).kind, ErrorKind::TlsHandshake);
    }
}
