//! Before the clock: the first connection to the target, and what the connections opened
//! before the run cost (sockets, TLS handshakes), whatever the protocol.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use super::plan::Plan;
use super::tls_stats::TlsStats;
use crate::exit::Failure;

/// Connections opened (and TLS handshakes made) before the clock started.
#[derive(Default)]
pub struct Preflight {
    /// Sockets opened, the probe's included.
    pub sockets: u64,
    /// Their handshakes (never in the window).
    pub tls: TlsStats,
}

/// The failure (exit 3) of a connection to `target` that could not be opened.
pub fn unreachable(target: &str) -> impl Fn(io::Error) -> Failure + Copy + '_ {
    move |e| Failure::unreachable(format!("cannot connect to {target}: {e}"))
}

/// Connect to the first of `addrs` that accepts within the plan's timeout; it becomes the
/// plan's address. Fails naming `target` and the last address's error.
pub fn connect_first(
    plan: &mut Plan,
    addrs: &[SocketAddr],
    target: &str,
) -> Result<TcpStream, Failure> {
    let timeout = Duration::from_nanos(plan.timeout_ns);
    let mut last_err = None;
    for addr in addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(s) => {
                plan.addr = *addr;
                return Ok(s);
            }
            Err(e) => last_err = Some(e),
        }
    }
    let e = last_err.unwrap_or_else(|| io::Error::other("no address"));
    Err(unreachable(target)(e))
}
