//! A validated load plan built from the command line: URL, request bytes, threads,
//! connection split and timing.

use std::net::SocketAddr;

use super::conn::Framing;
use super::schedule::ArrivalKind;
use super::turns::Turns;
use crate::cli::{Arrival, HttpOpts};
use crate::exit::Failure;
use crate::http2::plan::Http2Plan;
use crate::tls::client::{sni_host, TlsTarget};
use crate::url::HttpUrl;

/// Bytes per request of a tcp:// target when --payload is not given.
pub const DEFAULT_TCP_PAYLOAD: usize = 64;

/// Most per-interval buckets one run may have.
pub const MAX_INTERVALS: u64 = 3600;

/// Everything the workers need, immutable during the run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub url: HttpUrl,
    pub addr: SocketAddr,
    pub request: Vec<u8>,
    pub framing: Framing,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body_size: u64,
    pub rate: Option<f64>,
    pub arrival: ArrivalKind,
    pub connections: usize,
    pub threads: usize,
    pub duration_ns: u64,
    pub warmup_ns: u64,
    pub timeout_ns: u64,
    pub interval_ns: u64,
    pub new_connection_per_request: bool,
    pub max_lag_ns: u64,
    pub spin_ns: u64,
    pub realtime: bool,
    /// Exactly this many requests over all threads (`--requests`), then stop.
    pub requests: Option<u64>,
    pub seed: u64,
    /// `https://`: the TLS client configuration and server name.
    pub tls: Option<TlsTarget>,
    /// `--http2`/`--grpc`: streams per connection and the request template (None: HTTP/1.1).
    pub http2: Option<Http2Plan>,
    /// `--turn`: this side's slots when sharing the time with another driver (None: always).
    pub turns: Option<Turns>,
}

impl Plan {
    /// Validate `opts` (exit 2 on problems). `addr` is filled in by [`Plan::with_addr`].
    pub fn from_opts(opts: &HttpOpts, cpus: usize) -> Result<Self, Failure> {
        let url = HttpUrl::parse_target(&opts.url).map_err(Failure::usage)?;
        if url.tcp {
            check_tcp_options(opts)?;
        } else if opts.payload.is_some() {
            return Err(Failure::usage(
                "--payload is for tcp:// targets; an HTTP request body is --body-size",
            ));
        }
        if opts.duration < 1_000_000 {
            return Err(Failure::usage("--duration must be at least 1ms"));
        }
        if opts.timeout < 1_000_000 {
            return Err(Failure::usage("--timeout must be at least 1ms"));
        }
        if opts.interval < 1_000_000 {
            return Err(Failure::usage("--interval must be at least 1ms"));
        }
        if opts.duration.div_ceil(opts.interval) > MAX_INTERVALS {
            return Err(Failure::usage(format!(
                "--duration/--interval gives more than {MAX_INTERVALS} intervals"
            )));
        }
        if opts.spin > 1_000_000 {
            return Err(Failure::usage("--spin must be at most 1ms"));
        }
        if opts.realtime && opts.rate.is_none() {
            return Err(Failure::usage(
                "--realtime needs --rate (a closed loop would starve the target's CPU)",
            ));
        }
        let method = opts.method.to_ascii_uppercase();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(Failure::usage(format!("bad --method {:?}", opts.method)));
        }
        let mut headers = Vec::new();
        for h in &opts.headers {
            let (k, v) = h.split_once(':').ok_or_else(|| {
                Failure::usage(format!("bad --header {h:?}: expected 'Name: value'"))
            })?;
            let k = k.trim();
            if k.is_empty() || !k.bytes().all(|b| b.is_ascii_graphic()) || v.contains(['\r', '\n'])
            {
                return Err(Failure::usage(format!("bad --header {h:?}")));
            }
            headers.push((k.to_string(), v.trim().to_string()));
        }
        if opts.body_size > 64 << 20 {
            return Err(Failure::usage("--body-size above 64 MiB"));
        }
        let tls = if url.tls {
            let host_header = headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("host"))
                .map(|(_, v)| v.as_str());
            let sni = sni_host(&url.host, host_header);
            Some(TlsTarget::from_opts(&opts.tls, &sni).map_err(Failure::usage)?)
        } else {
            if let Some(flag) = opts.tls.first_given() {
                return Err(Failure::usage(format!(
                    "{flag} is a TLS option: it needs an https:// URL"
                )));
            }
            None
        };
        let http2 = Http2Plan::from_opts(opts, &url, &method, &headers)?;
        let turns = turns_of(opts, http2.is_some())?;
        let tls = match (tls, &http2) {
            (Some(t), Some(_)) => Some(t.for_http2()),
            (tls, _) => tls,
        };
        let connections = opts.connections as usize;
        let threads = opts
            .threads
            .map(|t| t as usize)
            .unwrap_or(cpus)
            .clamp(1, connections);
        let (request, framing) = if url.tcp {
            let size = opts.payload.map_or(DEFAULT_TCP_PAYLOAD, |p| p as usize);
            (vec![b'x'; size], Framing::Echo(size))
        } else {
            let request = build_request(
                &method,
                &url,
                &headers,
                opts.body_size,
                opts.new_connection_per_request,
            );
            (
                request,
                Framing::Http {
                    head: method == "HEAD",
                },
            )
        };
        Ok(Self {
            framing,
            url,
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            request,
            method,
            headers,
            body_size: opts.body_size,
            rate: opts.rate,
            arrival: match opts.arrival {
                Arrival::Constant => ArrivalKind::Constant,
                Arrival::Poisson => ArrivalKind::Poisson,
            },
            connections,
            threads,
            duration_ns: opts.duration,
            // an exact count has no warmup: every request sent is one the server served
            warmup_ns: if opts.requests.is_some() {
                0
            } else {
                opts.warmup
            },
            timeout_ns: opts.timeout,
            interval_ns: opts.interval,
            new_connection_per_request: opts.new_connection_per_request,
            max_lag_ns: opts.max_lag,
            spin_ns: opts.spin,
            realtime: opts.realtime,
            requests: opts.requests,
            seed: opts.seed,
            tls,
            http2,
            turns,
        })
    }

    /// Connections owned by thread `t` (an even split; the first threads get the rest).
    pub fn connections_of(&self, t: usize) -> usize {
        self.connections / self.threads + usize::from(t < self.connections % self.threads)
    }

    /// Requests thread `t` sends under `--requests` (an even split), None without a count.
    pub fn requests_of(&self, t: usize) -> Option<u64> {
        let threads = self.threads as u64;
        self.requests
            .map(|n| n / threads + u64::from((t as u64) < n % threads))
    }

    /// Number of per-interval buckets in the window.
    pub fn interval_count(&self) -> usize {
        self.duration_ns.div_ceil(self.interval_ns) as usize
    }
}

/// `--turn`: a closed loop over HTTP/1.1 or raw TCP, in slots long enough to matter.
fn turns_of(opts: &HttpOpts, http2: bool) -> Result<Option<Turns>, Failure> {
    let Some(turn_ns) = opts.turn else {
        return Ok(None);
    };
    let problem = if opts.rate.is_some() {
        Some("--turn needs a closed loop (no --rate): an open loop's timetable does not pause")
    } else if opts.requests.is_some() {
        Some("--turn cannot be combined with --requests")
    } else if http2 {
        Some("--turn is for HTTP/1.1 and tcp:// targets, not --http2 or --grpc")
    } else if turn_ns < 1_000_000 {
        Some("--turn must be at least 1ms")
    } else {
        None
    };
    match problem {
        Some(text) => Err(Failure::usage(text)),
        None => Ok(Some(Turns {
            turn_ns,
            side: opts.turn_side,
        })),
    }
}

/// A tcp:// target takes no HTTP options.
fn check_tcp_options(opts: &HttpOpts) -> Result<(), Failure> {
    let http_only = [
        (!opts.method.eq_ignore_ascii_case("GET"), "--method"),
        (!opts.headers.is_empty(), "--header"),
        (opts.body_size > 0, "--body-size (use --payload)"),
    ];
    match http_only.iter().find(|(given, _)| *given) {
        Some((_, name)) => Err(Failure::usage(format!(
            "{name} is an HTTP option; a tcp:// target sends --payload bytes and reads them back"
        ))),
        None => Ok(()),
    }
}

/// The exact bytes sent for every request.
pub fn build_request(
    method: &str,
    url: &HttpUrl,
    headers: &[(String, String)],
    body_size: u64,
    close: bool,
) -> Vec<u8> {
    let mut req = format!("{method} {} HTTP/1.1\r\n", url.path_and_query);
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {}\r\n", url.authority()));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if body_size > 0
        && !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        req.push_str(&format!("Content-Length: {body_size}\r\n"));
    }
    if close {
        req.push_str("Connection: close\r\n");
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.resize(bytes.len() + body_size as usize, b'x');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<Plan, Failure> {
        let mut argv = vec!["netperf-driver", "http"];
        argv.extend_from_slice(args);
        let opts = crate::cli::Opts::try_parse_from(argv).unwrap();
        match opts.command {
            crate::cli::Command::Http(h) => Plan::from_opts(&h, 2),
            _ => unreachable!(),
        }
    }

    #[test]
    fn request_bytes_and_host_override() {
        let p = plan(&[
            "http://127.0.0.1:8080/x?y=1",
            "-H",
            "Host: example",
            "--body-size",
            "3",
            "-m",
            "post",
        ])
        .unwrap();
        let text = String::from_utf8(p.request.clone()).unwrap();
        assert_eq!(
            text,
            "POST /x?y=1 HTTP/1.1\r\nHost: example\r\nContent-Length: 3\r\n\r\nxxx"
        );
        let p = plan(&["http://h:81/", "--new-connection-per-request"]).unwrap();
        assert_eq!(
            String::from_utf8(p.request).unwrap(),
            "GET / HTTP/1.1\r\nHost: h:81\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn tcp_targets_send_the_payload_and_expect_it_back() {
        let p = plan(&["tcp://127.0.0.1:7007", "--payload", "512"]).unwrap();
        assert_eq!(p.request, vec![b'x'; 512]);
        assert_eq!(p.framing, Framing::Echo(512));
        let p = plan(&["tcp://h:7"]).unwrap();
        assert_eq!(p.framing, Framing::Echo(DEFAULT_TCP_PAYLOAD));
        assert!(plan(&["tcp://h:7", "-H", "X: y"]).is_err());
        assert!(plan(&["tcp://h:7", "--body-size", "3"]).is_err());
        assert!(plan(&["http://h/", "--payload", "64"]).is_err());
        let opts = crate::cli::Opts::try_parse_from([
            "netperf-driver",
            "http",
            "tcp://h:7",
            "--payload",
            "0",
        ]);
        assert!(opts.is_err(), "payload 0 is refused");
        let opts = crate::cli::Opts::try_parse_from([
            "netperf-driver",
            "http",
            "tcp://h:7",
            "--payload",
            "65537",
        ]);
        assert!(opts.is_err(), "payload above 64 KiB is refused");
    }

    #[test]
    fn threads_and_connection_split() {
        let p = plan(&["http://h/", "-c", "5", "-t", "3"]).unwrap();
        assert_eq!(
            (0..3).map(|t| p.connections_of(t)).collect::<Vec<_>>(),
            vec![2, 2, 1]
        );
        let p = plan(&["http://h/", "-c", "1"]).unwrap();
        assert_eq!(p.threads, 1, "never more threads than connections");
    }

    #[test]
    fn exact_request_count_is_split_over_threads_without_warmup() {
        let p = plan(&["http://h/", "-c", "4", "-t", "3", "-n", "1001", "-w", "2s"]).unwrap();
        let split: Vec<u64> = (0..3).filter_map(|t| p.requests_of(t)).collect();
        assert_eq!(split, vec![334, 334, 333]);
        assert_eq!(split.iter().sum::<u64>(), 1001);
        assert_eq!(
            p.warmup_ns, 0,
            "every counted request is one the server served"
        );
        let p = plan(&["http://h/", "-c", "2"]).unwrap();
        assert_eq!(p.requests_of(0), None);
        let zero =
            crate::cli::Opts::try_parse_from(["netperf-driver", "http", "http://h/", "-n", "0"]);
        assert!(zero.is_err(), "a count of zero is refused");
    }

    #[test]
    fn https_targets_carry_tls_settings() {
        let p = plan(&[
            "https://127.0.0.1:8443/",
            "--insecure",
            "-H",
            "Host: shop.example",
        ])
        .unwrap();
        let tls = p.tls.expect("https");
        assert_eq!(tls.settings.server_name, "shop.example");
        assert_eq!(
            String::from_utf8(p.request).unwrap(),
            "GET / HTTP/1.1\r\nHost: shop.example\r\n\r\n"
        );
        let p = plan(&["https://localhost/", "--insecure", "--tls-version", "1.3"]).unwrap();
        assert_eq!(p.tls.unwrap().settings.versions, vec!["TLSv1.3"]);
        assert!(
            plan(&["http://h/", "--insecure"]).is_err(),
            "TLS option on http://"
        );
        assert!(plan(&["https://h/", "--ca", "/nonexistent.pem"]).is_err());
    }

    #[test]
    fn http2_and_grpc_options() {
        let p = plan(&[
            "https://127.0.0.1:8443/x?y=1",
            "--insecure",
            "--http2",
            "-H",
            "Host: shop",
        ])
        .unwrap();
        let h2 = p.http2.expect("http2");
        assert_eq!((h2.streams, h2.mode()), (1, "h2"));
        assert_eq!(h2.uri.to_string(), "https://shop/x?y=1");
        assert!(
            h2.headers.get("host").is_none(),
            "Host became the authority"
        );
        assert_eq!(
            p.tls.unwrap().config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        let p = plan(&[
            "http://h:81/netperf.Echo/Echo",
            "--grpc",
            "--grpc-message-hex",
            "0a01",
        ])
        .unwrap();
        let h2 = p.http2.unwrap();
        assert_eq!(h2.mode(), "h2c");
        assert_eq!(h2.method, http::Method::POST);
        assert_eq!(h2.body.as_deref(), Some(&b"\0\0\0\0\x02\x0a\x01"[..]));
        assert_eq!(h2.headers["content-type"], "application/grpc");
        assert_eq!(h2.headers["te"], "trailers");
        let g = h2.grpc.unwrap();
        assert_eq!(
            (g.method.as_str(), g.message_bytes),
            ("/netperf.Echo/Echo", 2)
        );
        let p = plan(&["http://h/", "--http2", "--streams-per-connection", "8"]).unwrap();
        assert_eq!(p.http2.unwrap().streams, 8);
        assert!(plan(&["http://h/", "--streams-per-connection", "8"]).is_err());
        assert!(plan(&["http://h/x", "--grpc-message-hex", "00"]).is_err());
        assert!(
            plan(&["http://h/", "--grpc"]).is_err(),
            "no method in the path"
        );
        assert!(plan(&["http://h/a.B/C", "--grpc", "--body-size", "3"]).is_err());
        assert!(plan(&["http://h/a.B/C", "--grpc", "-m", "PUT"]).is_err());
        assert!(plan(&["http://h/a.B/C", "--grpc", "--grpc-message-hex", "0"]).is_err());
        assert!(plan(&["tcp://h:7", "--http2"]).is_err());
        assert!(plan(&["http://h/", "--http2", "--new-connection-per-request"]).is_err());
        assert!(plan(&["http://h/", "--http2", "-H", "Connection: close"]).is_err());
    }

    #[test]
    fn rejects_bad_input() {
        assert!(plan(&["ftp://h/"]).is_err());
        assert!(plan(&["http://h/", "-H", "nocolon"]).is_err());
        assert!(plan(&["http://h/", "-m", "G T"]).is_err());
        assert!(plan(&["http://h/", "-d", "2h", "--interval", "1s"]).is_err());
        assert!(
            plan(&["http://h/", "--realtime"]).is_err(),
            "realtime needs open loop"
        );
        assert!(plan(&["http://h/", "--realtime", "-r", "100"]).is_ok());
    }
}
