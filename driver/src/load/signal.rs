//! SIGINT/SIGTERM during a load run: stop workers and exit with code 4.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the signal handler; workers poll it.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Route SIGINT and SIGTERM to [`INTERRUPTED`].
pub fn install() {
    let handler: extern "C" fn(libc::c_int) = on_signal;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(sig, handler as libc::sighandler_t) };
    }
}
