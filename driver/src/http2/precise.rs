//! Nanosecond timers on a tokio current-thread runtime. tokio's own timer wheel has a
//! resolution of a millisecond, too coarse for open-loop send times and `delay=250us`: these
//! use a timerfd (an hrtimer, [`PreciseTimer`]) watched by tokio's reactor.
//!
//! [`Alarm`] is one timer owned by one task (the load worker). [`sleep_until`] serves many
//! sleeping tasks of one thread (the echo server's delayed responses) from one timerfd,
//! driven by [`drive_timers`], which must run on that thread.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use crate::clock::{mono_ns, PreciseTimer};

struct Fd(PreciseTimer);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.raw_fd()
    }
}

/// One precise timer for one task.
pub struct Alarm {
    fd: AsyncFd<Fd>,
}

impl Alarm {
    /// A disarmed alarm (call inside the runtime).
    pub fn new() -> io::Result<Self> {
        let timer = Fd(PreciseTimer::new()?);
        // SAFETY: the descriptor is the timer's own (an OwnedFd inside it), open and the
        // same for as long as the AsyncFd owns the timer.
        let fd = unsafe { AsyncFd::register_with_interest(timer, Interest::READABLE)? };
        Ok(Self { fd })
    }

    /// Arm at `deadline_ns` (a no-op when armed there already) and poll: `Ready` once it
    /// has passed; `Pending` registers the task to be woken then.
    pub fn poll_at(&mut self, cx: &mut Context<'_>, deadline_ns: u64) -> Poll<io::Result<()>> {
        loop {
            if mono_ns() >= deadline_ns {
                return Poll::Ready(Ok(()));
            }
            self.fd.get_mut().0.arm_at(deadline_ns)?;
            let mut guard = match self.fd.poll_read_ready_mut(cx) {
                Poll::Ready(Ok(g)) => g,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            };
            guard.get_inner_mut().0.acknowledge();
            guard.clear_ready();
        }
    }
}

/// Sleepers of this thread, earliest first.
#[derive(Default)]
struct Timers {
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    wakers: HashMap<u64, Waker>,
    seq: u64,
    /// The task of [`drive_timers`], woken when an earlier deadline arrives.
    driver: Option<Waker>,
    /// The deadline the driver's timerfd is armed at.
    armed: Option<u64>,
}

thread_local! {
    static TIMERS: RefCell<Timers> = RefCell::new(Timers::default());
}

/// Sleep until the monotonic time `deadline_ns` (the thread must run [`drive_timers`]).
pub fn sleep_until(deadline_ns: u64) -> Sleep {
    Sleep {
        deadline_ns,
        id: None,
    }
}

/// See [`sleep_until`].
pub struct Sleep {
    deadline_ns: u64,
    id: Option<u64>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if mono_ns() >= self.deadline_ns {
            return Poll::Ready(());
        }
        let deadline = self.deadline_ns;
        let id = self.id;
        let id = TIMERS.with(|t| {
            let mut t = t.borrow_mut();
            let id = match id {
                Some(id) => {
                    if let Some(w) = t.wakers.get_mut(&id) {
                        w.clone_from(cx.waker());
                    }
                    id
                }
                None => {
                    t.seq += 1;
                    let id = t.seq;
                    t.heap.push(Reverse((deadline, id)));
                    t.wakers.insert(id, cx.waker().clone());
                    if t.armed.is_none_or(|a| deadline < a) {
                        if let Some(d) = &t.driver {
                            d.wake_by_ref();
                        }
                    }
                    id
                }
            };
            id
        });
        self.id = Some(id);
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            let _ = TIMERS.try_with(|t| {
                let mut t = t.borrow_mut();
                t.wakers.remove(&id);
            });
        }
    }
}

/// Wake the sleepers of this thread on time; runs forever.
pub async fn drive_timers() -> io::Result<()> {
    let mut alarm = Alarm::new()?;
    std::future::poll_fn(|cx| -> Poll<io::Result<()>> {
        loop {
            let now = mono_ns();
            let next = TIMERS.with(|t| {
                let mut t = t.borrow_mut();
                t.driver = Some(cx.waker().clone());
                while let Some(Reverse((deadline, id))) = t.heap.peek().copied() {
                    if deadline > now {
                        t.armed = Some(deadline);
                        return Some(deadline);
                    }
                    t.heap.pop();
                    if let Some(waker) = t.wakers.remove(&id) {
                        waker.wake();
                    }
                }
                t.armed = None;
                None
            });
            let Some(deadline) = next else {
                return Poll::Pending;
            };
            match alarm.poll_at(cx, deadline) {
                Poll::Ready(Ok(())) => continue,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await
}
