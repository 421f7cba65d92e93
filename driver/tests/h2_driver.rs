//! The driver against the echo server over HTTP/2 on loopback: h2 over TLS (ALPN) and
//! cleartext h2c with several streams per connection, open and closed loop, gRPC unary
//! calls, the echo server's query controls, and the errors that name their cause
//! (ALPN refused, h2c refused, an unknown gRPC method, RST_STREAM, GOAWAY).

mod common;

use common::pki::{https, Pki};
use common::{count, measure, run, Echo};

fn errors(doc: &serde_json::Value) -> Vec<(String, u64)> {
    doc["summary"]["errors"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, v)| v.as_u64() != Some(0))
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect()
}

#[test]
fn h2c_with_streams_per_connection_closed_and_open_loop() {
    let echo = Echo::start(&[]);
    let url = echo.url("/");
    let doc = measure(&[
        &url,
        "--http2",
        "-c",
        "2",
        "--streams-per-connection",
        "8",
        "-n",
        "2000",
    ]);
    assert_eq!(count(&doc, "/summary/ok"), 2000);
    assert!(errors(&doc).is_empty(), "{:?}", errors(&doc));
    assert_eq!(doc["config"]["protocol"], "h2c");
    let h2 = &doc["http2"];
    assert_eq!(h2["mode"], "h2c");
    assert_eq!(count(&doc, "/http2/streams_per_connection"), 8);
    assert_eq!(count(&doc, "/http2/server_max_concurrent_streams"), 1024);
    assert!(h2["grpc"].is_null());
    assert!(doc["tls"].is_null());
    // the pre-flight probe connection and the two load connections, none during the run
    assert_eq!(count(&doc, "/summary/sockets_opened"), 3);
    assert_eq!(count(&doc, "/summary/reconnects"), 0);
    assert!(
        doc["summary"]["errors"]
            .get("grpc_status_12_unimplemented")
            .is_none(),
        "gRPC kinds only in gRPC runs"
    );
    assert!(
        count(&doc, "/summary/bytes_sent") > 2000 * 9,
        "HEADERS frames went out"
    );

    let doc = measure(&[
        &url, "--http2", "-c", "2", "-r", "400", "-d", "1s", "-w", "200ms",
    ]);
    assert_eq!(doc["config"]["mode"], "open");
    assert_eq!(count(&doc, "/summary/scheduled"), 400);
    assert_eq!(count(&doc, "/summary/ok"), 400, "{}", doc["summary"]);
    assert!(doc["schedule_lag_ns"]["count"].as_u64().unwrap() == 400);
}

#[test]
fn h2_over_tls_negotiates_alpn_h2() {
    let pki = Pki::new("alpn");
    let echo = pki.echo(&[]);
    let ca = pki.path("ca.pem");
    let url = https(&echo, "/?size=20000");
    let doc = measure(&[
        &url,
        "--ca",
        &ca,
        "--http2",
        "-c",
        "2",
        "--streams-per-connection",
        "4",
        "-n",
        "400",
    ]);
    assert_eq!(count(&doc, "/summary/ok"), 400);
    assert_eq!(doc["config"]["protocol"], "h2");
    assert_eq!(doc["http2"]["mode"], "h2");
    let tls = &doc["tls"];
    assert_eq!(tls["alpn"], "h2");
    assert_eq!(tls["version"], "TLSv1.3");
    assert_eq!(
        count(&doc, "/tls/handshakes"),
        3,
        "the probe and two connections"
    );
    assert!(
        count(&doc, "/summary/bytes_received") > 400 * 20_000,
        "the 20000-byte bodies came back (TLS records counted)"
    );
    // HTTP/1.1 is still served on the same port
    let doc = measure(&[&url, "--ca", &ca, "-n", "50"]);
    assert_eq!(count(&doc, "/summary/ok"), 50);
    assert_eq!(doc["tls"]["alpn"], "http/1.1");
}

#[test]
fn h2_to_a_server_that_offers_only_http11_is_alpn_refused() {
    let pki = Pki::new("refused");
    let echo = pki.echo(&["--no-http2"]);
    let url = https(&echo, "/");
    let r = run(&[
        "http",
        &url,
        "--ca",
        &pki.path("ca.pem"),
        "--http2",
        "-d",
        "1s",
    ]);
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("ALPN refused: the server offers only http/1.1"),
        "{}",
        r.stderr
    );
    // and the same server still serves HTTP/1.1
    let doc = measure(&[&url, "--ca", &pki.path("ca.pem"), "-n", "20"]);
    assert_eq!(count(&doc, "/summary/ok"), 20);
}

#[test]
fn h2c_to_an_http11_only_server_is_h2c_refused() {
    let echo = Echo::start(&["--no-http2"]);
    let r = run(&["http", &echo.url("/"), "--http2", "-d", "1s"]);
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(r.stderr.contains("h2c refused"), "{}", r.stderr);
    assert!(r.stderr.contains("HTTP/1.1 only"), "{}", r.stderr);
    // h2c to a TLS port, and h2 over TLS to a cleartext port
    let pki = Pki::new("mixed");
    let tls_echo = pki.echo(&[]);
    let plain = format!("http://127.0.0.1:{}/", tls_echo.port);
    let r = run(&["http", &plain, "--http2", "-d", "1s"]);
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(r.stderr.contains("is the port HTTPS?"), "{}", r.stderr);
    let r = run(&[
        "http",
        &format!("https://127.0.0.1:{}/", echo.port),
        "--insecure",
        "--http2",
        "-d",
        "1s",
    ]);
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert!(r.stderr.contains("plain HTTP"), "{}", r.stderr);
}

#[test]
fn grpc_unary_calls_echo_the_message() {
    let echo = Echo::start(&[]);
    let dir = std::env::temp_dir().join(format!("netperf-grpc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let message = dir.join("message.bin");
    std::fs::write(&message, [0x0a, 0x05, b'h', b'e', b'l', b'l', b'o']).unwrap();
    let url = echo.url("/netperf.Echo/Echo");
    let doc = measure(&[
        &url,
        "--grpc",
        "--grpc-message-file",
        message.to_str().unwrap(),
        "-c",
        "2",
        "--streams-per-connection",
        "4",
        "-n",
        "500",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(count(&doc, "/summary/ok"), 500);
    assert!(errors(&doc).is_empty(), "{:?}", errors(&doc));
    let grpc = &doc["http2"]["grpc"];
    assert_eq!(grpc["method"], "/netperf.Echo/Echo");
    assert_eq!(count(&doc, "/http2/grpc/message_bytes"), 7);
    assert_eq!(count(&doc, "/http2/grpc/status_codes/0"), 500);
    assert_eq!(
        count(&doc, "/summary/errors/grpc_status_12_unimplemented"),
        0
    );
    assert_eq!(doc["config"]["method"], "GET", "the flag as given");
    // over TLS, a message given as hex
    let pki = Pki::new("grpc");
    let tls_echo = pki.echo(&[]);
    let doc = measure(&[
        &https(&tls_echo, "/netperf.Echo/Echo"),
        "--ca",
        &pki.path("ca.pem"),
        "--grpc",
        "--grpc-message-hex",
        "0a0568656c6c6f",
        "-n",
        "100",
    ]);
    assert_eq!(count(&doc, "/http2/grpc/status_codes/0"), 100);
    assert_eq!(doc["tls"]["alpn"], "h2");
}

#[test]
fn an_unknown_grpc_method_is_a_clear_error() {
    let echo = Echo::start(&[]);
    let url = echo.url("/netperf.Echo/Missing");
    let r = run(&["http", &url, "--grpc", "-d", "1s"]);
    assert_eq!(r.code, 7, "{}", r.stderr);
    for needle in [
        "/netperf.Echo/Missing",
        "grpc-status 12 (UNIMPLEMENTED)",
        "grpc_status_12_unimplemented",
    ] {
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
    }
    // with an exact count there is no probe call: every call is an error of that kind
    let doc = measure(&[&url, "--grpc", "-n", "20"]);
    assert_eq!(
        errors(&doc),
        vec![("grpc_status_12_unimplemented".to_string(), 20)]
    );
    assert_eq!(count(&doc, "/http2/grpc/status_codes/12"), 20);
    let cause = doc["summary"]["error_causes"]["grpc_status_12_unimplemented"]
        .as_str()
        .unwrap();
    assert!(
        cause.contains("unknown method /netperf.Echo/Missing"),
        "{cause}"
    );
}

#[test]
fn rst_stream_and_goaway_are_named_error_kinds() {
    let echo = Echo::start(&[]);
    let doc = measure(&[&echo.url("/?reset=1"), "--http2", "-n", "30"]);
    assert_eq!(errors(&doc), vec![("rst_stream".to_string(), 30)]);
    let cause = doc["summary"]["error_causes"]["rst_stream"]
        .as_str()
        .unwrap();
    assert!(cause.contains("RST_STREAM INTERNAL_ERROR"), "{cause}");
    assert_eq!(
        count(&doc, "/summary/reconnects"),
        0,
        "a reset keeps the connection"
    );

    let doc = measure(&[&echo.url("/?goaway=1"), "--http2", "-n", "30"]);
    assert_eq!(errors(&doc), vec![("goaway".to_string(), 30)]);
    assert_eq!(count(&doc, "/http2/goaways_received"), 30);
    assert_eq!(count(&doc, "/summary/reconnects"), 30);

    // a graceful GOAWAY after the answer (close=1): the driver moves to a new connection
    let doc = measure(&[
        &echo.url("/?close=1"),
        "--http2",
        "-c",
        "2",
        "--streams-per-connection",
        "4",
        "-n",
        "200",
    ]);
    assert_eq!(
        count(&doc, "/summary/ok") + count(&doc, "/summary/errors/goaway"),
        200
    );
    assert!(count(&doc, "/http2/goaways_received") > 0);
}

#[test]
fn echo_query_controls_over_http2() {
    let echo = Echo::start(&[]);
    let doc = measure(&[&echo.url("/?delay=3ms"), "--http2", "-n", "20"]);
    assert!(
        count(&doc, "/latency_ns/min") >= 3_000_000,
        "{}",
        doc["latency_ns"]
    );
    assert!(
        count(&doc, "/latency_ns/p50") < 60_000_000,
        "{}",
        doc["latency_ns"]
    );
    let doc = measure(&[&echo.url("/?status=503"), "--http2", "-n", "20"]);
    assert_eq!(count(&doc, "/summary/non_2xx"), 20);
    assert_eq!(count(&doc, "/summary/status_codes/503"), 20);
    let doc = measure(&[&echo.url("/?size=100000"), "--http2", "-n", "10"]);
    assert!(count(&doc, "/summary/bytes_received") > 1_000_000);
    let doc = measure(&[
        &echo.url("/up"),
        "--http2",
        "-m",
        "POST",
        "--body-size",
        "70000",
        "-n",
        "10",
    ]);
    assert_eq!(count(&doc, "/summary/ok"), 10);
    assert!(count(&doc, "/summary/bytes_sent") > 700_000);
    let doc = measure(&[&echo.url("/?burn=200us"), "--http2", "-n", "20"]);
    assert!(
        count(&doc, "/latency_ns/p50") >= 200_000,
        "{}",
        doc["latency_ns"]
    );
    let doc = measure(&[&echo.url("/?depth=1"), "--http2", "-n", "5"]);
    assert_eq!(
        count(&doc, "/summary/status_codes/400"),
        5,
        "depth is HTTP/1.1 only"
    );
}

#[test]
fn http2_usage_errors() {
    for args in [
        vec![
            "http",
            "http://127.0.0.1:9/",
            "--streams-per-connection",
            "4",
        ],
        vec!["http", "http://127.0.0.1:9/x", "--grpc-message-hex", "00"],
        vec!["http", "http://127.0.0.1:9/", "--grpc"],
        vec!["http", "tcp://127.0.0.1:9", "--http2"],
        vec![
            "http",
            "http://127.0.0.1:9/",
            "--http2",
            "--new-connection-per-request",
        ],
        vec![
            "http",
            "http://127.0.0.1:9/a.B/C",
            "--grpc",
            "--body-size",
            "4",
        ],
    ] {
        let r = run(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
    }
}

#[test]
fn a_request_past_its_timeout_is_reset_and_counted() {
    let echo = Echo::start(&[]);
    let doc = measure(&[
        &echo.url("/?delay=5s"),
        "--http2",
        "--timeout",
        "200ms",
        "-d",
        "500ms",
        "-w",
        "0",
        "--streams-per-connection",
        "2",
    ]);
    assert_eq!(count(&doc, "/summary/ok"), 0);
    let timeouts = count(&doc, "/summary/errors/timeout");
    assert!((4..=8).contains(&timeouts), "{timeouts}");
    assert_eq!(
        count(&doc, "/summary/reconnects"),
        0,
        "the stream is reset (CANCEL), the connection kept"
    );
}
