//! `netperf-driver echo`: a keep-alive HTTP/1.1 server (cleartext, or HTTPS with
//! `--tls-cert`) with delays, CPU burns, sizes, statuses and call chains, run as one mio
//! event loop per thread on SO_REUSEPORT listeners. The same port serves HTTP/2 and gRPC
//! (ALPN h2, or the h2c preface): such connections go to [`crate::http2::server`].

mod burn;
mod inbound;
mod params;
pub mod tcp;
mod tls_io;
mod upstream;
mod worker;

pub use burn::burn;
pub use params::EchoParams;

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use crate::url::HttpUrl;

/// Everything an echo server needs to start.
#[derive(Debug, Clone)]
pub struct EchoConfig {
    /// Address to bind (port 0 picks a free port).
    pub listen: String,
    /// Name sent back in `x-netperf-echo`.
    pub id: Option<String>,
    /// Next service for `depth=N` calls.
    pub next: Option<HttpUrl>,
    /// Event-loop threads.
    pub threads: usize,
    /// Also serve raw TCP echo here (`--tcp-echo`).
    pub tcp_echo: Option<String>,
    /// Serve HTTPS with this configuration (`--tls-cert`); None: cleartext.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Also serve HTTP/2 on the same port (ALPN h2, the h2c preface) and gRPC.
    pub http2: bool,
}

/// Settings shared by all worker threads.
pub(crate) struct Shared {
    pub id_header: Vec<u8>,
    pub next: Option<HttpUrl>,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// HTTP/2 connections are handed over to a companion runtime (None: HTTP/1.1 only).
    pub http2: Option<Arc<crate::http2::server::H2Settings>>,
}

/// Resolve `listen` to one socket address.
pub fn resolve_listen(listen: &str) -> Result<SocketAddr, String> {
    listen
        .to_socket_addrs()
        .map_err(|e| format!("bad --listen {listen:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("bad --listen {listen:?}: no address"))
}

fn reuseport_listener(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(4096)?;
    Ok(socket.into())
}

/// Bind one listener per thread on the same port; returns them and the bound address.
pub fn bind(
    addr: SocketAddr,
    threads: usize,
) -> std::io::Result<(Vec<std::net::TcpListener>, SocketAddr)> {
    let first = reuseport_listener(addr)?;
    let bound = first.local_addr()?;
    let mut listeners = vec![first];
    for _ in 1..threads.max(1) {
        listeners.push(reuseport_listener(bound)?);
    }
    Ok((listeners, bound))
}

/// Bind, print `listening on IP:PORT`, and serve until the process is killed.
pub fn serve(cfg: EchoConfig) -> Result<(), String> {
    let addr = resolve_listen(&cfg.listen)?;
    let (listeners, bound) =
        bind(addr, cfg.threads).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let id_header = cfg
        .id
        .as_ref()
        .map(|id| format!("x-netperf-echo: {id}\r\n").into_bytes())
        .unwrap_or_default();
    let http2 = if cfg.http2 {
        let id = match &cfg.id {
            Some(id) => {
                Some(http::HeaderValue::from_str(id).map_err(|_| format!("bad --id {id:?}"))?)
            }
            None => None,
        };
        Some(Arc::new(crate::http2::server::H2Settings { id }))
    } else {
        None
    };
    let shared = Arc::new(Shared {
        id_header,
        next: cfg.next.clone(),
        tls: cfg.tls.clone(),
        http2,
    });
    let tcp = match &cfg.tcp_echo {
        Some(listen) => {
            let addr = resolve_listen(listen).map_err(|e| e.replace("--listen", "--tcp-echo"))?;
            Some(
                tcp::bind(addr)
                    .map_err(|e| format!("cannot listen on {addr} (--tcp-echo): {e}"))?,
            )
        }
        None => None,
    };
    let mut handles = Vec::new();
    for (i, listener) in listeners.into_iter().enumerate() {
        let shared = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name(format!("echo-{i}"))
            .spawn(move || worker::run(listener, shared, i))
            .map_err(|e| format!("cannot start thread: {e}"))?;
        handles.push(handle);
    }
    let mut tcp_bound = None;
    if let Some((listener, tcp_addr)) = tcp {
        tcp_bound = Some(tcp_addr);
        let handle = std::thread::Builder::new()
            .name("tcp-echo-accept".into())
            .spawn(move || tcp::serve(listener))
            .map_err(|e| format!("cannot start thread: {e}"))?;
        handles.push(handle);
    }
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on {bound}");
        if let Some(addr) = tcp_bound {
            let _ = writeln!(out, "tcp echo listening on {addr}");
        }
        let _ = out.flush();
    }
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("echo server failed: {e}")),
            Err(_) => return Err("echo server thread panicked".into()),
        }
    }
    Ok(())
}
