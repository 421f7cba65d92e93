//! Query parameters the echo server understands: `delay`, `burn`, `size`, `status`, `depth`,
//! `close`, and over HTTP/2 `reset` and `goaway`. `burn=10us` spends that much CPU time of the serving thread per request (an exact
//! CPU regression to inject); like `delay` it is forwarded down a `depth` chain, so every hop
//! burns.

use crate::clock::parse_duration_ns;

/// Largest response body the echo server will produce (64 MiB).
pub const MAX_SIZE: u64 = 64 << 20;
/// Deepest call chain accepted.
pub const MAX_DEPTH: u32 = 64;
/// Longest accepted delay (60 s).
pub const MAX_DELAY_NS: u64 = 60_000_000_000;
/// Most CPU time one request may burn (1 s).
pub const MAX_BURN_NS: u64 = 1_000_000_000;

/// What one request asks of the echo server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EchoParams {
    /// Wait this long before answering.
    pub delay_ns: u64,
    /// Spend this much CPU time (of the serving thread) before answering.
    pub burn_ns: u64,
    /// Response body size; `None` means the default body.
    pub size: Option<u64>,
    /// Response status code.
    pub status: u16,
    /// Remaining call depth (0 answers directly).
    pub depth: u32,
    /// Answer with `Connection: close` and close (to exercise client reconnects).
    pub close: bool,
    /// HTTP/2 only: answer with RST_STREAM (INTERNAL_ERROR) instead of a response.
    pub reset: bool,
    /// HTTP/2 only: close the connection with GOAWAY, leaving the request unanswered.
    pub goaway: bool,
    /// The query with `depth` removed, forwarded to the next service.
    pub forward_query: String,
}

impl EchoParams {
    /// Parse the request target's query string.
    pub fn from_target(target: &str) -> Result<Self, String> {
        let query = target.split_once('?').map(|(_, q)| q).unwrap_or("");
        let mut params = EchoParams {
            delay_ns: 0,
            burn_ns: 0,
            size: None,
            status: 200,
            depth: 0,
            close: false,
            reset: false,
            goaway: false,
            forward_query: String::new(),
        };
        let mut forward: Vec<&str> = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "delay" => {
                    params.delay_ns =
                        parse_duration_ns(value).map_err(|e| format!("delay: {e}"))?;
                    if params.delay_ns > MAX_DELAY_NS {
                        return Err(format!("delay {value} above 60s"));
                    }
                }
                "burn" => {
                    params.burn_ns = parse_duration_ns(value).map_err(|e| format!("burn: {e}"))?;
                    if params.burn_ns > MAX_BURN_NS {
                        return Err(format!("burn {value} above 1s"));
                    }
                }
                "size" => {
                    let n: u64 = value
                        .parse()
                        .map_err(|_| format!("size: not a number: {value:?}"))?;
                    if n > MAX_SIZE {
                        return Err(format!("size {n} above {MAX_SIZE}"));
                    }
                    params.size = Some(n);
                }
                "status" => {
                    let s: u16 = value
                        .parse()
                        .map_err(|_| format!("status: not a number: {value:?}"))?;
                    if !(200..=599).contains(&s) {
                        return Err(format!("status {s} outside 200..599"));
                    }
                    params.status = s;
                }
                "close" => {
                    params.close = matches!(value, "1" | "true" | "yes" | "");
                }
                "reset" => {
                    params.reset = matches!(value, "1" | "true" | "yes" | "");
                }
                "goaway" => {
                    params.goaway = matches!(value, "1" | "true" | "yes" | "");
                }
                "depth" => {
                    let d: u32 = value
                        .parse()
                        .map_err(|_| format!("depth: not a number: {value:?}"))?;
                    if d > MAX_DEPTH {
                        return Err(format!("depth {d} above {MAX_DEPTH}"));
                    }
                    params.depth = d;
                    continue;
                }
                _ => {}
            }
            forward.push(pair);
        }
        params.forward_query = forward.join("&");
        Ok(params)
    }

    /// Request target for the next service: `base` (path[?query]) plus our forwarded
    /// parameters and `depth=N-1`.
    pub fn next_target(&self, base: &str) -> String {
        let mut target = base.to_string();
        let mut sep = if target.contains('?') { '&' } else { '?' };
        if !self.forward_query.is_empty() {
            target.push(sep);
            target.push_str(&self.forward_query);
            sep = '&';
        }
        target.push(sep);
        target.push_str(&format!("depth={}", self.depth.saturating_sub(1)));
        target
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_without_query() {
        let p = EchoParams::from_target("/anything").unwrap();
        assert_eq!(
            (p.delay_ns, p.size, p.status, p.depth, p.close),
            (0, None, 200, 0, false)
        );
        assert!(EchoParams::from_target("/?close=1").unwrap().close);
    }

    #[test]
    fn parses_all_parameters() {
        let p =
            EchoParams::from_target("/x?delay=250us&size=10&status=503&depth=3&foo=bar").unwrap();
        assert_eq!(
            (p.delay_ns, p.size, p.status, p.depth),
            (250_000, Some(10), 503, 3)
        );
        assert_eq!(p.forward_query, "delay=250us&size=10&status=503&foo=bar");
        assert_eq!(
            p.next_target("/"),
            "/?delay=250us&size=10&status=503&foo=bar&depth=2"
        );
        assert_eq!(
            p.next_target("/b?x=1"),
            "/b?x=1&delay=250us&size=10&status=503&foo=bar&depth=2"
        );
    }

    #[test]
    fn burn_is_parsed_and_forwarded_like_delay() {
        let p = EchoParams::from_target("/?burn=10us&depth=2").unwrap();
        assert_eq!(p.burn_ns, 10_000);
        assert_eq!(p.next_target("/"), "/?burn=10us&depth=1");
        assert_eq!(
            EchoParams::from_target("/?burn=2s").unwrap_err(),
            "burn 2s above 1s"
        );
    }

    #[test]
    fn rejects_bad_values() {
        for bad in [
            "/?delay=abc",
            "/?size=-1",
            "/?status=99",
            "/?status=700",
            "/?depth=1000",
            "/?delay=2h",
            "/?burn=abc",
            "/?burn=2s",
        ] {
            assert!(EchoParams::from_target(bad).is_err(), "{bad}");
        }
    }
}
