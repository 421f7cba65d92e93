//! Exit codes and the one-line failure carried to `main`.

/// Process exit codes (see docs/driver-output.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Anything unexpected.
    Other = 1,
    /// Bad flags or URL.
    Usage = 2,
    /// Target unreachable before the run started.
    Unreachable = 3,
    /// Interrupted by a signal.
    Interrupted = 4,
    /// The target stopped accepting connections during the run.
    Vanished = 5,
    /// `https://`: the TLS handshake before the run failed (certificate, handshake, not TLS).
    Tls = 6,
    /// HTTP/2 or gRPC: the target does not speak what was asked for (ALPN h2 refused, h2c
    /// refused, or the gRPC probe call failed, e.g. an unknown method).
    Protocol = 7,
}

/// A failure with its exit code and a one-line message.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Exit code.
    pub code: ExitCode,
    /// Message printed after `netperf-driver: `.
    pub message: String,
}

impl Failure {
    /// Bad flags or URL (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            code: ExitCode::Usage,
            message: one_line(message.into()),
        }
    }

    /// Target unreachable before the run (exit 3).
    pub fn unreachable(message: impl Into<String>) -> Self {
        Self {
            code: ExitCode::Unreachable,
            message: one_line(message.into()),
        }
    }

    /// Interrupted (exit 4).
    pub fn interrupted() -> Self {
        Self {
            code: ExitCode::Interrupted,
            message: "interrupted".into(),
        }
    }

    /// The target vanished mid-round (exit 5).
    pub fn vanished(message: impl Into<String>) -> Self {
        Self {
            code: ExitCode::Vanished,
            message: one_line(message.into()),
        }
    }

    /// The TLS handshake before the run failed (exit 6).
    pub fn tls(message: impl Into<String>) -> Self {
        Self {
            code: ExitCode::Tls,
            message: one_line(message.into()),
        }
    }

    /// The target does not speak the protocol asked for (exit 7).
    pub fn protocol(message: impl Into<String>) -> Self {
        Self {
            code: ExitCode::Protocol,
            message: one_line(message.into()),
        }
    }

    /// Anything else (exit 1).
    pub fn other(message: impl Into<String>) -> Self {
        Self {
            code: ExitCode::Other,
            message: one_line(message.into()),
        }
    }
}

fn one_line(s: String) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}
