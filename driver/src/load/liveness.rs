//! Is the target still there? A round whose target stops accepting connections ends early
//! with exit 5 instead of counting refused connects until the window is over.
//!
//! Every worker publishes when it last saw the target alive: a connect that succeeded or a
//! complete response (any status). A worker whose connect attempts have all failed since
//! time T, while no worker saw the target alive after T, declares the target vanished once
//! T lies [`VANISH_AFTER_NS`] in the past. Occasional failures (a refused connect now and
//! then, a short restart of the target) stay errors of the round, as before.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use super::stats::ErrorKind;

/// How long every connect attempt must fail, with no sign of life, before the round ends.
pub const VANISH_AFTER_NS: u64 = 1_000_000_000;
/// A worker publishes its last sign of life at most this often (staleness is harmless
/// next to [`VANISH_AFTER_NS`] and it keeps the shared cache line quiet under load).
const PUBLISH_EVERY_NS: u64 = 10_000_000;

/// A failed connect: how it is counted, and the OS error when there was one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectError {
    /// Error kind counted in the round.
    pub kind: ErrorKind,
    /// `errno` of the failure (none for our own connect timeout).
    pub errno: Option<i32>,
}

impl ConnectError {
    /// From an I/O error of connect.
    pub fn from_io(e: &std::io::Error) -> Self {
        Self {
            kind: ErrorKind::from_connect(e),
            errno: e.raw_os_error(),
        }
    }

    /// Without an OS error (our timeout, a failed registration).
    pub fn of_kind(kind: ErrorKind) -> Self {
        Self { kind, errno: None }
    }

    /// Short description, e.g. `Connection refused`.
    pub fn describe(&self, timeout_ns: u64) -> String {
        match (self.errno, self.kind) {
            (Some(errno), _) => {
                let text = std::io::Error::from_raw_os_error(errno).to_string();
                match text.rfind(" (os error ") {
                    Some(cut) => text[..cut].to_string(),
                    None => text,
                }
            }
            (None, ErrorKind::ConnectTimeout) => {
                format!("no connection within {}s", timeout_ns as f64 / 1e9)
            }
            (None, _) => "connect failed".to_string(),
        }
    }
}

/// Shared by all workers of a run.
#[derive(Debug)]
pub struct Liveness {
    last_alive_ns: AtomicU64,
    lost: AtomicBool,
    message: Mutex<Option<String>>,
}

impl Liveness {
    /// The target was reachable at `start_ns` (the pre-flight connects succeeded).
    pub fn new(start_ns: u64) -> Self {
        Self {
            last_alive_ns: AtomicU64::new(start_ns),
            lost: AtomicBool::new(false),
            message: Mutex::new(None),
        }
    }

    /// Latest sign of life any worker published.
    pub fn last_alive_ns(&self) -> u64 {
        self.last_alive_ns.load(Ordering::Relaxed)
    }

    fn publish_alive(&self, at_ns: u64) {
        self.last_alive_ns.fetch_max(at_ns, Ordering::Relaxed);
    }

    /// Record that the target vanished (the first message wins); every worker stops.
    pub fn declare_lost(&self, message: String) {
        let mut slot = self.message.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(message);
        }
        self.lost.store(true, Ordering::Relaxed);
    }

    /// True once a worker declared the target vanished.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    /// Why the target counts as vanished, if it does.
    pub fn lost_message(&self) -> Option<String> {
        self.message
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// A run of failed connects with no sign of life in between.
#[derive(Debug, Clone, Copy)]
struct FailRun {
    since_ns: u64,
    failures: u64,
    last: ConnectError,
}

/// One worker's view: its own last sign of life and its current run of failed connects.
#[derive(Debug, Default)]
pub struct Watch {
    last_alive_ns: u64,
    published_ns: u64,
    failing: Option<FailRun>,
}

impl Watch {
    /// The target answered or accepted a connection at `now_ns`.
    #[inline]
    pub fn alive(&mut self, now_ns: u64, shared: &Liveness) {
        self.last_alive_ns = now_ns;
        self.failing = None;
        if now_ns >= self.published_ns + PUBLISH_EVERY_NS {
            shared.publish_alive(now_ns);
            self.published_ns = now_ns;
        }
    }

    /// A connect attempt started at `attempt_started_ns` failed.
    pub fn connect_failed(&mut self, attempt_started_ns: u64, error: ConnectError) {
        match &mut self.failing {
            Some(run) => {
                run.failures += 1;
                run.last = error;
            }
            None => {
                self.failing = Some(FailRun {
                    since_ns: attempt_started_ns.max(self.last_alive_ns),
                    failures: 1,
                    last: error,
                })
            }
        }
    }

    /// The message to end the round with, once the target counts as vanished at `now_ns`.
    pub fn vanished(&mut self, now_ns: u64, shared: &Liveness, timeout_ns: u64) -> Option<String> {
        let run = self.failing?;
        if shared.last_alive_ns().max(self.last_alive_ns) > run.since_ns {
            self.failing = None; // the target was seen alive since: start counting afresh
            return None;
        }
        let span_ns = now_ns.saturating_sub(run.since_ns);
        if span_ns < VANISH_AFTER_NS {
            return None;
        }
        Some(format!(
            "target vanished mid-round: {} connect failures in {:.1}s, last: {}",
            run.failures,
            span_ns as f64 / 1e9,
            run.last.describe(timeout_ns)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn refused() -> ConnectError {
        ConnectError {
            kind: ErrorKind::ConnectRefused,
            errno: Some(libc::ECONNREFUSED),
        }
    }

    #[test]
    fn a_second_of_failed_connects_without_life_is_a_vanished_target() {
        let shared = Liveness::new(0);
        let mut w = Watch::default();
        w.alive(100 * MS, &shared);
        for t in (200..1_200).step_by(10) {
            w.connect_failed(t * MS, refused());
            assert_eq!(w.vanished(t * MS, &shared, 5_000 * MS), None, "at {t} ms");
        }
        w.connect_failed(1_200 * MS, refused());
        let msg = w.vanished(1_200 * MS, &shared, 5_000 * MS).unwrap();
        assert_eq!(
            msg,
            "target vanished mid-round: 101 connect failures in 1.0s, last: Connection refused"
        );
    }

    #[test]
    fn life_seen_by_any_worker_resets_the_run() {
        let shared = Liveness::new(0);
        let mut failing = Watch::default();
        let mut serving = Watch::default();
        for t in (0..3_000).step_by(10) {
            failing.connect_failed(t * MS, refused());
            serving.alive(t * MS + 5 * MS, &shared);
            assert_eq!(failing.vanished(t * MS + 6 * MS, &shared, 5_000 * MS), None);
        }
    }

    #[test]
    fn a_short_outage_is_not_a_vanished_target() {
        let shared = Liveness::new(0);
        let mut w = Watch::default();
        for t in (100..900).step_by(10) {
            w.connect_failed(t * MS, refused());
        }
        w.alive(900 * MS, &shared);
        assert_eq!(w.vanished(2_000 * MS, &shared, 5_000 * MS), None);
    }

    #[test]
    fn connect_timeouts_count_from_the_start_of_the_attempt() {
        let shared = Liveness::new(0);
        let mut w = Watch::default();
        let timeout = ConnectError::of_kind(ErrorKind::ConnectTimeout);
        w.connect_failed(500 * MS, timeout);
        let msg = w.vanished(2_500 * MS, &shared, 2_000 * MS).unwrap();
        assert!(
            msg.ends_with("1 connect failures in 2.0s, last: no connection within 2s"),
            "{msg}"
        );
        assert_eq!(
            ConnectError::of_kind(ErrorKind::Other).describe(1),
            "connect failed"
        );
    }

    #[test]
    fn first_message_wins() {
        let shared = Liveness::new(0);
        assert!(!shared.is_lost());
        shared.declare_lost("a".into());
        shared.declare_lost("b".into());
        assert!(shared.is_lost());
        assert_eq!(shared.lost_message().as_deref(), Some("a"));
    }
}
