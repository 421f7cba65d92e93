//! No verdict without data: targets that never answer or vanish mid-round.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_schema_valid, run, Echo};

fn num(v: &serde_json::Value, path: &str) -> f64 {
    let mut cur = v;
    for key in path.split('.') {
        cur = &cur[key];
    }
    cur.as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number: {cur}"))
}

fn error_total(doc: &serde_json::Value) -> f64 {
    doc["summary"]["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum()
}

#[test]
fn never_answering_target_closed_loop_gives_censored_samples() {
    let echo = Echo::start(&[]);
    let started = Instant::now();
    let r = run(&[
        "http",
        &echo.url("/?delay=10s"),
        "-c",
        "4",
        "-t",
        "2",
        "-d",
        "1s",
        "-w",
        "500ms",
        "--timeout",
        "3s",
        "--json",
    ]);
    let took = started.elapsed();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_schema_valid(&doc);
    assert_eq!(num(&doc, "summary.requests"), 0.0);
    assert_eq!(num(&doc, "summary.ok"), 0.0);
    assert_eq!(num(&doc, "summary.censored"), 4.0);
    assert_eq!(error_total(&doc), 0.0, "nothing of the window failed");
    assert_eq!(num(&doc, "latency_ns.count"), 4.0);
    // Sent at the start of the warmup, censored at the end of the window: ~1.5 s old.
    assert!(
        num(&doc, "latency_ns.min") >= 1.45e9,
        "{}",
        doc["latency_ns"]
    );
    assert!(num(&doc, "latency_ns.max") < 1.6e9, "{}", doc["latency_ns"]);
    assert_eq!(num(&doc, "service_time_ns.count"), 0.0, "never served");
    assert!(took < Duration::from_millis(2_500), "not awaited: {took:?}");
}

#[test]
fn never_answering_target_open_loop_censors_from_the_intended_time() {
    let echo = Echo::start(&[]);
    // 20 rps: 10 requests due in the 500 ms warmup (2 sent, 8 queued), 20 in the window.
    let r = run(&[
        "http",
        &echo.url("/?delay=10s"),
        "-r",
        "20",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "1s",
        "-w",
        "500ms",
        "--timeout",
        "1600ms",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_schema_valid(&doc);
    assert_eq!(num(&doc, "summary.censored"), 10.0);
    assert_eq!(num(&doc, "latency_ns.count"), 10.0);
    // Due at 0, 50, …, 450 ms; censored at 1.5 s: ages 1.05 … 1.5 s.
    assert!(
        num(&doc, "latency_ns.min") >= 1.0e9,
        "{}",
        doc["latency_ns"]
    );
    assert!(num(&doc, "latency_ns.max") < 1.6e9, "{}", doc["latency_ns"]);
    assert_eq!(num(&doc, "service_time_ns.count"), 0.0);
    // The window's own requests still end as exactly one response or error each.
    assert_eq!(num(&doc, "summary.scheduled"), 20.0);
    assert_eq!(num(&doc, "summary.requests") + error_total(&doc), 20.0);
    assert_eq!(num(&doc, "summary.requests"), 0.0);
}

#[test]
fn answering_target_has_nothing_censored() {
    let echo = Echo::start(&[]);
    let r = run(&[
        "http",
        &echo.url("/?delay=5ms"),
        "-c",
        "2",
        "-d",
        "300ms",
        "-w",
        "200ms",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(num(&doc, "summary.censored"), 0.0);
    assert_eq!(num(&doc, "latency_ns.count"), num(&doc, "summary.ok"));
}

/// Start the driver in the background against `url` with `extra` flags.
fn spawn_driver(url: &str, extra: &[&str]) -> std::process::Child {
    Command::new(common::binary())
        .args(["http", url, "-c", "2", "-t", "1", "-w", "200ms", "--json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn driver")
}

/// Wait at most `limit` for `child`; kill it and panic when it takes longer.
fn wait_bounded(mut child: std::process::Child, limit: Duration) -> std::process::Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "driver still running after {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn assert_vanished(extra: &[&str]) {
    let echo = Echo::start(&[]);
    let child = spawn_driver(&echo.url("/"), extra);
    std::thread::sleep(Duration::from_millis(700));
    drop(echo); // SIGKILL: the port now refuses connections
    let killed = Instant::now();
    let out = wait_bounded(child, Duration::from_secs(10));
    let after_kill = killed.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(out.stdout.is_empty(), "no document for a lost round");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let line = stderr.trim();
    let rest = line
        .strip_prefix("netperf-driver: target vanished mid-round: ")
        .unwrap_or_else(|| panic!("{line}"));
    let (count, rest) = rest.split_once(" connect failures in ").expect(line);
    assert!(count.parse::<u64>().unwrap() >= 2, "{line}");
    assert!(
        rest.starts_with("1.0s, ") || rest.starts_with("1.1s, "),
        "{line}"
    );
    assert!(rest.ends_with("last: Connection refused"), "{line}");
    assert!(
        after_kill < Duration::from_millis(2_000),
        "the round ended {after_kill:?} after the target vanished"
    );
}

#[test]
fn target_vanishing_mid_round_closed_loop_exits_5() {
    assert_vanished(&["-d", "20s"]);
}

#[test]
fn target_vanishing_mid_round_open_loop_exits_5() {
    assert_vanished(&["-d", "20s", "-r", "200"]);
}

#[test]
fn a_short_outage_is_counted_not_fatal() {
    let port = common::free_port();
    let listen = format!("127.0.0.1:{port}");
    let echo = Echo::start_on(&listen, &[]);
    let child = spawn_driver(
        &echo.url("/"),
        &["-d", "2s", "-r", "200", "--timeout", "1s"],
    );
    std::thread::sleep(Duration::from_millis(500));
    drop(echo);
    std::thread::sleep(Duration::from_millis(300));
    let _back = Echo::start_on(&listen, &[]);
    let out = wait_bounded(child, Duration::from_secs(10));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema_valid(&doc);
    assert!(num(&doc, "summary.errors.connect_refused") > 0.0);
    assert!(
        num(&doc, "summary.ok") > 200.0,
        "measured after the restart"
    );
}
