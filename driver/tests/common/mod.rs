//! Helpers for integration tests: run the real binary, start real echo servers / nginx.
#![allow(dead_code)]

pub mod pki;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Path of the binary under test.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_netperf-driver")
}

/// A running `netperf-driver echo`, killed on drop.
pub struct Echo {
    child: Child,
    /// Bound port.
    pub port: u16,
}

impl Echo {
    /// Start an echo server on an ephemeral loopback port.
    pub fn start(extra: &[&str]) -> Echo {
        Self::start_on("127.0.0.1:0", extra)
    }

    /// Start an echo server on `listen`.
    pub fn start_on(listen: &str, extra: &[&str]) -> Echo {
        let mut child = Command::new(binary())
            .args(["echo", "--listen", listen, "--threads", "1"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn echo");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("read listening line");
        let port = match line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|a| a.rsplit(':').next())
        {
            Some(p) => p.parse().unwrap(),
            None => {
                let _ = child.kill();
                panic!("unexpected first line {line:?}");
            }
        };
        Echo { child, port }
    }

    /// Base URL.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    /// Process id (for SIGSTOP tests).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Output of one driver run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Parse stdout as the JSON document.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("bad JSON ({e}): {}\n{}", self.stdout, self.stderr))
    }
}

/// Run the driver with `args` (bounded by a 60 s wall-clock guard).
pub fn run(args: &[&str]) -> Run {
    let mut child = Command::new(binary())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn driver");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stdout = String::new();
            let mut stderr = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut stdout)
                .unwrap();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            return Run {
                code: status.code().unwrap_or(-1),
                stdout,
                stderr,
            };
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("driver did not finish within 60 s: {args:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Validate a document against driver/schema.json.
pub fn assert_schema_valid(doc: &serde_json::Value) {
    let schema_text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema.json")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&schema_text).unwrap();
    let compiled = jsonschema::JSONSchema::compile(&schema).expect("schema compiles");
    let msgs: Vec<String> = match compiled.validate(doc) {
        Ok(()) => Vec::new(),
        Err(errors) => errors
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect(),
    };
    assert!(
        msgs.is_empty(),
        "output does not match schema.json: {msgs:?}"
    );
}

/// Send raw bytes on `stream` and read one response (head + Content-Length body).
pub fn exchange(stream: &mut TcpStream, request: &str) -> (u16, Vec<(String, String)>, String) {
    stream.write_all(request.as_bytes()).unwrap();
    read_response(stream)
}

/// Read one response with a Content-Length body.
pub fn read_response(stream: &mut TcpStream) -> (u16, Vec<(String, String)>, String) {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).unwrap();
        assert_eq!(
            n,
            1,
            "connection closed before the head ended: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map(|(_, v)| v.parse().unwrap())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).unwrap();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

/// Value of header `name` (lower case).
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A free loopback port (bound then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Run the driver's `http` with `args`, `--json` and one thread; the document (asserting
/// exit 0 and the schema).
pub fn measure(args: &[&str]) -> serde_json::Value {
    let mut argv = vec!["http"];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--json", "-t", "1"]);
    let r = run(&argv);
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    let doc = r.json();
    assert_schema_valid(&doc);
    doc
}

/// The whole number at JSON `pointer` of `doc` (panics naming it when missing).
pub fn count(doc: &serde_json::Value, pointer: &str) -> u64 {
    doc.pointer(pointer)
        .and_then(|v| v.as_u64())
        .unwrap_or_else(|| panic!("{pointer} missing in {doc}"))
}
