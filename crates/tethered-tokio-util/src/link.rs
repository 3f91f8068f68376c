//! Two-way links between tethered cancellation and `tokio_util::sync::CancellationToken`.
//!
//! # How each direction is carried
//!
//! - tethered → tokio-util: a callback registered with [`CancelToken::on_cancel`](tethered::CancelToken::on_cancel)
//!   calls [`CancellationToken::cancel`], synchronously inside [`CancelSource::cancel`].
//! - tokio-util → tethered: `CancellationToken` has no callback API, so a [`Relay`] keeps one
//!   pending [`WaitForCancellationFutureOwned`] and polls it with a waker of its own. tokio's
//!   `Notify` calls that waker on the thread that cancels; the waker polls again and, once the
//!   future is ready, cancels the tethered source. So this direction is synchronous as well,
//!   and needs no runtime, task or thread.
//!
//! So the tethered side's `on_cancel` callbacks (and what they do: a scope handing out its
//! next job, a child process killed) run inside `CancellationToken::cancel`. tokio-util
//! 0.7.20 and later call those wakers after releasing the token tree's lock; earlier versions
//! held the parent token's lock there, and a callback that touched (or merely dropped) a
//! token of the same tree deadlocked. That is why this crate requires tokio-util 0.7.20.
//!
//! # Invariants
//!
//! 1. A relay's pending future holds its waker, which holds the relay: a reference cycle that
//!    is broken exactly when `Relay::state` becomes `None`: the tokio-util token fired, or
//!    [`Relay::unlink`] ran because the link ended (a [`CancellationLink`] dropped, the
//!    tethered side cancelled, or the last handle to a [`cancel_source_from`] source dropped).
//! 2. Nothing holds a strong reference to the source returned by [`cancel_source_from`]: the
//!    relay cancels a private parent of it (`upstream`), whose link to the child is weak. So
//!    the child's state, and with it the callback owning the relay's [`Unlink`], drops when the
//!    caller's last handle does.
//! 3. No cancel, drop of a future or a source, or other user code runs while `Relay::state` is
//!    locked.
//!
//! # Lock order
//!
//! `Relay::state`, then tokio's `Notify` lock (taken inside the poll and the drop of the
//! pending future). `Notify` wakes wakers only after releasing its lock, so it never enters a
//! relay with its lock held.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Wake, Waker};

use tethered::{CallbackGuard, CancelReason, CancelSource};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Links `source` and `token` both ways until the returned guard is dropped: cancelling
/// `source` cancels `token`, and cancelling `token` cancels `source` with
/// [`CancelReason::Dropped`] (tokio-util's way to say that the caller gave up). Either way the cancel arrives before the call that cancelled
/// returns. If one side is already cancelled, the other is cancelled right here.
///
/// The link holds `source` and a clone of `token` until either side is cancelled or the guard
/// is dropped, whichever comes first; then it holds nothing. A cancel racing with the drop of
/// the guard may or may not cross.
///
/// For a [`CancelToken`](tethered::CancelToken), which cannot be cancelled, link one of its
/// children: `link(&token.child(), &cancellation_token)` forwards the token's cancel and keeps
/// a cancel of `cancellation_token` from flowing back. Likewise pass
/// [`CancellationToken::child_token`] to keep a tethered cancel from reaching a shared token.
///
/// ```
/// use tethered::{CancelReason, CancelSource};
/// use tokio_util::sync::CancellationToken;
///
/// let source = CancelSource::new();
/// let shutdown = CancellationToken::new();
/// let link = tethered_tokio_util::link(&source, &shutdown);
///
/// shutdown.cancel(); // e.g. a library gives up
/// assert_eq!(source.token().reason(), Some(CancelReason::Dropped));
/// assert!(!link.is_linked()); // done: the link holds nothing any more
///
/// let source = CancelSource::new();
/// let shutdown = CancellationToken::new();
/// let link = tethered_tokio_util::link(&source, &shutdown);
/// drop(link); // unlinked: cancels no longer cross
/// source.cancel(CancelReason::Timeout);
/// assert!(!shutdown.is_cancelled());
/// ```
pub fn link(source: &CancelSource, token: &CancellationToken) -> CancellationLink {
    let relay = Relay::start(token, source.clone());
    let forward = {
        let token = token.clone();
        // Weak: the relay holds `source`, so a strong reference from `source`'s callback list
        // back to the relay would keep both alive until the guard drops anyway; weak, the
        // guard is the only owner and the lifetime stays obvious.
        let relay = Arc::downgrade(&relay);
        source.token().on_cancel(move |_| {
            token.cancel();
            if let Some(relay) = relay.upgrade() {
                relay.unlink();
            }
        })
    };
    CancellationLink {
        forward: Some(forward),
        relay: Some(relay),
    }
}

/// A new [`CancelSource`] linked both ways to `token`: cancelling `token` cancels the source
/// (and its tokens and children) with [`CancelReason::Dropped`]; cancelling the source
/// cancels `token`. Either way the cancel arrives before the call that cancelled returns.
///
/// The link lives exactly as long as some handle to the returned source does (a clone of it, a
/// [`token`](CancelSource::token), a child): once the last one is dropped, the link and its
/// clone of `token` are freed, even if neither side was ever cancelled. So deriving one
/// per request from a long-lived token does not grow anything.
///
/// Cancelling the returned source cancels `token` itself, and with it `token`'s children. To
/// let a job stop without cancelling a shared token, pass [`CancellationToken::child_token`].
///
/// ```
/// use tethered::{CancelReason, JobOptions, Tethered};
/// use tokio_util::sync::CancellationToken;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let shutdown = CancellationToken::new();
/// let source = tethered_tokio_util::cancel_source_from(&shutdown.child_token());
/// let job = tethered_tokio::spawn_native_with(JobOptions::new().child_of(&source.token()), |token| {
///     token.wait() // blocks until cancelled
/// })?;
/// let token = job.token().clone();
/// shutdown.cancel(); // the application shuts down...
/// assert_eq!(token.reason(), Some(CancelReason::Dropped)); // ...and the job has heard it
/// let _ = job.await; // resolves promptly: the closure returned, or never started
/// # Ok(())
/// # }
/// ```
pub fn cancel_source_from(token: &CancellationToken) -> CancelSource {
    let (source, _relay) = cancel_source_with_relay(token);
    source
}

/// [`cancel_source_from`], also returning its relay (so tests can see when it is freed).
fn cancel_source_with_relay(token: &CancellationToken) -> (CancelSource, Weak<Relay>) {
    let upstream = CancelSource::new();
    let source = upstream.token().child();
    let relay = Relay::start(token, upstream);
    let weak = Arc::downgrade(&relay);
    let unlink = Unlink(relay);
    let token = token.clone();
    // Detached: the callback, and the `Unlink` it owns, live in `source`'s state until the
    // source is cancelled (it then runs) or its last handle is dropped (it is then dropped).
    source
        .token()
        .on_cancel(move |_| {
            token.cancel();
            drop(unlink);
        })
        .detach();
    (source, weak)
}

/// Keeps a tethered source and a `CancellationToken` linked both ways; made by [`link`].
/// Dropping it unlinks them.
#[must_use = "dropping the link unlinks the two tokens at once"]
pub struct CancellationLink {
    /// tethered → tokio-util.
    forward: Option<CallbackGuard>,
    /// tokio-util → tethered.
    relay: Option<Arc<Relay>>,
}

impl CancellationLink {
    /// Whether the link still waits for a cancel: `false` once either side was cancelled (the
    /// cancel has crossed and the link holds nothing any more).
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// let source = CancelSource::new();
    /// let link = tethered_tokio_util::link(&source, &CancellationToken::new());
    /// assert!(link.is_linked());
    /// source.cancel(CancelReason::Requested);
    /// assert!(!link.is_linked());
    /// ```
    pub fn is_linked(&self) -> bool {
        self.relay.as_ref().is_some_and(|relay| relay.is_pending())
    }
}

impl Drop for CancellationLink {
    fn drop(&mut self) {
        // The guard first: if the forward callback is running on another thread, this waits
        // for it, so no cancel crosses after the drop returns.
        drop(self.forward.take());
        if let Some(relay) = self.relay.take() {
            relay.unlink();
        }
    }
}

impl fmt::Debug for CancellationLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellationLink")
            .field("linked", &self.is_linked())
            .finish()
    }
}

/// Carries a `CancellationToken`'s cancel to a tethered source (see the module docs).
struct Relay {
    /// `None` once the token fired or the link ended.
    state: Mutex<Option<Pending>>,
}

/// What a relay holds while it waits.
struct Pending {
    /// Polled with the relay's own waker.
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    /// Cancelled when `cancelled` is ready.
    target: CancelSource,
}

impl Relay {
    /// A relay that cancels `target` once `token` is cancelled, already registered with the
    /// token (or done, if the token was cancelled already).
    fn start(token: &CancellationToken, target: CancelSource) -> Arc<Relay> {
        let relay = Arc::new(Relay {
            state: Mutex::new(Some(Pending {
                cancelled: Box::pin(token.clone().cancelled_owned()),
                target,
            })),
        });
        relay.poll_pending();
        relay
    }

    /// Polls the pending future; once it is ready, ends the relay and cancels the target.
    fn poll_pending(self: &Arc<Self>) {
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        let fired = {
            let mut state = lock(&self.state);
            let ready = match state.as_mut() {
                Some(pending) => pending.cancelled.as_mut().poll(&mut cx).is_ready(),
                None => false,
            };
            if ready { state.take() } else { None }
        };
        // Invariant 3: outside the lock.
        if let Some(Pending { cancelled, target }) = fired {
            drop(cancelled);
            target.cancel(CancelReason::Dropped);
        }
    }

    /// Ends the relay without cancelling: breaks the cycle of invariant 1.
    fn unlink(&self) {
        let pending = lock(&self.state).take();
        // Invariant 3: dropped outside the lock.
        drop(pending);
    }

    fn is_pending(&self) -> bool {
        lock(&self.state).is_some()
    }
}

impl Wake for Relay {
    fn wake(self: Arc<Self>) {
        self.poll_pending();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.poll_pending();
    }
}

/// Ends a relay when dropped: owned by the callback a [`cancel_source_from`] source carries.
struct Unlink(Arc<Relay>);

impl Drop for Unlink {
    fn drop(&mut self) {
        self.0.unlink();
    }
}

/// Locks `mutex`, ignoring poison: no code panics while holding it (invariant 3 keeps user code
/// out), so the state is consistent either way.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Runs `body` on its own thread; fails instead of hanging if a crossing cancel deadlocks
    /// (see `tests/cancellation_link.rs`).
    fn bounded(body: impl FnOnce() + Send + 'static) {
        let (done_tx, done) = mpsc::channel();
        let worker = std::thread::spawn(move || {
            body();
            let _ = done_tx.send(());
        });
        match done.recv_timeout(Duration::from_secs(10)) {
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("deadlock: a cancel did not return"),
            _ => {
                if let Err(panic) = worker.join() {
                    std::panic::resume_unwind(panic);
                }
            }
        }
    }

    #[test]
    fn cancel_source_from_frees_its_relay_when_the_last_handle_drops() {
        bounded(|| {
            let token = CancellationToken::new();
            let (source, relay) = cancel_source_with_relay(&token);
            let child = source.token().child();
            drop(source);
            assert!(relay.upgrade().is_some(), "a child still holds the source");
            drop(child);
            assert!(relay.upgrade().is_none(), "the relay outlived every handle");
            assert!(!token.is_cancelled());
        });
    }

    #[test]
    fn cancel_source_from_frees_its_relay_once_the_token_fires() {
        bounded(|| {
            let token = CancellationToken::new();
            let (source, relay) = cancel_source_with_relay(&token);
            token.cancel();
            assert_eq!(source.token().reason(), Some(CancelReason::Dropped));
            assert!(relay.upgrade().is_none(), "a fired relay must free itself");
        });
    }

    #[test]
    fn cancel_source_from_frees_its_relay_once_the_source_is_cancelled() {
        bounded(|| {
            let token = CancellationToken::new();
            let (source, relay) = cancel_source_with_relay(&token);
            source.cancel(CancelReason::Timeout);
            assert!(token.is_cancelled());
            assert!(relay.upgrade().is_none());
        });
    }

    #[test]
    fn dropping_a_link_frees_its_relay_and_callback() {
        bounded(|| {
            let source = CancelSource::new();
            let token = CancellationToken::new();
            let link = link(&source, &token);
            let relay = Arc::downgrade(link.relay.as_ref().expect("a new link has a relay"));
            assert_eq!(source.token().registrations(), 1);
            drop(link);
            assert_eq!(source.token().registrations(), 0);
            assert!(relay.upgrade().is_none());
        });
    }
}
