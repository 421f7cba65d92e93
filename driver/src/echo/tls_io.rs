//! HTTPS for the echo server: move bytes between a mio socket and a rustls
//! `ServerConnection` (non-blocking `read_tls` / `process_new_packets` / `write_tls`).

use std::io::{self, Read, Write};

use rustls::ServerConnection;

/// Plaintext read per step.
const CHUNK: usize = 16 * 1024;

/// Read every TLS record available on `stream`, answer the handshake, and append the
/// decrypted bytes to `rbuf`. `Ok(true)` when the client closed the connection.
pub fn read_into<S: Read + Write>(
    tls: &mut ServerConnection,
    stream: &mut S,
    rbuf: &mut Vec<u8>,
) -> io::Result<bool> {
    loop {
        let (more, mut eof) = match tls.read_tls(stream) {
            Ok(0) => (false, true),
            Ok(_) => (true, false),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => (false, false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if let Err(e) = tls.process_new_packets() {
            let _ = write_records(tls, stream); // the alert tells the client why
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        loop {
            let start = rbuf.len();
            rbuf.resize(start + CHUNK, 0);
            let read = tls.reader().read(&mut rbuf[start..]);
            let n = *read.as_ref().unwrap_or(&0);
            rbuf.truncate(start + n);
            match read {
                Ok(0) => {
                    eof = true; // close_notify
                    break;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    eof = true; // TCP closed without close_notify
                    break;
                }
            }
        }
        if eof {
            return Ok(true);
        }
        if !more {
            return Ok(false);
        }
    }
}

/// Write queued TLS records; `Ok(false)` when the socket would block first.
pub fn write_records<S: Write>(tls: &mut ServerConnection, stream: &mut S) -> io::Result<bool> {
    while tls.wants_write() {
        match tls.write_tls(stream) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Encrypt as much of `data` as the session takes and write the records; the number of
/// bytes of `data` taken (fewer when the socket would block).
pub fn write_plain<S: Write>(
    tls: &mut ServerConnection,
    stream: &mut S,
    data: &[u8],
) -> io::Result<usize> {
    let mut taken = 0;
    while taken < data.len() {
        let n = tls.writer().write(&data[taken..])?;
        taken += n;
        if !write_records(tls, stream)? || n == 0 {
            break;
        }
    }
    Ok(taken)
}
