//! `netperf-driver flamegraph`: a differential flame graph of two folded-stack files.

mod common;

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

use common::binary;

const BASE: &str =
    "nginx;main;handle;parse 400\nnginx;main;handle;respond 300\nnginx;main;log 100\n";
const HEAD: &str = "nginx;main;handle;parse 400\nnginx;main;handle;respond 100\n\
                    nginx;main;handle;regex;pcre2_match 250\nnginx;main;log 100\n";

struct Folder(PathBuf);

impl Folder {
    fn new(name: &str) -> Folder {
        let path =
            std::env::temp_dir().join(format!("netperf-flamegraph-{name}-{}", std::process::id()));
        fs::create_dir_all(&path).unwrap();
        Folder(path)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn flamegraph(args: &[&str]) -> Output {
    Command::new(binary())
        .arg("flamegraph")
        .args(args)
        .output()
        .expect("run netperf-driver flamegraph")
}

/// (hover title, fill) of every frame drawn.
fn frames(svg: &str) -> Vec<(String, String)> {
    svg.split("<g>")
        .skip(1)
        .filter_map(|g| {
            let title = g.split("<title>").nth(1)?.split("</title>").next()?;
            let fill = g.split("fill=\"").nth(1)?.split('"').next()?;
            Some((title.to_string(), fill.to_string()))
        })
        .collect()
}

fn rgb(fill: &str) -> (u8, u8, u8) {
    let inner = fill.trim_start_matches("rgb(").trim_end_matches(')');
    let v: Vec<u8> = inner
        .split(',')
        .map(|p| p.trim().parse().unwrap())
        .collect();
    (v[0], v[1], v[2])
}

fn frame<'a>(found: &'a [(String, String)], name: &str) -> &'a (String, String) {
    found
        .iter()
        .find(|(title, _)| title.starts_with(&format!("{name} (")))
        .unwrap_or_else(|| panic!("no frame {name} in {found:?}"))
}

#[test]
fn head_widths_coloured_by_change_against_base() {
    let dir = Folder::new("colours");
    let base = dir.file("base.folded", BASE);
    let head = dir.file("head.folded", HEAD);
    let out = flamegraph(&[
        "--base",
        &base,
        "--head",
        &head,
        "--title",
        "edge: instructions <= 1.01x base",
        "--subtitle",
        "red grew, blue shrank",
        "--count-name",
        "instructions per 1,000 requests",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = String::from_utf8(out.stdout).unwrap();
    assert!(svg.contains("<svg"), "{svg}");
    assert!(
        svg.contains("edge: instructions &lt;= 1.01x base"),
        "title escaped"
    );
    assert!(svg.contains("red grew, blue shrank"));
    let found = frames(&svg);
    // the widths are head's: 850 in all, pcre2_match 250 of them
    let (title, fill) = frame(&found, "pcre2_match");
    assert!(
        title.contains("250 instructions per 1,000 requests"),
        "{title}"
    );
    let (r, g, b) = rgb(fill);
    assert!(r > g && r > b, "a frame that grew is red: {fill}");
    let (title, fill) = frame(&found, "respond");
    assert!(
        title.contains("100 instructions per 1,000 requests"),
        "{title}"
    );
    let (r, _, b) = rgb(fill);
    assert!(b > r, "a frame that shrank is blue: {fill}");
    let (title, fill) = frame(&found, "parse");
    assert!(title.ends_with("; 0.00%)"), "{title}");
    let (r, g, b) = rgb(fill);
    assert!(r == g && g == b, "an unchanged frame is neutral: {fill}");
    assert!(
        found.iter().any(|(t, _)| t.starts_with("all (850 ")),
        "{found:?}"
    );
}

#[test]
fn the_same_input_draws_the_same_picture() {
    let dir = Folder::new("same");
    let base = dir.file("base.folded", BASE);
    let head = dir.file("head.folded", HEAD);
    let first = flamegraph(&["--base", &base, "--head", &head]);
    let second = flamegraph(&["--base", &base, "--head", &head]);
    assert!(first.status.success());
    assert_eq!(first.stdout, second.stdout);
}

#[test]
fn a_missing_file_is_a_usage_error_naming_it() {
    let dir = Folder::new("missing");
    let base = dir.file("base.folded", BASE);
    let out = flamegraph(&["--base", &base, "--head", "/nonexistent/head.folded"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read /nonexistent/head.folded"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_head_without_counts_is_an_error_not_a_picture() {
    let dir = Folder::new("empty");
    let base = dir.file("base.folded", BASE);
    let head = dir.file("head.folded", "");
    let out = flamegraph(&["--base", &base, "--head", &head]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no stack with a positive count"), "{err}");
}
