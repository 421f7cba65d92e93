//! `netperf-driver http`: plan, pre-flight connections, run the worker threads, merge.

pub mod conn;
pub mod liveness;
pub mod pacer;
pub mod plan;
pub mod preflight;
pub mod run_clock;
pub mod schedule;
pub mod signal;
pub mod stats;
pub mod tls_conn;
pub mod tls_stats;
pub mod turns;
pub mod worker;

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::HttpOpts;
use crate::exit::Failure;
use crate::report::Document;
use conn::ClientConn;
use liveness::Liveness;
use plan::Plan;
use preflight::{connect_first, unreachable, Preflight};
use run_clock::RunClock;
use stats::ThreadStats;
use tls_conn::TlsConn;
use tls_stats::TlsStats;
use worker::run_worker;

/// Run a load test from parsed options and print/write the result.
pub fn run_http(opts: &HttpOpts) -> Result<(), Failure> {
    let mut plan = Plan::from_opts(opts, crate::available_cpus())?;
    let target = format!("{}:{}", plan.url.host, plan.url.port);
    let addrs = plan
        .url
        .resolve()
        .map_err(|e| Failure::unreachable(format!("cannot connect to {target}: {e}")))?;
    let doc = if plan.http2.is_some() {
        crate::http2::client::measure(plan, &addrs, &target)?
    } else {
        let (per_thread, pre) = preflight(&mut plan, &addrs, &target)?;
        measure(Arc::new(plan), per_thread, pre)?
    };
    let json = serde_json::to_string_pretty(&doc).map_err(|e| Failure::other(e.to_string()))?;
    if let Some(path) = &opts.output {
        std::fs::write(path, format!("{json}\n"))
            .map_err(|e| Failure::other(format!("cannot write {}: {e}", path.display())))?;
    }
    let mut stdout = std::io::stdout().lock();
    let text = if opts.json {
        format!("{json}\n")
    } else {
        doc.to_text()
    };
    stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
        .map_err(|e| Failure::other(e.to_string()))?;
    Ok(())
}

/// Open every keep-alive connection before the clock starts (one probe connection for
/// `--new-connection-per-request`), and complete their TLS handshakes. Fails with exit 3
/// when the target cannot be reached, with exit 6 when TLS fails (naming the cause).
fn preflight(
    plan: &mut Plan,
    addrs: &[std::net::SocketAddr],
    target: &str,
) -> Result<(Vec<Vec<ClientConn>>, Preflight), Failure> {
    let first = connect_first(plan, addrs, target)?;
    let timeout = Duration::from_nanos(plan.timeout_ns);
    let unreachable = unreachable(target);
    let mut pre = Preflight {
        sockets: 1,
        tls: TlsStats::default(),
    };
    let url = plan.url.display();
    let mut handshake = |stream: &mut TcpStream| -> Result<Option<TlsConn>, Failure> {
        let Some(tls) = &plan.tls else {
            return Ok(None);
        };
        let mut conn = TlsConn::handshake_blocking(tls, stream, timeout)
            .map_err(|f| Failure::tls(format!("{url}: {}", f.message)))?;
        if let Some(h) = conn.finished.take() {
            pre.tls.handshake(&h, None);
        }
        Ok(Some(conn))
    };
    let mut first = first;
    let first_tls = handshake(&mut first)?;
    let mut per_thread: Vec<Vec<ClientConn>> = Vec::with_capacity(plan.threads);
    if plan.new_connection_per_request {
        drop(first_tls);
        drop(first);
        for t in 0..plan.threads {
            per_thread.push(
                (0..plan.connections_of(t))
                    .map(|_| ClientConn::disconnected())
                    .collect(),
            );
        }
        return Ok((per_thread, pre));
    }
    let mut pending_first = Some((first, first_tls));
    for t in 0..plan.threads {
        let mut conns = Vec::with_capacity(plan.connections_of(t));
        for _ in 0..plan.connections_of(t) {
            let (stream, tls) = match pending_first.take() {
                Some(pair) => pair,
                None => {
                    pre.sockets += 1;
                    let mut s =
                        TcpStream::connect_timeout(&plan.addr, timeout).map_err(unreachable)?;
                    let tls = handshake(&mut s)?;
                    (s, tls)
                }
            };
            let _ = stream.set_nodelay(true);
            let conn = ClientConn::connected(stream).map_err(|e| Failure::other(e.to_string()))?;
            conns.push(match tls {
                Some(tls) => conn.with_tls(tls),
                None => conn,
            });
        }
        per_thread.push(conns);
    }
    Ok((per_thread, pre))
}

/// Run the workers over warmup + window and build the document.
fn measure(
    plan: Arc<Plan>,
    per_thread: Vec<Vec<ClientConn>>,
    pre: Preflight,
) -> Result<Document, Failure> {
    signal::install();
    let clock = RunClock::start(&plan);
    let tl = clock.tl;
    let liveness = Arc::new(Liveness::new(tl.start_ns));
    let mut handles = Vec::with_capacity(plan.threads);
    for (t, conns) in per_thread.into_iter().enumerate() {
        let plan = Arc::clone(&plan);
        let liveness = Arc::clone(&liveness);
        let h = std::thread::Builder::new()
            .name(format!("load-{t}"))
            .spawn(move || run_worker(plan, tl, t, conns, liveness))
            .map_err(|e| Failure::other(format!("cannot start thread: {e}")))?;
        handles.push(h);
    }
    let mut merged: Option<ThreadStats> = None;
    let mut utils = Vec::with_capacity(handles.len());
    let mut failure = None;
    for h in handles {
        match h.join() {
            Ok(Ok(r)) => {
                utils.push(r.window);
                match &mut merged {
                    Some(m) => m.merge(&r.stats),
                    None => merged = Some(r.stats),
                }
            }
            Ok(Err(e)) => failure = Some(Failure::other(format!("load thread failed: {e}"))),
            Err(_) => failure = Some(Failure::other("worker thread panicked")),
        }
    }
    let (stats, facts) = clock.finish(merged, failure, &liveness, &pre, utils)?;
    Ok(Document::build(&plan, &stats, &facts))
}
