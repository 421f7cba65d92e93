//! The real echo server over real loopback sockets.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use common::{exchange, header, Echo};

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let echo = Echo::start(&["--id", "svc-a"]);
    let mut s = TcpStream::connect(("127.0.0.1", echo.port)).unwrap();
    for _ in 0..3 {
        let (status, headers, body) = exchange(&mut s, "GET /any/path HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(status, 200);
        assert_eq!(body, "ok\n");
        assert_eq!(header(&headers, "x-netperf-echo"), Some("svc-a"));
        assert_eq!(header(&headers, "x-netperf-hops"), Some("1"));
        assert_eq!(header(&headers, "connection"), None);
    }
}

#[test]
fn size_status_healthz_and_bad_parameters() {
    let echo = Echo::start(&[]);
    let mut s = TcpStream::connect(("127.0.0.1", echo.port)).unwrap();
    let (status, _, body) = exchange(
        &mut s,
        "GET /?size=10000&status=503 HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert_eq!((status, body.len()), (503, 10_000));
    let (status, _, body) = exchange(&mut s, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let (status, _, body) = exchange(&mut s, "GET /?delay=soon HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(status, 400);
    assert!(body.contains("delay"), "{body}");
    let (status, _, _) = exchange(
        &mut s,
        "POST /?status=201 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
    );
    assert_eq!(status, 201);
    let (status, _, _) = exchange(
        &mut s,
        "PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    );
    assert_eq!(status, 200, "chunked request bodies are consumed");
}

#[test]
fn delay_is_applied_and_pipelined_requests_stay_in_order() {
    let echo = Echo::start(&[]);
    let mut s = TcpStream::connect(("127.0.0.1", echo.port)).unwrap();
    let t0 = Instant::now();
    s.write_all(b"GET /?delay=30ms&status=202 HTTP/1.1\r\nHost: x\r\n\r\nGET /?status=203 HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (first, _, _) = common::read_response(&mut s);
    let elapsed = t0.elapsed();
    let (second, _, _) = common::read_response(&mut s);
    assert_eq!((first, second), (202, 203));
    assert!(elapsed.as_micros() >= 30_000, "answered after {elapsed:?}");
    assert!(elapsed.as_micros() < 500_000, "answered after {elapsed:?}");
}

#[test]
fn burn_spends_cpu_before_answering() {
    let echo = Echo::start(&[]);
    let mut s = TcpStream::connect(("127.0.0.1", echo.port)).unwrap();
    let t0 = Instant::now();
    let (status, _, _) = exchange(&mut s, "GET /?burn=5ms HTTP/1.1\r\nHost: x\r\n\r\n");
    let elapsed = t0.elapsed();
    assert_eq!(status, 200);
    assert!(elapsed.as_micros() >= 5_000, "answered after {elapsed:?}");
    let (status, _, body) = exchange(&mut s, "GET /?burn=5s HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(status, 400);
    assert!(body.contains("burn 5s above 1s"), "{body}");
}

#[test]
fn http10_and_close_parameter_close_the_connection() {
    let echo = Echo::start(&[]);
    for request in [
        "GET / HTTP/1.0\r\n\r\n",
        "GET /?close=1 HTTP/1.1\r\nHost: x\r\n\r\n",
    ] {
        let mut s = TcpStream::connect(("127.0.0.1", echo.port)).unwrap();
        let (status, headers, _) = exchange(&mut s, request);
        assert_eq!(status, 200);
        assert_eq!(header(&headers, "connection"), Some("close"));
        let mut rest = Vec::new();
        assert_eq!(
            s.read_to_end(&mut rest).unwrap(),
            0,
            "server closed after the response"
        );
    }
}

#[test]
fn chain_counts_hops_through_two_servers_calling_each_other() {
    let port_a = common::free_port();
    let port_b = common::free_port();
    let url_a = format!("http://127.0.0.1:{port_a}/");
    let url_b = format!("http://127.0.0.1:{port_b}/");
    let _a = Echo::start_on(
        &format!("127.0.0.1:{port_a}"),
        &["--id", "A", "--next", &url_b],
    );
    let _b = Echo::start_on(
        &format!("127.0.0.1:{port_b}"),
        &["--id", "B", "--next", &url_a],
    );
    let mut s = TcpStream::connect(("127.0.0.1", port_a)).unwrap();
    for depth in [0u32, 1, 3, 8] {
        let (status, headers, _) = exchange(
            &mut s,
            &format!("GET /?depth={depth} HTTP/1.1\r\nHost: x\r\n\r\n"),
        );
        assert_eq!(status, 200);
        assert_eq!(
            header(&headers, "x-netperf-hops"),
            Some((depth + 1).to_string().as_str())
        );
        assert_eq!(header(&headers, "x-netperf-echo"), Some("A"));
    }
    // Each hop applies its own delay: depth 2 with 5 ms is at least 15 ms.
    let t0 = Instant::now();
    let (status, headers, _) = exchange(
        &mut s,
        "GET /?depth=2&delay=5ms HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert_eq!(
        (status, header(&headers, "x-netperf-hops")),
        (200, Some("3"))
    );
    assert!(t0.elapsed().as_millis() >= 15);
}

#[test]
fn depth_without_next_and_unreachable_next_are_errors() {
    let lonely = Echo::start(&[]);
    let mut s = TcpStream::connect(("127.0.0.1", lonely.port)).unwrap();
    let (status, _, _) = exchange(&mut s, "GET /?depth=1 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(status, 400);
    let dead = format!("http://127.0.0.1:{}/", common::free_port());
    let broken = Echo::start(&["--next", &dead]);
    let mut s = TcpStream::connect(("127.0.0.1", broken.port)).unwrap();
    let (status, _, body) = exchange(&mut s, "GET /?depth=1 HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(status, 502, "{body}");
}
