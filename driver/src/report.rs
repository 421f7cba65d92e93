//! The result document (JSON, schema_version 1, see docs/driver-output.md) and its
//! human-readable text form.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::health::{cpu_bound, saturations, CpuTimes, HealthInputs, SaturationKind, ThreadUsage};
use crate::hist::{summarize, LatencyStats};
use crate::load::plan::Plan;
use crate::load::stats::{ErrorKind, ThreadStats, ERROR_NAMES, FIRST_GRPC_KIND};

/// Version of the JSON layout.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole `--json` document.
#[derive(Debug, Serialize)]
pub struct Document {
    pub schema_version: u32,
    pub tool: Tool,
    pub config: Config,
    pub summary: Summary,
    pub latency_ns: LatencyStats,
    pub service_time_ns: LatencyStats,
    pub schedule_lag_ns: Option<LatencyStats>,
    pub connect_time_ns: Option<LatencyStats>,
    pub intervals: Vec<IntervalDoc>,
    pub client: Client,
    /// `https://` runs: TLS settings, what was negotiated, handshakes (null otherwise).
    pub tls: Option<TlsDoc>,
    /// `--http2`/`--grpc` runs: streams, the server's limit, gRPC statuses (null otherwise).
    pub http2: Option<Http2Doc>,
}

/// HTTP/2 (and gRPC) of a `--http2`/`--grpc` run.
#[derive(Debug, Serialize)]
pub struct Http2Doc {
    /// `h2` (over TLS, ALPN) or `h2c` (cleartext, prior knowledge).
    pub mode: &'static str,
    /// Streams in flight per connection asked for (`--streams-per-connection`).
    pub streams_per_connection: usize,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (null: no limit announced); the driver
    /// keeps at most min(streams_per_connection, this) streams open per connection.
    pub server_max_concurrent_streams: Option<u64>,
    /// GOAWAY frames received from the server (graceful ones included).
    pub goaways_received: u64,
    /// gRPC calls, null for plain HTTP/2.
    pub grpc: Option<GrpcDoc>,
}

/// gRPC unary calls of a `--grpc` run.
#[derive(Debug, Serialize)]
pub struct GrpcDoc {
    /// `/package.Service/Method`.
    pub method: String,
    /// Request message size in bytes (before the 5-byte gRPC prefix).
    pub message_bytes: usize,
    /// Calls of the window per grpc-status code (`"0"` is OK; others are also errors).
    pub status_codes: BTreeMap<String, u64>,
}

/// TLS of an `https://` run.
#[derive(Debug, Serialize)]
pub struct TlsDoc {
    /// Server name sent (SNI) and checked against the certificate.
    pub server_name: String,
    /// How the server certificate was checked: `ca` (--ca), `system` or `insecure`.
    pub verify: &'static str,
    /// A client certificate was offered (mutual TLS).
    pub client_certificate: bool,
    /// Session resumption on reconnect was enabled.
    pub resumption: bool,
    /// Versions offered.
    pub versions_offered: Vec<&'static str>,
    /// Negotiated version (null when no handshake completed).
    pub version: Option<&'static str>,
    /// Negotiated cipher suite (IANA name).
    pub cipher_suite: Option<&'static str>,
    /// ALPN protocol agreed (`http/1.1`, or `h2` with `--http2`), null when the server did
    /// not take part in ALPN.
    pub alpn: Option<&'static str>,
    /// Handshakes completed over the whole run (connections opened before the clock too).
    pub handshakes: u64,
    /// Of those, abbreviated handshakes (session resumed).
    pub resumed: u64,
    /// From TCP connected to handshake done, for connections opened for window requests.
    pub handshake_time_ns: LatencyStats,
}

/// Tool name and version.
#[derive(Debug, Serialize)]
pub struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

/// The configuration that was run.
#[derive(Debug, Serialize)]
pub struct Config {
    pub url: String,
    /// `http`, `https`, `h2` (HTTP/2 over TLS), `h2c` (cleartext HTTP/2), or `tcp-rr` for a
    /// tcp:// target (request/response over raw TCP).
    pub protocol: &'static str,
    /// tcp-rr: bytes per request and per response.
    pub payload_bytes: Option<u64>,
    pub mode: &'static str,
    pub connections: usize,
    pub threads: usize,
    pub rate: Option<f64>,
    pub arrival: &'static str,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub timeout_s: f64,
    pub interval_s: f64,
    pub method: String,
    pub headers: BTreeMap<String, String>,
    pub body_size: u64,
    pub new_connection_per_request: bool,
    pub spin_s: f64,
    pub realtime: bool,
    /// The exact request count asked for (`--requests`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// `--turn`: the slot length shared with another driver (s), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_s: Option<f64>,
    /// `--turn`: this process's side (0 or 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_side: Option<u8>,
}

/// Counts for the measured window.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub duration_s: f64,
    pub requested_rps: Option<f64>,
    pub achieved_rps: f64,
    pub requests: u64,
    pub ok: u64,
    pub non_2xx: u64,
    /// Requests sent before the window and still unanswered at its end: in `latency_ns` at
    /// their age then (a lower bound), not in `requests`, `ok` or `service_time_ns`.
    pub censored: u64,
    /// Responses (any status) completed over the whole run, warmup and drain included: a
    /// resource counter of the system under test sampled around the whole driver process
    /// divides by this.
    pub completed_total: u64,
    pub status_codes: BTreeMap<String, u64>,
    pub errors: BTreeMap<&'static str, u64>,
    pub sockets_opened: u64,
    pub reconnects: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Open loop: requests scheduled in the window (null for closed loop).
    pub scheduled: Option<u64>,
    /// Open loop: requests that had to wait for a free connection.
    pub queued: u64,
    /// The first message naming the cause, per error kind that has one (TLS errors).
    pub error_causes: BTreeMap<&'static str, String>,
}

/// One interval of the window.
#[derive(Debug, Serialize)]
pub struct IntervalDoc {
    pub start_s: f64,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub rps: f64,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
}

/// Health of the load generator.
#[derive(Debug, Serialize)]
pub struct Client {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub cpu_util: f64,
    pub threads: usize,
    pub thread_cpu_util: Vec<f64>,
    pub thread_busy_util: Vec<Option<f64>>,
    pub schedule_lag_p99_ns: Option<u64>,
    pub achieved_ratio: Option<f64>,
    pub saturated: bool,
    /// Some load thread's own CPU was pegged (false: a saturated run waited for CPUs).
    pub cpu_bound: bool,
    pub saturation_reasons: Vec<String>,
    /// What each reason spoils, in the same order.
    pub saturation_kinds: Vec<SaturationKind>,
}

/// Process-level inputs besides the merged statistics.
pub struct RunFacts {
    /// Process CPU during the run.
    pub cpu: CpuTimes,
    /// Wall time of the run (warmup, window and drain).
    pub wall_s: f64,
    /// How each worker thread used its time over the measured window.
    pub threads: Vec<ThreadUsage>,
    /// Sockets opened before the clock started.
    pub preflight_sockets: u64,
    /// `--turn`: the part of the window in this side's slots (ns); None: all of it.
    pub window_active_ns: Option<u64>,
    /// `--turn`: the part of each interval in this side's slots (ns); None: all of it.
    pub interval_active_ns: Option<Vec<u64>>,
}

impl Document {
    /// Assemble the document from the plan and the merged statistics.
    pub fn build(plan: &Plan, stats: &ThreadStats, facts: &RunFacts) -> Self {
        let open = plan.rate.is_some();
        let window_s = plan.duration_ns as f64 / 1e9;
        // under --turn, the seconds of this side's slots: rates are per second of sending
        let duration_s = facts
            .window_active_ns
            .map_or(window_s, |ns| ns as f64 / 1e9);
        // What the target really delivered while the window was open (responses to warmup
        // requests included, responses after the window excluded), so a client queue
        // served during the drain cannot inflate it.
        // an exact count ends when its last response arrives, not at the window's end
        let achieved_rps = if plan.requests.is_some() && facts.wall_s > 0.0 {
            stats.completed_in_window as f64 / facts.wall_s
        } else {
            stats.completed_in_window as f64 / duration_s
        };
        let lag = open.then(|| summarize(&stats.lag));
        let lag_p99 = lag.as_ref().map(|l| l.p99);
        let achieved_ratio = open.then(|| {
            if stats.scheduled == 0 {
                0.0
            } else {
                stats.requests as f64 / stats.scheduled as f64
            }
        });
        let found = saturations(&HealthInputs {
            open_loop: open,
            achieved_ratio,
            queue_timeouts: stats.errors[ErrorKind::QueueTimeout as usize],
            lag_p99_ns: lag_p99,
            max_lag_ns: plan.max_lag_ns,
            threads: facts.threads.clone(),
        });
        let interval_s = plan.interval_ns as f64 / 1e9;
        let intervals = (0..plan.interval_count())
            .map(|i| {
                let start_s = i as f64 * interval_s;
                // under --turn, an interval's rate is per second of this side's slots in it
                let len_s = match facts.interval_active_ns.as_ref().and_then(|v| v.get(i)) {
                    Some(&ns) => ns as f64 / 1e9,
                    None => interval_s.min(window_s - start_s),
                };
                match stats.intervals.get(i) {
                    Some(acc) => {
                        let q =
                            |p| (!acc.latency.is_empty()).then(|| acc.latency.value_at_quantile(p));
                        IntervalDoc {
                            start_s,
                            requests: acc.requests,
                            ok: acc.ok,
                            errors: acc.errors,
                            rps: if len_s > 0.0 {
                                acc.completed as f64 / len_s
                            } else {
                                0.0
                            },
                            p50_ns: q(0.5),
                            p99_ns: q(0.99),
                        }
                    }
                    None => IntervalDoc {
                        start_s,
                        requests: 0,
                        ok: 0,
                        errors: 0,
                        rps: 0.0,
                        p50_ns: None,
                        p99_ns: None,
                    },
                }
            })
            .collect();
        // a tcp:// exchange has no status: every complete echo counts as ok
        let status_codes = stats
            .status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0 && !plan.url.tcp)
            .map(|(code, n)| (code.to_string(), *n))
            .collect();
        // the gRPC status kinds only in gRPC runs
        let grpc = plan.http2.as_ref().is_some_and(|h| h.grpc.is_some());
        let errors = ERROR_NAMES
            .iter()
            .zip(stats.errors)
            .enumerate()
            .filter(|(i, _)| grpc || *i < FIRST_GRPC_KIND)
            .map(|(_, (k, v))| (*k, v))
            .collect();
        let busy_s = facts.cpu.total();
        Document {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "netperf-driver",
                version: env!("CARGO_PKG_VERSION"),
            },
            config: Config {
                url: plan.url.display(),
                protocol: match (plan.url.tcp, plan.url.tls, &plan.http2) {
                    (true, _, _) => "tcp-rr",
                    (false, _, Some(h2)) => h2.mode(),
                    (false, true, None) => "https",
                    (false, false, None) => "http",
                },
                payload_bytes: match plan.framing {
                    crate::load::conn::Framing::Echo(n) => Some(n as u64),
                    crate::load::conn::Framing::Http { .. } => None,
                },
                mode: if open { "open" } else { "closed" },
                connections: plan.connections,
                threads: plan.threads,
                rate: plan.rate,
                arrival: match plan.arrival {
                    crate::load::schedule::ArrivalKind::Constant => "constant",
                    crate::load::schedule::ArrivalKind::Poisson => "poisson",
                },
                duration_s: window_s,
                warmup_s: plan.warmup_ns as f64 / 1e9,
                timeout_s: plan.timeout_ns as f64 / 1e9,
                interval_s,
                method: plan.method.clone(),
                headers: plan.headers.iter().cloned().collect(),
                body_size: plan.body_size,
                new_connection_per_request: plan.new_connection_per_request,
                spin_s: plan.spin_ns as f64 / 1e9,
                realtime: plan.realtime,
                requests: plan.requests,
                turn_s: plan.turns.map(|t| t.turn_ns as f64 / 1e9),
                turn_side: plan.turns.map(|t| t.side),
            },
            summary: Summary {
                duration_s,
                requested_rps: plan.rate,
                achieved_rps,
                requests: stats.requests,
                ok: stats.ok,
                non_2xx: stats.non_2xx,
                censored: stats.censored,
                completed_total: stats.completed_total,
                status_codes,
                errors,
                sockets_opened: stats.sockets_opened + facts.preflight_sockets,
                reconnects: stats.reconnects,
                bytes_sent: stats.bytes_sent,
                bytes_received: stats.bytes_received,
                scheduled: open.then_some(stats.scheduled),
                queued: stats.queued,
                error_causes: stats.causes.clone(),
            },
            latency_ns: summarize(&stats.latency_with_censored()),
            service_time_ns: summarize(&stats.service),
            schedule_lag_ns: lag,
            connect_time_ns: plan
                .new_connection_per_request
                .then(|| summarize(&stats.connect)),
            intervals,
            client: Client {
                cpu_user_s: facts.cpu.user_s,
                cpu_sys_s: facts.cpu.sys_s,
                cpu_util: if facts.wall_s > 0.0 {
                    busy_s / (facts.wall_s * plan.threads as f64)
                } else {
                    0.0
                },
                threads: plan.threads,
                thread_cpu_util: facts.threads.iter().map(|u| u.cpu_util).collect(),
                thread_busy_util: facts.threads.iter().map(|u| u.busy_util).collect(),
                schedule_lag_p99_ns: lag_p99,
                achieved_ratio,
                saturated: !found.is_empty(),
                cpu_bound: cpu_bound(&facts.threads),
                saturation_reasons: found.iter().map(|s| s.reason.clone()).collect(),
                saturation_kinds: found.iter().map(|s| s.kind).collect(),
            },
            tls: plan.tls.as_ref().map(|t| TlsDoc {
                server_name: t.settings.server_name.clone(),
                verify: t.settings.verify,
                client_certificate: t.settings.client_certificate,
                resumption: t.settings.resumption,
                versions_offered: t.settings.versions.clone(),
                version: stats.tls.version,
                cipher_suite: stats.tls.cipher_suite,
                alpn: stats.tls.alpn.flatten(),
                handshakes: stats.tls.handshakes,
                resumed: stats.tls.resumed,
                handshake_time_ns: summarize(&stats.tls.handshake_time),
            }),
            http2: None,
        }
    }

    /// Human-readable report.
    pub fn to_text(&self) -> String {
        let s = &self.summary;
        let c = &self.config;
        let mut out = String::new();
        let load = match c.rate {
            Some(r) => format!("open loop {r} rps ({})", c.arrival),
            None => "closed loop".to_string(),
        };
        out.push_str(&format!(
            "netperf-driver {}: {} {}, {} connections, {} threads, {}s (+{}s warmup)\n",
            self.tool.version, c.url, load, c.connections, c.threads, c.duration_s, c.warmup_s
        ));
        out.push_str(&format!(
            "  requests {}  ok {}  non-2xx {}  achieved {:.1} rps\n",
            s.requests, s.ok, s.non_2xx, s.achieved_rps
        ));
        if s.censored > 0 {
            out.push_str(&format!(
                "  censored {} (unanswered at the end of the window; in latency at their age)\n",
                s.censored
            ));
        }
        let errs: Vec<String> = s
            .errors
            .iter()
            .filter(|(_, v)| **v > 0)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        out.push_str(&format!(
            "  errors {}  sockets opened {}  reconnects {}\n",
            if errs.is_empty() {
                "none".to_string()
            } else {
                errs.join(" ")
            },
            s.sockets_opened,
            s.reconnects
        ));
        for (kind, cause) in &s.error_causes {
            out.push_str(&format!("  {kind}: {cause}\n"));
        }
        if let Some(t) = &self.tls {
            out.push_str(&format!(
                "  tls {} {}  handshakes {}  resumed {}  (verify {}, resumption {})\n",
                t.version.unwrap_or("-"),
                t.cipher_suite.unwrap_or("-"),
                t.handshakes,
                t.resumed,
                t.verify,
                if t.resumption { "on" } else { "off" }
            ));
        }
        if let Some(h) = &self.http2 {
            let limit = h
                .server_max_concurrent_streams
                .map_or("none".to_string(), |n| n.to_string());
            out.push_str(&format!(
                "  {} {} streams/connection (server limit {limit})  goaways {}\n",
                h.mode, h.streams_per_connection, h.goaways_received
            ));
            if let Some(g) = &h.grpc {
                let codes: Vec<String> = g
                    .status_codes
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                out.push_str(&format!(
                    "  grpc {} ({} byte message)  grpc-status {}\n",
                    g.method,
                    g.message_bytes,
                    if codes.is_empty() {
                        "-".into()
                    } else {
                        codes.join(" ")
                    }
                ));
            }
        }
        let row = |name: &str, l: &LatencyStats| {
            format!(
                "  {name:<13} p50 {:>10}  p90 {:>10}  p99 {:>10}  p99.9 {:>10}  max {:>10}  (n={})\n",
                fmt_ns(l.p50), fmt_ns(l.p90), fmt_ns(l.p99), fmt_ns(l.p999), fmt_ns(l.max), l.count
            )
        };
        out.push_str(&row("latency", &self.latency_ns));
        out.push_str(&row("service time", &self.service_time_ns));
        if let Some(l) = &self.schedule_lag_ns {
            out.push_str(&row("schedule lag", l));
        }
        if let Some(l) = &self.connect_time_ns {
            out.push_str(&row("connect", l));
        }
        if let Some(t) = self.tls.as_ref().filter(|t| t.handshake_time_ns.count > 0) {
            out.push_str(&row("tls handshake", &t.handshake_time_ns));
        }
        let cl = &self.client;
        out.push_str(&format!(
            "  client cpu user {:.2}s sys {:.2}s util {:.0}%  {}\n",
            cl.cpu_user_s,
            cl.cpu_sys_s,
            cl.cpu_util * 100.0,
            if cl.saturated {
                format!("SATURATED: {}", cl.saturation_reasons.join("; "))
            } else {
                "healthy".into()
            }
        ));
        out
    }
}

/// Format nanoseconds with a readable unit.
pub fn fmt_ns(ns: u64) -> String {
    match ns {
        0..=9_999 => format!("{ns}ns"),
        10_000..=9_999_999 => format!("{:.1}us", ns as f64 / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.2}ms", ns as f64 / 1e6),
        _ => format!("{:.2}s", ns as f64 / 1e9),
    }
}
