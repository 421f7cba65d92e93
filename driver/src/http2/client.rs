//! `netperf-driver http --http2|--grpc`: pre-flight (connections, TLS with ALPN h2, and a
//! probe that the server speaks HTTP/2 and, for gRPC, knows the method), the worker threads,
//! and the document.

use std::future::Future;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use super::errors::Failed;
use super::grpc::describe_status;
use super::worker::{
    check_alpn, establish_preconnected, receive, run_worker, H2Stats, H2WorkerResult, Preconnected,
};
use crate::clock::mono_ns;
use crate::exit::Failure;
use crate::load::liveness::Liveness;
use crate::load::plan::Plan;
use crate::load::preflight::{connect_first, unreachable, Preflight};
use crate::load::run_clock::RunClock;
use crate::load::signal;
use crate::load::stats::{ErrorKind, ThreadStats, ERROR_NAMES};
use crate::load::tls_conn::TlsConn;
use crate::load::tls_stats::TlsStats;
use crate::report::{Document, GrpcDoc, Http2Doc};

/// Measure an HTTP/2 (or gRPC) target: the counterpart of [`crate::load::run_http`]'s
/// measurement for `--http2`/`--grpc`.
pub fn measure(mut plan: Plan, addrs: &[SocketAddr], target: &str) -> Result<Document, Failure> {
    let mut first = connect_first(&mut plan, addrs, target)?;
    let timeout = Duration::from_nanos(plan.timeout_ns);
    let unreachable = unreachable(target);
    let url = plan.url.display();
    let mut pre = Preflight {
        sockets: 1,
        tls: TlsStats::default(),
    };
    let mut handshake = |stream: &mut TcpStream| -> Result<Option<TlsConn>, Failure> {
        let Some(tls) = &plan.tls else {
            return Ok(None);
        };
        let mut conn = TlsConn::handshake_blocking(tls, stream, timeout).map_err(|f| {
            if f.kind == ErrorKind::AlpnRefused {
                Failure::protocol(format!("{url}: {}", f.message))
            } else {
                Failure::tls(format!("{url}: {}", f.message))
            }
        })?;
        if let Some(h) = conn.finished.take() {
            pre.tls.handshake(&h, None);
        }
        check_alpn(&conn.session)
            .map_err(|f| Failure::protocol(format!("{url}: {}", f.message)))?;
        Ok(Some(conn))
    };
    let first_tls = handshake(&mut first)?;
    probe(&plan, first, first_tls)?;
    let mut per_thread: Vec<Vec<Preconnected>> = Vec::with_capacity(plan.threads);
    for t in 0..plan.threads {
        let mut conns = Vec::with_capacity(plan.connections_of(t));
        for _ in 0..plan.connections_of(t) {
            pre.sockets += 1;
            let mut s = TcpStream::connect_timeout(&plan.addr, timeout).map_err(unreachable)?;
            let _ = s.set_nodelay(true);
            let tls = handshake(&mut s)?;
            conns.push(Preconnected { stream: s, tls });
        }
        per_thread.push(conns);
    }
    run(Arc::new(plan), per_thread, pre)
}

/// How a failure before the run ends the process: TLS (6), unreachable (3), or the target
/// not speaking what was asked (7).
fn before_run(url: &str, f: Failed) -> Failure {
    let message = format!("{url}: {}", f.message);
    match f.kind {
        ErrorKind::TlsCertificate | ErrorKind::TlsHandshake | ErrorKind::NotTls => {
            Failure::tls(message)
        }
        ErrorKind::ConnectRefused | ErrorKind::ConnectTimeout => Failure::unreachable(message),
        _ => Failure::protocol(message),
    }
}

/// On the first connection, before the clock: the HTTP/2 handshake and a PING round trip
/// (the server speaks HTTP/2), and for gRPC one call (the method exists and answers
/// grpc-status 0) unless `--requests` asks for an exact count.
fn probe(plan: &Plan, stream: TcpStream, tls: Option<TlsConn>) -> Result<(), Failure> {
    let h2 = plan.http2.as_ref().expect("an HTTP/2 plan");
    let url = plan.url.display();
    let timeout = Duration::from_nanos(plan.timeout_ns);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Failure::other(format!("runtime: {e}")))?;
    rt.block_on(async {
        let pre = Preconnected { stream, tls };
        let est = establish_preconnected(pre, h2, timeout)
            .await
            .map_err(|f| before_run(&url, f))?;
        let (Some(grpc), None) = (&h2.grpc, plan.requests) else {
            return Ok(());
        };
        let mut send = est.send;
        let mut conn = est.conn;
        let (resp, mut body) = send
            .send_request(h2.request(), false)
            .map_err(|e| Failure::protocol(format!("{url}: gRPC probe call: {e}")))?;
        if let Some(b) = &h2.body {
            body.send_data(b.clone(), true)
                .map_err(|e| Failure::protocol(format!("{url}: gRPC probe call: {e}")))?;
        }
        let answer = receive(resp, true);
        tokio::pin!(answer);
        let call = std::future::poll_fn(|cx| {
            if let Poll::Ready(Err(e)) = conn.as_mut().poll(cx) {
                return Poll::Ready(Err(e));
            }
            answer.as_mut().poll(cx)
        });
        let answer = match tokio::time::timeout(timeout, call).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                let f = super::errors::classify(&e, est.wire.first_bytes(), !h2.tls);
                return Err(Failure::protocol(format!(
                    "{url}: gRPC {}: the probe call failed: {} ({})",
                    grpc.method, f.message, ERROR_NAMES[f.kind as usize]
                )));
            }
            Err(_) => {
                return Err(Failure::protocol(format!(
                    "{url}: gRPC {}: no answer to the probe call within {}s",
                    grpc.method,
                    timeout.as_secs_f64()
                )))
            }
        };
        match answer.grpc {
            Some(Ok((0, _))) => Ok(()),
            Some(Ok((code, message))) => {
                let kind = ErrorKind::grpc(code).expect("non-zero");
                let hint = if code == 12 {
                    " (the server does not know this method: check the package, service and \
                     method names)"
                } else {
                    ""
                };
                Err(Failure::protocol(format!(
                    "{url}: gRPC {}: the server answered grpc-status {}{}{hint} ({})",
                    grpc.method,
                    describe_status(code),
                    if message.is_empty() {
                        String::new()
                    } else {
                        format!(": {message}")
                    },
                    ERROR_NAMES[kind as usize]
                )))
            }
            Some(Err(why)) => Err(Failure::protocol(format!(
                "{url}: gRPC {}: not a gRPC answer (HTTP {}): {why}",
                grpc.method, answer.status
            ))),
            None => Ok(()),
        }
    })
}

fn run(
    plan: Arc<Plan>,
    per_thread: Vec<Vec<Preconnected>>,
    pre: Preflight,
) -> Result<Document, Failure> {
    signal::install();
    let liveness = Arc::new(Liveness::new(mono_ns()));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let mut starts = Vec::with_capacity(per_thread.len());
    let mut handles = Vec::with_capacity(per_thread.len());
    for (t, conns) in per_thread.into_iter().enumerate() {
        let plan = Arc::clone(&plan);
        let liveness = Arc::clone(&liveness);
        let ready = ready_tx.clone();
        let (start_tx, start_rx) = std::sync::mpsc::channel();
        starts.push(start_tx);
        let h = std::thread::Builder::new()
            .name(format!("load-h2-{t}"))
            .spawn(move || run_worker(plan, t, conns, liveness, ready, start_rx))
            .map_err(|e| Failure::other(format!("cannot start thread: {e}")))?;
        handles.push(h);
    }
    drop(ready_tx);
    for _ in 0..handles.len() {
        if ready_rx.recv().is_err() {
            break; // a thread failed; its error comes with the join below
        }
    }
    let clock = RunClock::start(&plan);
    let tl = clock.tl;
    for s in &starts {
        let _ = s.send(tl);
    }
    drop(starts);
    let mut merged: Option<ThreadStats> = None;
    let mut h2 = H2Stats::default();
    let mut utils = Vec::new();
    let mut failure = None;
    for h in handles {
        match h.join() {
            Ok(Ok(H2WorkerResult {
                stats,
                h2: h2s,
                window,
            })) => {
                utils.push(window);
                h2.merge(&h2s);
                match &mut merged {
                    Some(m) => m.merge(&stats),
                    None => merged = Some(stats),
                }
            }
            Ok(Err(e)) => failure = Some(Failure::other(format!("load thread failed: {e}"))),
            Err(_) => failure = Some(Failure::other("worker thread panicked")),
        }
    }
    let (stats, facts) = clock.finish(merged, failure, &liveness, &pre, utils)?;
    let mut doc = Document::build(&plan, &stats, &facts);
    let h2plan = plan.http2.as_ref().expect("an HTTP/2 plan");
    doc.http2 = Some(Http2Doc {
        mode: h2plan.mode(),
        streams_per_connection: h2plan.streams,
        server_max_concurrent_streams: h2.server_max_streams,
        goaways_received: h2.goaways,
        grpc: h2plan.grpc.as_ref().map(|g| GrpcDoc {
            method: g.method.clone(),
            message_bytes: g.message_bytes,
            status_codes: h2
                .grpc_status
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
        }),
    });
    Ok(doc)
}
