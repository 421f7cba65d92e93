//! The real `netperf-driver http` against the real echo server (and nginx when installed).

mod common;

use common::{assert_schema_valid, run, Echo};

fn num(v: &serde_json::Value, path: &str) -> f64 {
    let mut cur = v;
    for key in path.split('.') {
        cur = &cur[key];
    }
    cur.as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number: {cur}"))
}

#[test]
fn closed_loop_output_matches_schema_and_counts_keep_alive_sockets() {
    let echo = Echo::start(&[]);
    let r = run(&[
        "http",
        &echo.url("/"),
        "-c",
        "4",
        "-t",
        "2",
        "-d",
        "500ms",
        "-w",
        "200ms",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_schema_valid(&doc);
    assert_eq!(doc["config"]["mode"], "closed");
    assert!(num(&doc, "summary.requests") > 100.0);
    assert_eq!(num(&doc, "summary.requests"), num(&doc, "summary.ok"));
    assert_eq!(
        num(&doc, "summary.sockets_opened"),
        4.0,
        "keep-alive: one socket per connection"
    );
    assert_eq!(num(&doc, "summary.reconnects"), 0.0);
    assert_eq!(num(&doc, "latency_ns.count"), num(&doc, "summary.ok"));
    assert!(doc["schedule_lag_ns"].is_null());
    assert!(doc["connect_time_ns"].is_null());
    let sum: f64 = doc["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["requests"].as_f64().unwrap())
        .sum();
    assert_eq!(
        sum,
        num(&doc, "summary.requests"),
        "intervals add up to the total"
    );
}

#[test]
fn open_loop_sends_exactly_the_timetable_and_measures_the_delay() {
    let echo = Echo::start(&[]);
    let r = run(&[
        "http",
        &echo.url("/?delay=2ms"),
        "-r",
        "400",
        "-c",
        "4",
        "-d",
        "1s",
        "-w",
        "200ms",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_schema_valid(&doc);
    assert_eq!(doc["config"]["mode"], "open");
    assert_eq!(
        num(&doc, "summary.scheduled"),
        400.0,
        "constant schedule: rate x duration"
    );
    assert_eq!(num(&doc, "summary.requests"), 400.0);
    assert!(num(&doc, "latency_ns.p50") >= 2_000_000.0);
    assert!(num(&doc, "service_time_ns.p50") >= 2_000_000.0);
    assert!(num(&doc, "latency_ns.p50") >= num(&doc, "service_time_ns.p50"));
    assert_eq!(num(&doc, "schedule_lag_ns.count"), 400.0);
    assert!((num(&doc, "client.achieved_ratio") - 1.0).abs() < 1e-9);
}

#[test]
fn poisson_arrivals_are_accepted() {
    let echo = Echo::start(&[]);
    let r = run(&[
        "http",
        &echo.url("/"),
        "-r",
        "500",
        "--arrival",
        "poisson",
        "-c",
        "2",
        "-d",
        "1s",
        "-w",
        "0",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["config"]["arrival"], "poisson");
    let n = num(&doc, "summary.scheduled");
    assert!((350.0..650.0).contains(&n), "poisson count {n}");
}

#[test]
fn non_2xx_are_counted_apart_from_latency() {
    let echo = Echo::start(&[]);
    let r = run(&[
        "http",
        &echo.url("/?status=503"),
        "-c",
        "2",
        "-d",
        "300ms",
        "-w",
        "0",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let n = num(&doc, "summary.requests");
    assert!(n > 10.0);
    assert_eq!(num(&doc, "summary.non_2xx"), n);
    assert_eq!(num(&doc, "summary.ok"), 0.0);
    assert_eq!(num(&doc, "summary.status_codes.503"), n);
    assert_eq!(num(&doc, "latency_ns.count"), 0.0, "latency holds 2xx only");
}

#[test]
fn new_connection_per_request_opens_a_socket_per_request() {
    let echo = Echo::start(&[]);
    let r = run(&[
        "http",
        &echo.url("/"),
        "-c",
        "2",
        "-d",
        "300ms",
        "-w",
        "0",
        "--new-connection-per-request",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_schema_valid(&doc);
    let requests = num(&doc, "summary.requests");
    assert!(requests > 10.0);
    assert!(num(&doc, "summary.sockets_opened") >= requests);
    assert_eq!(num(&doc, "connect_time_ns.count"), requests);
}

#[test]
fn server_closing_connections_shows_up_as_reconnects() {
    let echo = Echo::start(&[]);
    let r = run(&[
        "http",
        &echo.url("/?close=1"),
        "-c",
        "2",
        "-d",
        "300ms",
        "-w",
        "0",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let requests = num(&doc, "summary.requests");
    assert!(requests > 10.0);
    assert!(
        num(&doc, "summary.reconnects") >= requests - 2.0,
        "every close forces a reconnect"
    );
    assert_eq!(num(&doc, "summary.errors.read_error"), 0.0);
}

#[test]
fn text_output_without_json() {
    let echo = Echo::start(&[]);
    let r = run(&["http", &echo.url("/"), "-d", "200ms", "-w", "0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("closed loop"), "{}", r.stdout);
    assert!(r.stdout.contains("latency"), "{}", r.stdout);
}

#[test]
fn output_file_gets_the_document() {
    let echo = Echo::start(&[]);
    let path =
        std::env::temp_dir().join(format!("netperf-driver-test-{}.json", std::process::id()));
    let p = path.to_str().unwrap();
    let r = run(&["http", &echo.url("/"), "-d", "200ms", "-w", "0", "-o", p]);
    let text = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&text.unwrap()).unwrap();
    assert_schema_valid(&doc);
}

#[test]
fn refused_target_exits_3_with_one_line() {
    let port = common::free_port();
    let r = run(&["http", &format!("http://127.0.0.1:{port}/"), "-d", "1s"]);
    assert_eq!(r.code, 3);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.starts_with(&format!(
            "netperf-driver: cannot connect to 127.0.0.1:{port}: "
        )),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty());
}

#[test]
fn bad_flags_and_urls_exit_2_with_one_line() {
    for args in [
        vec!["http", "ftp://x/"],
        vec!["http", "http://127.0.0.1:1/", "--rate", "-5"],
        vec!["http", "http://127.0.0.1:1/", "--duration", "soon"],
        vec!["http", "http://127.0.0.1:1/", "--header", "no-colon"],
        vec!["http"],
        vec!["frobnicate"],
    ] {
        let r = run(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
        assert!(r.stderr.starts_with("netperf-driver: "), "{}", r.stderr);
    }
}

#[test]
fn sigterm_during_a_run_exits_4() {
    let echo = Echo::start(&[]);
    let child = std::process::Command::new(common::binary())
        .args(["http", &echo.url("/"), "-d", "20s", "-w", "0", "-r", "100"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "netperf-driver: interrupted"
    );
}

/// nginx on loopback with a temporary config; `None` when nginx is not installed.
struct Nginx {
    child: std::process::Child,
    dir: std::path::PathBuf,
    port: u16,
}

impl Nginx {
    fn start(keepalive_requests: u32) -> Option<Nginx> {
        let bin = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())?;
        let port = common::free_port();
        let dir = std::env::temp_dir().join(format!("netperf-nginx-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display();
        let conf = format!(
            "worker_processes 1; daemon off; pid {d}/nginx.pid; error_log {d}/error.log;\n\
             events {{ worker_connections 1024; }}\n\
             http {{ access_log off; client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};\n\
             uwsgi_temp_path {d}; scgi_temp_path {d}; keepalive_requests {keepalive_requests};\n\
             server {{ listen 127.0.0.1:{port}; location / {{ return 200 \"ok\\n\"; }} }} }}\n"
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let child = std::process::Command::new(bin)
            .args([
                "-c",
                dir.join("nginx.conf").to_str().unwrap(),
                "-p",
                dir.to_str().unwrap(),
                "-e",
                dir.join("error.log").to_str().unwrap(),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        let nginx = Nginx { child, dir, port };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "nginx did not start");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(nginx)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn nginx_keep_alive_and_its_keepalive_requests_limit() {
    let Some(nginx) = Nginx::start(50) else {
        eprintln!("skipped: nginx not installed");
        return;
    };
    let url = format!("http://127.0.0.1:{}/", nginx.port);
    let r = run(&["http", &url, "-c", "2", "-d", "500ms", "-w", "0", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_schema_valid(&doc);
    let requests = num(&doc, "summary.requests");
    assert!(requests > 200.0, "{requests}");
    assert_eq!(
        num(&doc, "summary.errors.read_error") + num(&doc, "summary.errors.reset"),
        0.0
    );
    // nginx closes every connection after 50 requests: about requests/50 reconnects.
    let reconnects = num(&doc, "summary.reconnects");
    assert!(
        reconnects >= (requests / 50.0).floor() - 2.0,
        "{reconnects} reconnects for {requests} requests"
    );
}
