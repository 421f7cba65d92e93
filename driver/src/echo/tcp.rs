//! `--tcp-echo`: raw TCP echo for request/response latency (netperf's TCP_RR): every byte
//! read is written back at once, with Nagle's algorithm off. One thread per connection:
//! the latency gates use a handful of connections, and a blocked read costs no CPU.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Most connections served at once; further ones are closed on accept.
pub const MAX_CONNECTIONS: usize = 4096;
/// Bytes read per system call (a 64 KiB payload arrives in a few reads).
const READ_CHUNK: usize = 64 * 1024;

/// Bind `addr`; the listener and the bound address.
pub fn bind(addr: SocketAddr) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    Ok((listener, bound))
}

/// Accept connections forever, echoing each on its own thread.
pub fn serve(listener: TcpListener) -> std::io::Result<()> {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let (stream, _) = match listener.accept() {
            Ok(pair) => pair,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::Interrupted | ErrorKind::ConnectionAborted
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        if open.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::AcqRel);
            continue; // dropped: closed
        }
        let open = Arc::clone(&open);
        let spawned = std::thread::Builder::new()
            .name("tcp-echo".into())
            .stack_size(128 * 1024)
            .spawn(move || {
                echo(stream);
                open.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            // out of threads: the stream was moved into the failed closure and is closed
            continue;
        }
    }
}

/// Echo one connection until the peer closes it or an error occurs.
fn echo(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        if stream.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_every_byte_back() {
        let (listener, addr) = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        std::thread::spawn(move || serve(listener));
        let mut client = TcpStream::connect(addr).unwrap();
        for size in [1usize, 64, 1518, 65536] {
            let sent: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            client.write_all(&sent).unwrap();
            let mut got = vec![0u8; size];
            client.read_exact(&mut got).unwrap();
            assert_eq!(got, sent, "{size} bytes");
        }
    }
}
