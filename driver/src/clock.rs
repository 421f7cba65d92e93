//! Monotonic nanosecond clock and a precise one-shot timer (timerfd).
//!
//! All times in the driver are `u64` nanoseconds of `CLOCK_MONOTONIC`, so they can be
//! handed to `timerfd_settime` as absolute deadlines without conversion.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Nanoseconds per second.
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// Current `CLOCK_MONOTONIC` time in nanoseconds.
#[inline]
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * NS_PER_SEC + ts.tv_nsec as u64
}

/// Busy-wait until `deadline_ns` (used only for the last few microseconds).
#[inline]
pub fn spin_until(deadline_ns: u64) -> u64 {
    loop {
        let now = mono_ns();
        if now >= deadline_ns {
            return now;
        }
        std::hint::spin_loop();
    }
}

/// Sleep until `deadline_ns`: coarse sleep, then spin the last 200 µs.
pub fn sleep_until(deadline_ns: u64) -> u64 {
    let now = mono_ns();
    if deadline_ns > now + 200_000 {
        std::thread::sleep(std::time::Duration::from_nanos(deadline_ns - now - 200_000));
    }
    spin_until(deadline_ns)
}

/// Ask the kernel for the smallest timer slack on the calling thread (default is 50 µs).
pub fn minimize_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long; 1 ns is the minimum.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Switch the calling thread to SCHED_FIFO priority 1.
pub fn set_realtime_fifo() -> io::Result<()> {
    // SAFETY: sched_param is plain data; all-zero is valid (musl adds sched_ss_* fields that a
    // struct literal with only sched_priority would leave out).
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = 1;
    // SAFETY: pid 0 is the calling thread; param is valid.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("cannot use --realtime (SCHED_FIFO): {e}"),
        ));
    }
    Ok(())
}

/// A non-blocking one-shot timer on `CLOCK_MONOTONIC` with nanosecond deadlines.
///
/// Register it with mio through [`PreciseTimer::raw_fd`]; it becomes readable at the
/// armed deadline. Unlike an epoll timeout (milliseconds) it is backed by an hrtimer.
pub struct PreciseTimer {
    fd: OwnedFd,
    armed_at: Option<u64>,
}

impl PreciseTimer {
    /// Create a disarmed timer.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the result is checked.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        Ok(Self {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            armed_at: None,
        })
    }

    /// The descriptor, for `mio::unix::SourceFd`.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Deadline currently armed, if any.
    pub fn armed_at(&self) -> Option<u64> {
        self.armed_at
    }

    /// Arm at the absolute monotonic time `deadline_ns` (no-op if already armed there).
    pub fn arm_at(&mut self, deadline_ns: u64) -> io::Result<()> {
        if self.armed_at == Some(deadline_ns) {
            return Ok(());
        }
        let deadline_ns = deadline_ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (deadline_ns / NS_PER_SEC) as libc::time_t,
                tv_nsec: (deadline_ns % NS_PER_SEC) as libc::c_long,
            },
        };
        // SAFETY: valid itimerspec; old value not requested.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed_at = Some(deadline_ns);
        Ok(())
    }

    /// Consume a pending expiration (call when the fd reported readable).
    pub fn acknowledge(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into a stack buffer; EAGAIN is fine.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        if n == 8 {
            self.armed_at = None;
        }
    }

    /// Forget the armed deadline once it has passed, so the next `arm_at` re-arms.
    pub fn expire_if_past(&mut self, now_ns: u64) {
        if matches!(self.armed_at, Some(d) if d <= now_ns) {
            self.acknowledge();
            self.armed_at = None;
        }
    }
}

/// Parse a duration such as `250us`, `2ms`, `1.5s`, `2m` or a bare number of seconds.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {text:?}"))?;
    let scale = match unit.trim() {
        "" | "s" => 1e9,
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => {
            return Err(format!(
                "invalid duration unit in {text:?} (use ns, us, ms, s, m, h)"
            ))
        }
    };
    let ns = value * scale;
    if !ns.is_finite() || !(0.0..=7.0 * 86400e9).contains(&ns) {
        return Err(format!("duration {text:?} out of range"));
    }
    Ok(ns.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration_ns("250us").unwrap(), 250_000);
        assert_eq!(parse_duration_ns("2ms").unwrap(), 2_000_000);
        assert_eq!(parse_duration_ns("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration_ns("3").unwrap(), 3_000_000_000);
        assert_eq!(parse_duration_ns("2m").unwrap(), 120_000_000_000);
        assert!(parse_duration_ns("2 parsecs").is_err());
        assert!(parse_duration_ns("").is_err());
    }

    #[test]
    fn timer_fires_near_deadline() {
        let mut timer = PreciseTimer::new().unwrap();
        let deadline = mono_ns() + 2_000_000;
        timer.arm_at(deadline).unwrap();
        let mut pfd = libc::pollfd {
            fd: timer.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, 1 s timeout.
        let rc = unsafe { libc::poll(&mut pfd, 1, 1000) };
        let now = mono_ns();
        assert_eq!(rc, 1);
        assert!(now >= deadline, "timer fired early");
        timer.acknowledge();
        assert_eq!(timer.armed_at(), None);
    }
}
