//! [`CancelToken`]: the observer side, handed to native code; its owner side,
//! [`CancelSource`], is in `source.rs`.

mod source;

pub use source::{CancelGuard, CancelSource};

use std::fmt;
use std::time::Duration;

use crate::callback::CallbackGuard;
use crate::reason::{CancelReason, Cancelled, Cause};
use crate::state::{Callback, CancelHook, Registered, TokenRef, TokenState};
use crate::sync::Weak;
use crate::wait::WaitCancelled;

/// The observer side of a cancellation: native code checks it, waits on it, or registers a
/// callback on it. Cancelled through its [`CancelSource`].
///
/// Cheap to clone (one reference-count increment) and `Send + Sync + 'static`, so it can go
/// anywhere: into a blocking closure, an interpreter's state, a callback of a C library.
///
/// ```
/// use tethered::{CancelReason, CancelSource};
///
/// let source = CancelSource::new();
/// let token = source.token();
/// let worker = std::thread::spawn(move || {
///     let mut steps = 0u64;
///     while !token.is_cancelled() {
///         steps += 1; // one step of real work
///     }
///     (steps, token.reason())
/// });
/// source.cancel(CancelReason::Timeout);
/// let (_, reason) = worker.join().unwrap();
/// assert_eq!(reason, Some(CancelReason::Timeout));
/// ```
#[derive(Clone)]
pub struct CancelToken {
    pub(crate) state: TokenRef,
}

impl CancelToken {
    /// Whether the token has been cancelled: one atomic load, no lock, no allocation. Meant for
    /// the hottest loop of native code.
    ///
    /// Once it returns `true`, everything the cancelling thread did before its
    /// [`cancel`](CancelSource::cancel) is visible to the caller, and [`reason`](Self::reason)
    /// returns `Some`.
    ///
    /// ```
    /// let source = tethered::CancelSource::new();
    /// let token = source.token();
    /// assert!(!token.is_cancelled());
    /// source.cancel(tethered::CancelReason::Requested);
    /// assert!(token.is_cancelled());
    /// ```
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.state.is_cancelled()
    }

    /// `Err(Cancelled)` once cancelled, for use with `?`.
    ///
    /// # Errors
    ///
    /// [`Cancelled`], with the reason and the cause, once the token is cancelled.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    /// let source = CancelSource::new();
    /// assert!(source.token().check().is_ok());
    /// source.cancel(CancelReason::Dropped);
    /// assert_eq!(source.token().check().unwrap_err().reason(), CancelReason::Dropped);
    /// ```
    #[inline]
    pub fn check(&self) -> Result<(), Cancelled> {
        if self.is_cancelled() {
            Err(self.cancelled_after_flag())
        } else {
            Ok(())
        }
    }

    /// The reason of the first cancel, or `None` if not cancelled.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    /// let source = CancelSource::new();
    /// assert_eq!(source.token().reason(), None);
    /// source.cancel(CancelReason::Shutdown);
    /// assert_eq!(source.token().reason(), Some(CancelReason::Shutdown));
    /// ```
    pub fn reason(&self) -> Option<CancelReason> {
        self.state.reason()
    }

    /// The cause the cancel gave ([`CancelSource::cancel_with_cause`]), or `None` if it gave
    /// none or the token is not cancelled. The bridges keep the language's own reason here: a
    /// JavaScript `signal.reason`, an asyncio `CancelledError`'s message.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource, Cause};
    ///
    /// let source = CancelSource::new();
    /// assert!(source.token().cause().is_none());
    /// source.cancel_with_cause(CancelReason::Dropped, Cause::msg("client 7 hung up"));
    /// assert_eq!(source.token().cause().unwrap().to_string(), "client 7 hung up");
    /// ```
    pub fn cause(&self) -> Option<Cause> {
        self.state.cause()
    }

    /// The reason and cause as an error, once the flag has been seen set.
    fn cancelled_after_flag(&self) -> Cancelled {
        // Invariant 1 of `state.rs`: the flag is only set together with the reason.
        match self.state.stop() {
            Some((reason, cause)) => Cancelled::with_cause(reason, cause),
            None => Cancelled::new(CancelReason::Requested),
        }
    }

    /// A future that resolves to the reason once the token is cancelled.
    ///
    /// Works on any executor (it needs no timer or reactor) and cannot miss a wake-up: the
    /// check and the registration of the waker happen under the same lock as the cancel.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let source = CancelSource::new();
    /// let token = source.token();
    /// std::thread::spawn(move || source.cancel(CancelReason::Shutdown));
    /// let reason = futures_executor::block_on(token.cancelled());
    /// assert_eq!(reason, CancelReason::Shutdown);
    /// ```
    pub fn cancelled(&self) -> WaitCancelled {
        WaitCancelled::new(self.state.clone())
    }

    /// Blocks the calling thread until the token is cancelled (returns the reason) or `timeout`
    /// has passed (returns `None`): an interruptible sleep for native code.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let source = CancelSource::new();
    /// let token = source.token();
    /// assert_eq!(token.wait_timeout(Duration::from_millis(1)), None);
    /// source.cancel(CancelReason::Timeout);
    /// assert_eq!(token.wait_timeout(Duration::from_secs(3600)), Some(CancelReason::Timeout));
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> Option<CancelReason> {
        self.state.wait_timeout(timeout)
    }

    /// Blocks the calling thread until the token is cancelled and returns the reason.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    /// let source = CancelSource::new();
    /// let token = source.token();
    /// std::thread::spawn(move || source.cancel(CancelReason::Requested));
    /// assert_eq!(token.wait(), CancelReason::Requested);
    /// ```
    pub fn wait(&self) -> CancelReason {
        self.state.wait()
    }

    /// Registers `callback` to run when the token is cancelled: push-style cancellation for code
    /// that cannot poll (kill a child process, bump a wasm engine's epoch, close a socket).
    ///
    /// This is the one statement of when a callback runs; the crate's other docs point here.
    ///
    /// - The callback runs at most once, with no lock of this crate held: it may call any
    ///   method of any token, register callbacks, drop guards.
    /// - When it runs depends on the token's state at the moment of registration:
    ///   - **not cancelled**: on the thread that cancels, inside [`CancelSource::cancel`] (or
    ///     the cancel of an ancestor), once the flags of the token and of all its descendants
    ///     are set and the token's waiters are woken. Callbacks run one after another in
    ///     registration order, a parent's before its children's: a callback finds every
    ///     descendant of its token cancelled already.
    ///   - **being cancelled** (the cancelling thread is still running earlier callbacks):
    ///     it joins the end of that line and runs on the cancelling thread, after them, before
    ///     that `cancel` returns; `on_cancel` itself returns without waiting for it.
    ///   - **cancelled** (every callback has run): right here, before `on_cancel` returns.
    ///   - **never to be cancelled** ([`never`](Self::never), a finished job's sealed token):
    ///     dropped at once, unrun.
    /// - Dropping the returned [`CallbackGuard`] deregisters the callback. If the callback is
    ///   running on another thread at that moment, the drop waits until it has returned, so the
    ///   callback may borrow state its owner frees right after dropping the guard. Dropping the
    ///   guard inside its own callback returns at once. Waiters are woken before callbacks run:
    ///   code woken by the cancel (in [`wait`](Self::wait), a poll of `is_cancelled`) that drops
    ///   the guard at once may deregister the callback before its turn, and then it never runs.
    ///   [`arm`](Self::arm) wraps this pattern for a resource and says (with
    ///   [`Armed::fired`](crate::Armed::fired)) whether its action ran.
    /// - A panic in a callback is caught where the callback runs. The panic hook reports it as
    ///   usual (by default a message on stderr); the payload is dropped; the other callbacks
    ///   still run; the token stays cancelled with its reason and keeps working; and
    ///   [`stats()`](crate::stats)`.callback_panics` counts it. The thread that cancelled never
    ///   sees the panic: `cancel` often runs inside a `Drop`, where unwinding would abort.
    ///
    /// ```
    /// use std::sync::{Arc, atomic::{AtomicBool, Ordering}};
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let source = CancelSource::new();
    /// let killed = Arc::new(AtomicBool::new(false));
    /// let flag = killed.clone();
    /// let _guard = source.token().on_cancel(move |reason| {
    ///     assert_eq!(reason, CancelReason::Timeout);
    ///     flag.store(true, Ordering::SeqCst); // e.g. child.kill()
    /// });
    /// source.cancel(CancelReason::Timeout);
    /// assert!(killed.load(Ordering::SeqCst));
    /// ```
    pub fn on_cancel<F>(&self, callback: F) -> CallbackGuard
    where
        F: FnOnce(CancelReason) + Send + 'static,
    {
        self.register(Callback::Boxed(Box::new(callback)))
    }

    /// Registers a job's own hook (see `Callback::Hook`), as `on_cancel` does a closure.
    pub(crate) fn on_cancel_hook(&self, hook: Weak<dyn CancelHook>) -> CallbackGuard {
        self.register(Callback::Hook(hook))
    }

    /// Runs `action` on the crate's timer thread at `deadline`, unless this token is cancelled
    /// or freed first. The timer entry lives in a callback of this token: a cancel runs that
    /// callback (dropping the entry, which takes it out of the timer), and a seal or the
    /// token's last drop drops it. `action` should hold only `Weak`s, so that a deadline keeps
    /// nothing alive.
    pub(crate) fn on_deadline(
        &self,
        deadline: std::time::Instant,
        action: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<()> {
        let entry = crate::timer::schedule(deadline, Box::new(action))?;
        self.state.record_deadline(deadline);
        self.on_cancel(move |_| drop(entry)).detach();
        Ok(())
    }

    /// The earliest deadline of this token: one set with `cancel_at` or `cancel_after` on its
    /// own source or job handle, or on any ancestor's, through parents and
    /// [`any_of`](CancelSource::any_of) links alike (a child inherits the earliest above it,
    /// also one set after it was made). `None` if nothing above has a deadline.
    ///
    /// A job can hand what is left of its caller's deadline to work it starts: a request to
    /// another host, a child process, a sub-query.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::CancelSource;
    ///
    /// let request = CancelSource::new();
    /// let step = request.token().child();
    /// assert_eq!(step.token().deadline(), None);
    /// request.cancel_after(Duration::from_secs(30))?;
    /// step.cancel_after(Duration::from_secs(60))?; // later than its parent's: the parent's wins
    /// assert_eq!(step.token().deadline(), request.token().deadline());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.state.deadline()
    }

    /// How long until [`deadline`](Self::deadline): zero once it has passed, `None` if there
    /// is none.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::CancelSource;
    ///
    /// let request = CancelSource::new();
    /// request.cancel_after(Duration::from_secs(5))?;
    /// let left = request.token().child().token().time_left().unwrap();
    /// assert!(left <= Duration::from_secs(5) && left > Duration::from_secs(4));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn time_left(&self) -> Option<Duration> {
        self.deadline()
            .map(|deadline| deadline.saturating_duration_since(std::time::Instant::now()))
    }

    fn register(&self, callback: Callback) -> CallbackGuard {
        match self.state.register_callback(callback) {
            Registered::Pending(key) => CallbackGuard::registered(self.state.clone(), key),
            Registered::Settled => CallbackGuard::inert(),
        }
    }

    /// A token that is never cancelled: for an API that takes a token when the caller has no
    /// cancellation to offer. Callbacks registered on it are dropped at once (they can never
    /// run), [`cancelled`](Self::cancelled) never resolves, and its children are cancelled only
    /// through their own sources.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::CancelToken;
    ///
    /// let token = CancelToken::never();
    /// assert!(!token.is_cancelled());
    /// assert_eq!(token.wait_timeout(Duration::from_millis(1)), None);
    /// let guard = token.on_cancel(|_| unreachable!());
    /// assert!(!guard.is_pending()); // dropped: it can never run
    /// ```
    pub fn never() -> CancelToken {
        CancelToken {
            state: TokenState::sealed(),
        }
    }

    /// A new [`CancelSource`] linked to this token: it is cancelled when this token is
    /// cancelled, with the same reason; cancelling it never touches this token.
    ///
    /// The link lives as long as any handle to the child (its source, its tokens, a guard or
    /// a pending [`cancelled`](Self::cancelled) future), so a long-lived parent does not grow
    /// with dead children. A token in the middle of a tree whose handles all went is spliced
    /// out: its children move up to its parent, so a long-lived leaf keeps no dead ancestor
    /// alive (a token with a callback still registered stays, so that the callback still runs).
    /// If this token is already cancelled, the child starts out cancelled.
    ///
    /// A cancel walks the tree with a loop, not by recursion, and so does the drop of a chain's
    /// last handle: a chain a million levels deep cancels and drops on a default thread stack.
    /// A cancel sets the flags of the whole subtree before any callback runs; then a parent's
    /// callbacks run before its children's. A child of a sealed token (see
    /// [`never`](Self::never)) is never cancelled by it.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let request = CancelSource::new();
    /// let step = request.token().child();
    /// step.cancel(CancelReason::Requested);
    /// assert!(!request.is_cancelled()); // the parent is untouched
    ///
    /// let other = request.token().child();
    /// request.cancel(CancelReason::Timeout);
    /// assert_eq!(other.token().reason(), Some(CancelReason::Timeout));
    /// ```
    pub fn child(&self) -> CancelSource {
        CancelSource {
            state: TokenState::child_of(&self.state),
        }
    }

    /// Whether both tokens observe the same source.
    ///
    /// ```
    /// let source = tethered::CancelSource::new();
    /// assert!(source.token().same_as(&source.token()));
    /// assert!(!source.token().same_as(&tethered::CancelSource::new().token()));
    /// ```
    pub fn same_as(&self, other: &CancelToken) -> bool {
        self.state.ptr_eq(&other.state)
    }

    /// How many registrations wait on this token right now: callbacks not yet run, linked
    /// children, and pending [`cancelled`](Self::cancelled) futures. Useful in tests to show
    /// that guards, children and abandoned futures unlink themselves; it drops to 0 on cancel.
    ///
    /// ```
    /// let source = tethered::CancelSource::new();
    /// let child = source.token().child();
    /// assert_eq!(source.token().registrations(), 1);
    /// drop(child);
    /// assert_eq!(source.token().registrations(), 0);
    /// ```
    pub fn registrations(&self) -> usize {
        self.state.registrations()
    }
}

/// Two tokens are equal when they observe the same source: [`same_as`](CancelToken::same_as).
/// With [`Hash`], a token can key a map (of the work waiting on each request, say).
///
/// ```
/// use std::collections::HashSet;
/// use tethered::CancelSource;
///
/// let request = CancelSource::new();
/// let other = CancelSource::new();
/// let seen: HashSet<_> = [request.token(), request.token(), other.token()].into();
/// assert_eq!(seen.len(), 2);
/// assert!(seen.contains(&request.token()));
/// assert_eq!(request.token(), request.token());
/// assert_ne!(request.token(), request.child().token(), "a child is a token of its own");
/// ```
impl PartialEq for CancelToken {
    fn eq(&self, other: &CancelToken) -> bool {
        self.same_as(other)
    }
}

impl Eq for CancelToken {}

impl std::hash::Hash for CancelToken {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.state.addr(), state);
    }
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
