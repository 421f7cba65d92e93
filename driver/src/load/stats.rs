//! Per-thread measurement state: histograms, counters, intervals; merged at the end.

use std::collections::BTreeMap;

use super::tls_stats::TlsStats;
use crate::health::CpuTimes;
use crate::hist::{self, IntervalHistogram, LatencyHistogram};

/// Transport error kinds, in the order of the JSON `errors` object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    ConnectRefused = 0,
    ConnectTimeout = 1,
    Timeout = 2,
    Reset = 3,
    ReadError = 4,
    Other = 5,
    /// Open loop: the request never left the client queue (no free connection in time).
    QueueTimeout = 6,
    /// TLS: a certificate was rejected (the server's by us: unknown CA, bad name; or ours,
    /// or its absence, by the server).
    TlsCertificate = 7,
    /// TLS: the handshake failed otherwise (alert, no common version or cipher, closed).
    TlsHandshake = 8,
    /// `https://` to a server that answered in cleartext (a plain HTTP port).
    NotTls = 9,
    /// `http://` to a server that answered with TLS records (an HTTPS port).
    PlainToTls = 10,
    /// HTTP/2 over TLS: the server did not agree on ALPN `h2` (it offers only http/1.1).
    AlpnRefused = 11,
    /// h2c (prior knowledge): the server answered the HTTP/2 preface with HTTP/1.x, or
    /// closed the connection without an HTTP/2 SETTINGS frame.
    H2cRefused = 12,
    /// HTTP/2: the server reset the stream (RST_STREAM).
    RstStream = 13,
    /// HTTP/2: the request failed because the server sent GOAWAY.
    GoAway = 14,
    /// gRPC: a response without a usable grpc-status (or with a malformed message frame).
    GrpcProtocol = 15,
    // gRPC: a non-zero grpc-status; the kind names the code (see [`ErrorKind::grpc`]).
    GrpcCancelled = 16,
    GrpcUnknown = 17,
    GrpcInvalidArgument = 18,
    GrpcDeadlineExceeded = 19,
    GrpcNotFound = 20,
    GrpcAlreadyExists = 21,
    GrpcPermissionDenied = 22,
    GrpcResourceExhausted = 23,
    GrpcFailedPrecondition = 24,
    GrpcAborted = 25,
    GrpcOutOfRange = 26,
    GrpcUnimplemented = 27,
    GrpcInternal = 28,
    GrpcUnavailable = 29,
    GrpcDataLoss = 30,
    GrpcUnauthenticated = 31,
}

/// Number of error kinds.
pub const ERROR_KINDS: usize = 32;

/// The first gRPC status kind: `grpc_status_1_cancelled`.
pub const FIRST_GRPC_KIND: usize = ErrorKind::GrpcCancelled as usize;

/// gRPC status codes 1..=16 as error kinds, in order.
const GRPC_KINDS: [ErrorKind; 16] = [
    ErrorKind::GrpcCancelled,
    ErrorKind::GrpcUnknown,
    ErrorKind::GrpcInvalidArgument,
    ErrorKind::GrpcDeadlineExceeded,
    ErrorKind::GrpcNotFound,
    ErrorKind::GrpcAlreadyExists,
    ErrorKind::GrpcPermissionDenied,
    ErrorKind::GrpcResourceExhausted,
    ErrorKind::GrpcFailedPrecondition,
    ErrorKind::GrpcAborted,
    ErrorKind::GrpcOutOfRange,
    ErrorKind::GrpcUnimplemented,
    ErrorKind::GrpcInternal,
    ErrorKind::GrpcUnavailable,
    ErrorKind::GrpcDataLoss,
    ErrorKind::GrpcUnauthenticated,
];

/// JSON names of the error kinds, indexed by `ErrorKind as usize`.
pub const ERROR_NAMES: [&str; ERROR_KINDS] = [
    "connect_refused",
    "connect_timeout",
    "timeout",
    "reset",
    "read_error",
    "other",
    "queue_timeout",
    "tls_certificate",
    "tls_handshake",
    "not_tls",
    "plain_http_to_tls",
    "alpn_refused",
    "h2c_refused",
    "rst_stream",
    "goaway",
    "grpc_protocol",
    "grpc_status_1_cancelled",
    "grpc_status_2_unknown",
    "grpc_status_3_invalid_argument",
    "grpc_status_4_deadline_exceeded",
    "grpc_status_5_not_found",
    "grpc_status_6_already_exists",
    "grpc_status_7_permission_denied",
    "grpc_status_8_resource_exhausted",
    "grpc_status_9_failed_precondition",
    "grpc_status_10_aborted",
    "grpc_status_11_out_of_range",
    "grpc_status_12_unimplemented",
    "grpc_status_13_internal",
    "grpc_status_14_unavailable",
    "grpc_status_15_data_loss",
    "grpc_status_16_unauthenticated",
];

impl ErrorKind {
    /// The kind of a non-zero gRPC status (codes above 16 count as 2, UNKNOWN, as gRPC
    /// says); None for 0 (OK).
    pub fn grpc(status: u32) -> Option<Self> {
        match status {
            0 => None,
            1..=16 => Some(GRPC_KINDS[status as usize - 1]),
            _ => Some(ErrorKind::GrpcUnknown),
        }
    }

    /// Classify an I/O error from connect.
    pub fn from_connect(e: &std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ECONNREFUSED) => ErrorKind::ConnectRefused,
            Some(libc::ETIMEDOUT) => ErrorKind::ConnectTimeout,
            _ => ErrorKind::Other,
        }
    }

    /// Classify an I/O error from read or write on an established connection.
    pub fn from_io(e: &std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ECONNRESET) | Some(libc::EPIPE) | Some(libc::ECONNABORTED) => {
                ErrorKind::Reset
            }
            Some(libc::ETIMEDOUT) => ErrorKind::Timeout,
            _ => ErrorKind::ReadError,
        }
    }
}

/// Counters and a compact histogram for one interval.
#[derive(Debug, Clone)]
pub struct IntervalAcc {
    /// Responses to requests intended (open) or started (closed) in this interval.
    pub requests: u64,
    /// Responses (any request) completed during this interval.
    pub completed: u64,
    pub ok: u64,
    pub errors: u64,
    pub latency: IntervalHistogram,
}

impl IntervalAcc {
    fn new() -> Self {
        Self {
            requests: 0,
            completed: 0,
            ok: 0,
            errors: 0,
            latency: hist::new_interval(),
        }
    }
}

/// Everything one worker thread measured.
#[derive(Debug, Clone)]
pub struct ThreadStats {
    /// Latency of 2xx responses (censored samples are kept apart, see [`Self::censor`]).
    pub latency: LatencyHistogram,
    /// Requests still unanswered when the window ended, at their age then (a lower bound
    /// of their latency).
    pub censored_latency: LatencyHistogram,
    pub service: LatencyHistogram,
    pub lag: LatencyHistogram,
    pub connect: LatencyHistogram,
    pub status: Vec<u64>,
    pub requests: u64,
    pub ok: u64,
    pub non_2xx: u64,
    /// Requests censored at the end of the window (see [`Self::censor`]).
    pub censored: u64,
    pub errors: [u64; ERROR_KINDS],
    /// Responses (any status, warmup requests included) completed inside the window.
    pub completed_in_window: u64,
    /// Responses (any status) completed over the whole run: warmup, window and drain.
    pub completed_total: u64,
    pub sockets_opened: u64,
    pub reconnects: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub scheduled: u64,
    pub queued: u64,
    pub intervals: Vec<IntervalAcc>,
    pub cpu: CpuTimes,
    pub wall_ns: u64,
    /// TLS handshakes and what was negotiated (`https://` only).
    pub tls: TlsStats,
    /// The first message naming the cause of an error, per error kind that has one (TLS).
    pub causes: BTreeMap<&'static str, String>,
    window_start_ns: u64,
    interval_ns: u64,
    max_intervals: usize,
    open_loop: bool,
}

impl ThreadStats {
    /// Empty stats for a window starting at `window_start_ns` with `intervals` buckets.
    pub fn new(window_start_ns: u64, interval_ns: u64, intervals: usize, open_loop: bool) -> Self {
        Self {
            latency: hist::new_latency(),
            censored_latency: hist::new_latency(),
            service: hist::new_latency(),
            lag: hist::new_latency(),
            connect: hist::new_latency(),
            status: vec![0; 1000],
            requests: 0,
            ok: 0,
            non_2xx: 0,
            censored: 0,
            errors: [0; ERROR_KINDS],
            completed_in_window: 0,
            completed_total: 0,
            sockets_opened: 0,
            reconnects: 0,
            bytes_sent: 0,
            bytes_received: 0,
            scheduled: 0,
            queued: 0,
            intervals: Vec::new(),
            cpu: CpuTimes::default(),
            wall_ns: 0,
            tls: TlsStats::default(),
            causes: BTreeMap::new(),
            window_start_ns,
            interval_ns: interval_ns.max(1),
            max_intervals: intervals.max(1),
            open_loop,
        }
    }

    fn interval(&mut self, at_ns: u64) -> &mut IntervalAcc {
        let i = ((at_ns.saturating_sub(self.window_start_ns)) / self.interval_ns) as usize;
        let i = i.min(self.max_intervals - 1);
        while self.intervals.len() <= i {
            self.intervals.push(IntervalAcc::new());
        }
        &mut self.intervals[i]
    }

    /// A response for a request counted in the window. `start_ns` is the intended send
    /// time (open loop) or the actual send time (closed loop).
    #[inline]
    pub fn response(&mut self, start_ns: u64, sent_ns: u64, done_ns: u64, status: u16) {
        self.requests += 1;
        self.status[(status as usize).min(999)] += 1;
        let latency = done_ns.saturating_sub(start_ns);
        let ok = (200..300).contains(&status);
        if ok {
            self.ok += 1;
            hist::record(&mut self.latency, latency);
            if self.open_loop {
                hist::record(&mut self.service, done_ns.saturating_sub(sent_ns));
            }
        } else {
            self.non_2xx += 1;
        }
        let acc = self.interval(start_ns);
        acc.requests += 1;
        if ok {
            acc.ok += 1;
            hist::record_interval(&mut acc.latency, latency);
        } else {
            acc.errors += 1;
        }
    }

    /// A response (to any request) completed at `done_ns`, which lies inside the window.
    #[inline]
    pub fn completion(&mut self, done_ns: u64) {
        self.completed_in_window += 1;
        self.interval(done_ns).completed += 1;
    }

    /// A request still unanswered when the window ended at `window_end_ns`, which no
    /// response or error of the window will account for (it started before the window):
    /// its latency is at least its age then, measured from `start_ns` as in
    /// [`Self::response`]. Recorded as a latency sample (not service time: it was never
    /// served) and counted in `censored`, not in `requests`/`ok` (no response came).
    pub fn censor(&mut self, start_ns: u64, window_end_ns: u64) {
        self.censored += 1;
        hist::record(
            &mut self.censored_latency,
            window_end_ns.saturating_sub(start_ns),
        );
    }

    /// Latency of the round: 2xx responses plus censored samples.
    pub fn latency_with_censored(&self) -> LatencyHistogram {
        let mut all = self.latency.clone();
        if !self.censored_latency.is_empty() {
            hist::merge(&mut all, &self.censored_latency);
        }
        all
    }

    /// A transport error attributed to time `at_ns` in the window.
    pub fn error(&mut self, kind: ErrorKind, at_ns: u64) {
        self.errors[kind as usize] += 1;
        self.interval(at_ns).errors += 1;
    }

    /// Remember why an error of `kind` happened (the first message per kind is kept).
    pub fn cause(&mut self, kind: ErrorKind, message: &str) {
        self.causes
            .entry(ERROR_NAMES[kind as usize])
            .or_insert_with(|| message.to_string());
    }

    /// Closed loop: service time equals latency, so copy instead of recording twice.
    pub fn finish(&mut self) {
        if !self.open_loop {
            self.service = self.latency.clone();
        }
    }

    /// Add `other` into `self`.
    pub fn merge(&mut self, other: &ThreadStats) {
        hist::merge(&mut self.latency, &other.latency);
        hist::merge(&mut self.censored_latency, &other.censored_latency);
        hist::merge(&mut self.service, &other.service);
        hist::merge(&mut self.lag, &other.lag);
        hist::merge(&mut self.connect, &other.connect);
        for (a, b) in self.status.iter_mut().zip(&other.status) {
            *a += b;
        }
        for (a, b) in self.errors.iter_mut().zip(&other.errors) {
            *a += b;
        }
        self.requests += other.requests;
        self.ok += other.ok;
        self.non_2xx += other.non_2xx;
        self.censored += other.censored;
        self.completed_in_window += other.completed_in_window;
        self.completed_total += other.completed_total;
        self.sockets_opened += other.sockets_opened;
        self.reconnects += other.reconnects;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.scheduled += other.scheduled;
        self.queued += other.queued;
        while self.intervals.len() < other.intervals.len() {
            self.intervals.push(IntervalAcc::new());
        }
        for (a, b) in self.intervals.iter_mut().zip(&other.intervals) {
            a.requests += b.requests;
            a.completed += b.completed;
            a.ok += b.ok;
            a.errors += b.errors;
            a.latency.add(&b.latency).expect("same bounds");
        }
        self.cpu = CpuTimes {
            user_s: self.cpu.user_s + other.cpu.user_s,
            sys_s: self.cpu.sys_s + other.cpu.sys_s,
        };
        self.wall_ns = self.wall_ns.max(other.wall_ns);
        self.tls.merge(&other.tls);
        for (kind, message) in &other.causes {
            self.causes.entry(kind).or_insert_with(|| message.clone());
        }
    }

    /// Total transport errors.
    pub fn error_total(&self) -> u64 {
        self.errors.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_split_by_status_and_interval() {
        let mut s = ThreadStats::new(1_000_000_000, 1_000_000_000, 3, true);
        s.response(1_000_000_000, 1_000_000_100, 1_000_050_000, 200);
        s.response(2_500_000_000, 2_500_000_000, 2_500_100_000, 503);
        s.error(ErrorKind::Reset, 2_600_000_000);
        assert_eq!((s.requests, s.ok, s.non_2xx, s.error_total()), (2, 1, 1, 1));
        assert_eq!(s.latency.len(), 1);
        assert_eq!(s.service.len(), 1);
        assert_eq!(s.intervals.len(), 2);
        assert_eq!((s.intervals[1].requests, s.intervals[1].errors), (1, 2));
        assert_eq!(s.status[503], 1);
        assert_eq!(
            s.completed_in_window, 0,
            "completions are counted by the worker"
        );
    }

    #[test]
    fn completions_are_bucketed_by_completion_time() {
        let mut a = ThreadStats::new(1_000, 1_000, 3, true);
        a.completion(1_500);
        a.completion(3_999);
        a.completion(9_999); // past the last bucket: clamped into it
        let mut b = ThreadStats::new(1_000, 1_000, 3, true);
        b.completion(1_000);
        b.error(ErrorKind::QueueTimeout, 2_000);
        a.merge(&b);
        assert_eq!(a.completed_in_window, 4);
        let per: Vec<u64> = a.intervals.iter().map(|i| i.completed).collect();
        assert_eq!(per, vec![2, 0, 2]);
        assert_eq!(a.errors[ErrorKind::QueueTimeout as usize], 1);
        assert_eq!(
            ERROR_NAMES[ErrorKind::QueueTimeout as usize],
            "queue_timeout"
        );
    }

    #[test]
    fn censored_samples_are_latency_only() {
        let mut a = ThreadStats::new(1_000, 1_000, 3, false);
        a.response(1_000, 1_000, 1_500, 200);
        a.censor(100, 1_100);
        let mut b = ThreadStats::new(1_000, 1_000, 3, false);
        b.censor(0, 1_900);
        a.merge(&b);
        a.finish();
        assert_eq!((a.requests, a.ok, a.censored), (1, 1, 2));
        assert_eq!(a.latency.len(), 1, "responses only");
        assert_eq!(a.service.len(), 1, "censored requests were never served");
        let all = a.latency_with_censored();
        assert_eq!(all.len(), 3);
        assert_eq!(all.max(), 1_900, "age at the end of the window");
        assert_eq!(all.min(), 500);
        assert_eq!(a.intervals.iter().map(|i| i.requests).sum::<u64>(), 1);
    }

    #[test]
    fn grpc_statuses_are_named_kinds() {
        assert_eq!(ErrorKind::grpc(0), None);
        let k = ErrorKind::grpc(12).unwrap();
        assert_eq!(ERROR_NAMES[k as usize], "grpc_status_12_unimplemented");
        assert_eq!(
            ERROR_NAMES[ErrorKind::grpc(1).unwrap() as usize],
            "grpc_status_1_cancelled"
        );
        assert_eq!(
            ERROR_NAMES[ErrorKind::grpc(16).unwrap() as usize],
            "grpc_status_16_unauthenticated"
        );
        assert_eq!(ErrorKind::grpc(99), Some(ErrorKind::GrpcUnknown));
        assert_eq!(ErrorKind::GrpcUnauthenticated as usize, ERROR_KINDS - 1);
        assert_eq!(FIRST_GRPC_KIND + 15, ERROR_KINDS - 1);
    }

    #[test]
    fn merge_adds_everything() {
        let mut a = ThreadStats::new(0, 1_000, 10, false);
        let mut b = ThreadStats::new(0, 1_000, 10, false);
        a.response(0, 0, 5_000, 200);
        b.response(3_500, 3_500, 9_000, 200);
        b.error(ErrorKind::Timeout, 9_999);
        a.merge(&b);
        a.finish();
        assert_eq!(a.requests, 2);
        assert_eq!(a.latency.len(), 2);
        assert_eq!(
            a.service.len(),
            2,
            "closed loop copies latency into service time"
        );
        assert_eq!(a.errors[ErrorKind::Timeout as usize], 1);
        assert_eq!(a.intervals.len(), 10);
        assert_eq!(a.intervals[9].errors, 1);
    }
}
