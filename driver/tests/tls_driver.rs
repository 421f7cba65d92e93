//! The driver against the echo server over TLS on loopback: versions, resumption, mutual
//! TLS, query controls, and the errors that name their cause.

mod common;

use std::path::Path;

use common::pki::{https, Pki};
use common::{assert_schema_valid, count, run, Echo};

/// `common::measure` within 5 s.
fn measure(args: &[&str]) -> serde_json::Value {
    common::measure(&[args, &["-d", "5s"]].concat())
}

#[test]
fn keep_alive_over_tls_13_and_12() {
    let pki = Pki::new("versions");
    let echo = pki.echo(&[]);
    let ca = pki.path("ca.pem");
    for (version, name, suite) in [
        ("1.3", "TLSv1.3", "TLS13_AES_256_GCM_SHA384"),
        ("1.2", "TLSv1.2", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    ] {
        let url = https(&echo, "/");
        let doc = measure(&[
            &url,
            "--ca",
            &ca,
            "--tls-version",
            version,
            "-c",
            "2",
            "-n",
            "300",
        ]);
        assert_eq!(count(&doc, "/summary/ok"), 300, "{version}");
        assert_eq!(doc["config"]["protocol"], "https");
        let tls = &doc["tls"];
        assert_eq!(tls["version"], name);
        assert_eq!(tls["cipher_suite"], suite);
        assert_eq!(tls["alpn"], "http/1.1");
        assert_eq!(tls["verify"], "ca");
        assert_eq!(tls["server_name"], "127.0.0.1");
        assert_eq!(
            count(&doc, "/tls/handshakes"),
            2,
            "one per keep-alive connection"
        );
        assert_eq!(count(&doc, "/summary/sockets_opened"), 2);
    }
}

#[test]
fn resumption_is_counted_and_can_be_switched_off() {
    let pki = Pki::new("resumption");
    let echo = pki.echo(&[]);
    let ca = pki.path("ca.pem");
    let url = https(&echo, "/");
    for version in ["1.3", "1.2"] {
        let per_request = [
            url.as_str(),
            "--ca",
            &ca,
            "--tls-version",
            version,
            "--new-connection-per-request",
            "-n",
            "100",
        ];
        let on = measure(&[&per_request[..], &["--tls-resumption", "on"]].concat());
        let handshakes = count(&on, "/tls/handshakes");
        assert_eq!(
            handshakes,
            count(&on, "/summary/sockets_opened"),
            "{version}"
        );
        assert_eq!(count(&on, "/summary/ok"), 100);
        assert!(
            count(&on, "/tls/resumed") >= handshakes - 2,
            "{version}: all but the first handshakes resume: {}",
            on["tls"]
        );
        assert_eq!(count(&on, "/tls/handshake_time_ns/count"), 100);
        let off = measure(&[&per_request[..], &["--tls-resumption", "off"]].concat());
        assert_eq!(count(&off, "/tls/resumed"), 0, "{version}");
        assert_eq!(
            count(&off, "/tls/handshakes"),
            101,
            "{version}: probe + 100"
        );
        assert_eq!(off["tls"]["resumption"], false);
    }
}

#[test]
fn session_cache_resumes_without_tickets() {
    let pki = Pki::new("notickets");
    let echo = pki.echo(&["--tls-no-tickets"]);
    let ca = pki.path("ca.pem");
    let url = https(&echo, "/");
    let doc = measure(&[
        &url,
        "--ca",
        &ca,
        "--tls-version",
        "1.2",
        "--new-connection-per-request",
        "-n",
        "50",
    ]);
    assert!(
        count(&doc, "/tls/resumed") >= 48,
        "session IDs: {}",
        doc["tls"]
    );
}

#[test]
fn mutual_tls_accepts_a_client_certificate_and_refuses_its_absence() {
    let pki = Pki::new("mtls");
    let client_ca = pki.path("ca.pem");
    let echo = pki.echo(&["--tls-client-ca", &client_ca]);
    let url = https(&echo, "/");
    let (cert, key) = (pki.path("client.pem"), pki.path("client.key"));
    let doc = measure(&[
        &url, "--ca", &client_ca, "--cert", &cert, "--key", &key, "-c", "2", "-n", "100",
    ]);
    assert_eq!(count(&doc, "/summary/ok"), 100);
    assert_eq!(doc["tls"]["client_certificate"], true);
    for version in ["1.3", "1.2"] {
        let r = run(&[
            "http",
            &url,
            "--ca",
            &client_ca,
            "--tls-version",
            version,
            "-d",
            "1s",
        ]);
        assert_eq!(r.code, 6, "{version}: {}", r.stderr);
        assert!(
            r.stderr.contains("requires a client certificate"),
            "{version}: {}",
            r.stderr
        );
    }
}

#[test]
fn certificate_errors_name_the_cause() {
    let pki = Pki::new("certs");
    let echo = pki.echo(&[]);
    let url = https(&echo, "/");
    let other = pki.path("other-ca.pem");
    let r = run(&["http", &url, "--ca", &other, "-d", "1s"]);
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert!(r.stderr.contains("unknown CA"), "{}", r.stderr);
    let ca = pki.path("ca.pem");
    let r = run(&[
        "http",
        &url,
        "--ca",
        &ca,
        "-H",
        "Host: shop.example",
        "-d",
        "1s",
    ]);
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert!(r.stderr.contains("bad name"), "{}", r.stderr);
    // --insecure accepts both, and the Host header is the SNI
    let doc = measure(&[&url, "--insecure", "-H", "Host: shop.example", "-n", "10"]);
    assert_eq!(count(&doc, "/summary/ok"), 10);
    assert_eq!(doc["tls"]["server_name"], "shop.example");
    assert_eq!(doc["tls"]["verify"], "insecure");
}

#[test]
fn https_to_a_cleartext_port_and_http_to_a_tls_port() {
    let plain = Echo::start(&[]);
    let r = run(&[
        "http",
        &format!("https://127.0.0.1:{}/", plain.port),
        "--insecure",
        "-d",
        "1s",
    ]);
    assert_eq!(r.code, 6, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the server did not answer TLS: is the port plain HTTP?"),
        "{}",
        r.stderr
    );
    let pki = Pki::new("mixup");
    let echo = pki.echo(&[]);
    let doc = measure(&[&echo.url("/"), "-n", "5", "-w", "0s"]);
    assert_eq!(count(&doc, "/summary/ok"), 0);
    assert_eq!(
        count(&doc, "/summary/errors/plain_http_to_tls"),
        5,
        "{}",
        doc["summary"]
    );
    let cause = doc["summary"]["error_causes"]["plain_http_to_tls"]
        .as_str()
        .unwrap();
    assert!(cause.contains("is the port HTTPS?"), "{cause}");
    assert!(doc["tls"].is_null());
}

#[test]
fn echo_query_controls_work_over_tls() {
    let pki = Pki::new("controls");
    let echo = pki.echo(&[]);
    let ca = pki.path("ca.pem");
    let big = measure(&[&https(&echo, "/?size=200000"), "--ca", &ca, "-n", "20"]);
    assert_eq!(count(&big, "/summary/ok"), 20);
    assert!(count(&big, "/summary/bytes_received") > 20 * 200_000);
    let status = measure(&[&https(&echo, "/?status=503"), "--ca", &ca, "-n", "10"]);
    assert_eq!(count(&status, "/summary/status_codes/503"), 10);
    let slow = measure(&[
        &https(&echo, "/?delay=2ms&burn=100us"),
        "--ca",
        &ca,
        "-n",
        "10",
    ]);
    assert_eq!(count(&slow, "/summary/ok"), 10);
    assert!(count(&slow, "/latency_ns/min") >= 2_000_000);
    let post = measure(&[
        &https(&echo, "/"),
        "--ca",
        &ca,
        "-m",
        "POST",
        "--body-size",
        "100000",
        "-n",
        "10",
    ]);
    assert_eq!(count(&post, "/summary/ok"), 10);
}

#[test]
fn open_loop_over_tls_keeps_its_schedule() {
    let pki = Pki::new("open");
    let echo = pki.echo(&[]);
    let ca = pki.path("ca.pem");
    let url = https(&echo, "/");
    for extra in [&[][..], &["--new-connection-per-request"][..]] {
        let args = [
            &[
                url.as_str(),
                "--ca",
                &ca,
                "-r",
                "200",
                "-c",
                "8",
                "-w",
                "0.2s",
                // a bound a busy CI runner cannot trip at 200/s (its lag is not what this checks)
                "--max-lag",
                "500ms",
            ][..],
            extra,
        ]
        .concat();
        let mut argv = vec!["http"];
        argv.extend_from_slice(&args);
        argv.extend_from_slice(&["--json", "-t", "1", "-d", "1s"]);
        let r = run(&argv);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let doc = r.json();
        assert_schema_valid(&doc);
        assert_eq!(count(&doc, "/summary/scheduled"), 200, "{extra:?}");
        assert_eq!(count(&doc, "/summary/ok"), 200, "{extra:?}");
        assert_eq!(doc["client"]["saturated"], false, "{}", doc["client"]);
    }
}

#[test]
fn tls_options_need_an_https_url() {
    let r = run(&["http", "http://127.0.0.1:9/", "--insecure"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("needs an https:// URL"), "{}", r.stderr);
    let r = run(&[
        "http",
        "https://127.0.0.1:9/",
        "--ca",
        "/nonexistent/ca.pem",
    ]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("/nonexistent/ca.pem"), "{}", r.stderr);
    let missing = Path::new("/nonexistent/key.pem")
        .to_string_lossy()
        .into_owned();
    let r = run(&[
        "echo",
        "--tls-cert",
        "/nonexistent/cert.pem",
        "--tls-key",
        &missing,
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}
