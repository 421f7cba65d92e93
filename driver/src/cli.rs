//! Command-line options (clap) for both subcommands.

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::clock::parse_duration_ns;
use crate::tls::options::{TlsClientOpts, TlsServerOpts};

/// HTTP/1.1 load generator and echo server for pytest-netperf.
#[derive(Parser, Debug)]
#[command(name = "netperf-driver", version, about)]
pub struct Opts {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure an HTTP/1.1 target, or with a tcp://host:port URL raw TCP request/response
    /// against a TCP echo server (closed loop, or open loop with --rate).
    Http(HttpOpts),
    /// Run the echo server (delay=, burn=, size=, status=, depth= query parameters; /healthz;
    /// HTTP/1.1, and HTTP/2 and gRPC on the same port; --tcp-echo adds a raw TCP echo
    /// listener).
    Echo(EchoOpts),
    /// Draw a differential flame graph (SVG on stdout): HEAD's stacks, each frame coloured by
    /// its change against BASE (red grew, blue shrank).
    Flamegraph(FlamegraphOpts),
}

/// Request arrival process for open-loop runs.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Evenly spaced requests.
    Constant,
    /// Exponential gaps with the same mean rate.
    Poisson,
}

impl Arrival {
    /// Name used in the JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
        }
    }
}

/// Options of `netperf-driver http`.
#[derive(Args, Debug, Clone)]
pub struct HttpOpts {
    /// Target URL: http://host[:port]/path, or tcp://host:port for request/response over raw
    /// TCP (each request is --payload bytes, complete when as many bytes came back).
    pub url: String,
    /// tcp:// targets: bytes per request (echoed back as the response); default 64.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub payload: Option<u32>,
    /// Concurrent connections.
    #[arg(short = 'c', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub connections: u32,
    /// Open loop: requests per second over all threads (omit for closed loop).
    #[arg(short = 'r', long, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Arrival process for --rate.
    #[arg(long, value_enum, default_value_t = Arrival::Constant)]
    pub arrival: Arrival,
    /// Measured duration (e.g. 10s, 500ms).
    #[arg(short = 'd', long, default_value = "10s", value_parser = parse_duration_ns)]
    pub duration: u64,
    /// Warmup before the measured window (excluded from results).
    #[arg(short = 'w', long, default_value = "1s", value_parser = parse_duration_ns)]
    pub warmup: u64,
    /// Per-request timeout (also the connect timeout).
    #[arg(long, default_value = "5s", value_parser = parse_duration_ns)]
    pub timeout: u64,
    /// Length of the per-interval statistics buckets.
    #[arg(long, default_value = "1s", value_parser = parse_duration_ns)]
    pub interval: u64,
    /// Worker threads (default: min(CPUs, connections)).
    #[arg(short = 't', long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Extra header `Name: value` (repeatable; a Host header replaces the default).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Request body size in bytes (filled with 'x').
    #[arg(long, default_value_t = 0)]
    pub body_size: u64,
    /// Open a new TCP connection for every request (TCP_CRR style).
    #[arg(long)]
    pub new_connection_per_request: bool,
    /// Print the JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON document to this file.
    #[arg(short = 'o', long)]
    pub output: Option<std::path::PathBuf>,
    /// Schedule-lag p99 above this marks an open-loop run saturated.
    #[arg(long, default_value = "1ms", value_parser = parse_duration_ns)]
    pub max_lag: u64,
    /// Open loop: wake this early and busy-poll until the send time (0 disables it; only
    /// used when a thread's sends are at least 10x this far apart).
    #[arg(long, default_value = "50us", value_parser = parse_duration_ns)]
    pub spin: u64,
    /// Open loop: run worker threads SCHED_FIFO (needs root/CAP_SYS_NICE) so other
    /// processes cannot preempt a send; not allowed in closed loop.
    #[arg(long)]
    pub realtime: bool,
    /// Seed for --arrival poisson (default: fixed, so runs are reproducible).
    #[arg(long, default_value_t = 0x6e65_7470_6572_66)]
    pub seed: u64,
    /// Send exactly this many requests and stop when all are answered (no warmup; --duration
    /// still bounds the run in time). For counting what a server does per request.
    #[arg(short = 'n', long, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub requests: Option<u64>,
    /// Closed loop: share the time with another driver process on this host in slots of this
    /// length (e.g. 25ms), aligned on the host's monotonic clock in ABBA order, sending only
    /// in this side's slots; rates are per second of this side's slots.
    #[arg(long, value_parser = parse_duration_ns)]
    pub turn: Option<u64>,
    /// With --turn: which side this process is (0 or 1).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub turn_side: u8,
    /// HTTP/2: ALPN h2 over TLS for https://, cleartext h2c with prior knowledge for http://.
    #[arg(long)]
    pub http2: bool,
    /// HTTP/2: concurrent streams (requests in flight) per connection (default 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub streams_per_connection: Option<u32>,
    /// gRPC unary calls (over HTTP/2, so implies --http2) to the method the URL's path names:
    /// http[s]://host:port/pkg.Service/Method. A non-zero grpc-status is an error.
    #[arg(long)]
    pub grpc: bool,
    /// gRPC: the request message (serialized protobuf) from this file (default: empty).
    #[arg(long, value_name = "FILE", conflicts_with = "grpc_message_hex")]
    pub grpc_message_file: Option<std::path::PathBuf>,
    /// gRPC: the request message as hex digits (e.g. 0a0568656c6c6f).
    #[arg(long, value_name = "HEX")]
    pub grpc_message_hex: Option<String>,
    /// TLS options of https:// targets.
    #[command(flatten)]
    pub tls: TlsClientOpts,
}

/// Options of `netperf-driver echo`.
#[derive(Args, Debug, Clone)]
pub struct EchoOpts {
    /// Address to listen on (port 0 picks a free port; the bound address is printed).
    #[arg(short = 'l', long, default_value = "0.0.0.0:8080")]
    pub listen: String,
    /// Name returned in the `x-netperf-echo` response header.
    #[arg(long)]
    pub id: Option<String>,
    /// Next service for requests with depth=N (N > 0).
    #[arg(long)]
    pub next: Option<String>,
    /// Event-loop threads (default: number of CPUs).
    #[arg(short = 't', long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Also serve raw TCP echo (every byte read is written back, Nagle off) on this address.
    #[arg(long)]
    pub tcp_echo: Option<String>,
    /// Serve HTTP/1.1 only: no ALPN h2 over TLS and no h2c (by default the same port also
    /// serves HTTP/2: ALPN h2, or the h2c connection preface, and gRPC /netperf.Echo/Echo).
    #[arg(long)]
    pub no_http2: bool,
    /// HTTPS instead of cleartext HTTP (`--tls-cert`, `--tls-key`, ...).
    #[command(flatten)]
    pub tls: TlsServerOpts,
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let v: f64 = text.parse().map_err(|_| format!("invalid rate {text:?}"))?;
    if !(v.is_finite() && v > 0.0 && v <= 10_000_000.0) {
        return Err(format!("rate {text:?} must be in (0, 10000000]"));
    }
    Ok(v)
}

/// Options of `netperf-driver flamegraph`.
#[derive(Args, Debug, Clone)]
pub struct FlamegraphOpts {
    /// Folded stacks of the reference (`frame;frame;leaf COUNT` lines).
    #[arg(long)]
    pub base: std::path::PathBuf,
    /// Folded stacks of the candidate: the widths drawn.
    #[arg(long)]
    pub head: std::path::PathBuf,
    /// Title of the picture.
    #[arg(long, default_value = "Differential flame graph")]
    pub title: String,
    /// Line under the title.
    #[arg(long)]
    pub subtitle: Option<String>,
    /// What a count is, shown in each frame's hover title. Counts are whole numbers: scale
    /// fractional values up and say so here (`instructions per 1,000 requests`).
    #[arg(long, default_value = "instructions")]
    pub count_name: String,
    /// Width of the picture in pixels.
    #[arg(long, default_value_t = 1200, value_parser = clap::value_parser!(u32).range(200..=20_000))]
    pub width: u32,
}
