//! `netperf-driver`: a precise HTTP/1.1 load generator (closed and open loop, without
//! coordinated omission) and the echo server used behind gateways and sidecars.

pub mod cli;
pub mod clock;
pub mod echo;
pub mod exit;
pub mod flamegraph;
pub mod health;
pub mod hist;
pub mod http1;
pub mod http2;
pub mod load;
pub mod report;
pub mod slab;
pub mod tls;
pub mod url;

use std::ffi::OsString;

use clap::Parser;

use crate::cli::{Command, EchoOpts, Opts};
use crate::exit::{ExitCode, Failure};

/// Parse `args`, run, and return the process exit code (messages already printed).
pub fn main_with_args<I: IntoIterator<Item = OsString>>(args: I) -> i32 {
    let opts = match Opts::try_parse_from(args) {
        Ok(o) => o,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return 0;
            }
            let text = e.to_string();
            let line = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("bad arguments");
            let line = line.trim_start_matches("error: ");
            eprintln!("netperf-driver: {line}");
            return ExitCode::Usage as i32;
        }
    };
    match run(opts) {
        Ok(()) => 0,
        Err(f) => {
            eprintln!("netperf-driver: {}", f.message);
            f.code as i32
        }
    }
}

/// Run the parsed command.
pub fn run(opts: Opts) -> Result<(), Failure> {
    match opts.command {
        Command::Http(http) => load::run_http(&http),
        Command::Echo(echo) => run_echo(echo),
        Command::Flamegraph(graph) => flamegraph::run(&graph),
    }
}

fn run_echo(opts: EchoOpts) -> Result<(), Failure> {
    let next = match &opts.next {
        Some(u) => Some(url::HttpUrl::parse(u).map_err(Failure::usage)?),
        None => None,
    };
    let threads = opts
        .threads
        .map(|t| t as usize)
        .unwrap_or_else(available_cpus);
    let cfg = echo::EchoConfig {
        listen: opts.listen,
        id: opts.id,
        next,
        threads,
        tcp_echo: opts.tcp_echo,
        tls: tls::server::server_config(&opts.tls, !opts.no_http2).map_err(Failure::usage)?,
        http2: !opts.no_http2,
    };
    echo::serve(cfg).map_err(Failure::other)
}

/// Number of CPUs this process may use.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
