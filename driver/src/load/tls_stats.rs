//! Per-thread TLS measurements: handshakes done and resumed, handshake time, and what was
//! negotiated; merged like the other statistics.

use super::tls_conn::Handshake;
use crate::hist::{self, LatencyHistogram};

/// TLS counters of one worker (or, merged, of the run).
#[derive(Debug, Clone)]
pub struct TlsStats {
    /// Handshakes completed (full and resumed) over the whole run.
    pub handshakes: u64,
    /// Of those, abbreviated (session resumed).
    pub resumed: u64,
    /// Time from the TCP connection being up to the handshake's end, for connections
    /// opened for a request of the window.
    pub handshake_time: LatencyHistogram,
    /// First negotiated protocol version seen.
    pub version: Option<&'static str>,
    /// First negotiated cipher suite seen.
    pub cipher_suite: Option<&'static str>,
    /// ALPN protocol agreed on the first handshake seen (inner None: no ALPN).
    pub alpn: Option<Option<&'static str>>,
}

impl Default for TlsStats {
    fn default() -> Self {
        Self {
            handshakes: 0,
            resumed: 0,
            handshake_time: hist::new_latency(),
            version: None,
            cipher_suite: None,
            alpn: None,
        }
    }
}

impl TlsStats {
    /// Count a completed handshake; `timed_at`: its end, when its time is to be recorded.
    pub fn handshake(&mut self, h: &Handshake, timed_at: Option<u64>) {
        self.handshakes += 1;
        self.resumed += u64::from(h.resumed);
        self.version.get_or_insert(h.version);
        self.cipher_suite.get_or_insert(h.cipher_suite);
        self.alpn.get_or_insert(h.alpn);
        if let Some(done) = timed_at {
            hist::record(&mut self.handshake_time, done.saturating_sub(h.started_ns));
        }
    }

    /// Add `other` into `self`.
    pub fn merge(&mut self, other: &TlsStats) {
        self.handshakes += other.handshakes;
        self.resumed += other.resumed;
        hist::merge(&mut self.handshake_time, &other.handshake_time);
        self.version = self.version.or(other.version);
        self.cipher_suite = self.cipher_suite.or(other.cipher_suite);
        self.alpn = self.alpn.or(other.alpn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_merges() {
        let full = Handshake {
            started_ns: 1_000,
            resumed: false,
            version: "TLSv1.3",
            cipher_suite: "TLS13_AES_256_GCM_SHA384",
            alpn: Some("http/1.1"),
        };
        let mut a = TlsStats::default();
        a.handshake(&full, Some(101_000));
        let mut b = TlsStats::default();
        b.handshake(
            &Handshake {
                resumed: true,
                ..full
            },
            None,
        );
        a.merge(&b);
        assert_eq!((a.handshakes, a.resumed), (2, 1));
        assert_eq!(a.handshake_time.len(), 1);
        assert_eq!(a.version, Some("TLSv1.3"));
    }
}
