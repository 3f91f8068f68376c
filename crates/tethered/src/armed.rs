//! [`Armed`]: an unblock action for a blocking call, run at most once on cancel, and disarmed
//! before the resource it acts on is used again.
//!
//! # Invariants
//!
//! 1. The resource is in `slot` except while the unblock action runs on it (it is taken out,
//!    acted on with no lock held, and put back), so user code never runs under `slot`'s lock.
//! 2. The action runs at most once (it is an `on_cancel` callback), and never after
//!    [`Armed::disarm`] returned: disarming drops the callback's guard, which removes a pending
//!    callback or waits for a running one (the callback's own contract).
//! 3. The resource comes back exactly once, from `disarm`, even if the action panicked (the
//!    panic is contained and counted in `stats().callback_panics`).

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::callback::CallbackGuard;
use crate::contain::drop_payload;
use crate::reason::CancelReason;
use crate::stats;
use crate::sync::{self, Arc, AtomicU8, Mutex, Ordering};
use crate::token::CancelToken;

/// An armed unblock action: made by [`CancelToken::arm`] around a resource that a blocking
/// call waits on (a socket, a child process, a database handle, a channel's sender).
///
/// While armed, a cancel of the token runs the action once on the resource (shut the socket
/// down, kill the child, interrupt the query), from the cancelling thread, which unblocks the
/// call. [`disarm`](Self::disarm) when the call has returned: it waits for an action still
/// running, ensures none runs later, and gives the resource back for safe reuse (a socket read
/// from again, a child reaped, a connection returned to its pool). Dropping an `Armed` disarms
/// it and drops the resource.
///
/// The action must unblock the call even if it runs just before the call starts (a socket shut
/// down, a killed child), or the call must check the token first: some resources forget a push
/// that comes too early (SQLite drops an interrupt that arrives between statements).
#[must_use = "dropping an `Armed` disarms it at once; keep it while the blocking call runs"]
pub struct Armed<R> {
    slot: Arc<Slot<R>>,
    guard: Option<CallbackGuard>,
}

// The resource changes hands only under the slot's lock, and the unblock action (user code)
// runs with no lock held, contained: a panic leaves the slot whole, whatever `R` is.
impl<R> std::panic::UnwindSafe for Armed<R> {}
impl<R> std::panic::RefUnwindSafe for Armed<R> {}

struct Slot<R> {
    resource: Mutex<Option<R>>,
    /// [`IDLE`] until the action starts, [`FIRED`] once it has.
    fired: AtomicU8,
}

/// `fired`: the action has not run.
const IDLE: u8 = 0;
/// `fired`: the action has run (or is running).
const FIRED: u8 = 1;

impl CancelToken {
    /// Arms `unblock` to run once on `resource` if this token is cancelled (at once, before
    /// this returns, if it is cancelled already), until the returned [`Armed`] is disarmed.
    ///
    /// A blocking read ended by a cancel:
    ///
    /// ```
    /// use std::io::Read;
    /// use std::net::{Shutdown, TcpListener, TcpStream};
    /// use tethered::{AbortableNative, CancelReason, Tethered};
    ///
    /// let listener = TcpListener::bind("127.0.0.1:0")?;
    /// let stream = TcpStream::connect(listener.local_addr()?)?;
    /// let _peer = listener.accept()?; // connected, and silent
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// let job = AbortableNative::spawn(move |token| {
    ///     let armed = token.arm(stream.try_clone().unwrap(), |socket, _reason| {
    ///         let _ = socket.shutdown(Shutdown::Both); // unblocks the read below
    ///     });
    ///     started_tx.send(()).unwrap();
    ///     let mut buf = [0; 64];
    ///     let read = (&stream).read(&mut buf); // blocks until data, EOF or the cancel
    ///     let fired = armed.fired();
    ///     drop(armed.disarm()); // no shutdown can come after this line
    ///     (read.map(|n| n == 0).unwrap_or(true), fired)
    /// });
    /// started.recv().unwrap();
    /// job.cancel(CancelReason::Timeout);
    /// let stopped = job.join_blocking().unwrap_err();
    /// assert_eq!(stopped.into_returned(), Some((true, true))); // ended by the cancel
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn arm<R, F>(&self, resource: R, unblock: F) -> Armed<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut R, CancelReason) + Send + 'static,
    {
        let slot = Arc::new(Slot {
            resource: Mutex::new(Some(resource)),
            fired: AtomicU8::new(IDLE),
        });
        let action = slot.clone();
        let guard = self.on_cancel(move |reason| {
            // ORDERING: Release pairs with `fired`'s Acquire: whoever sees FIRED sees the
            // cancel that started the action.
            action.fired.store(FIRED, Ordering::Release);
            // Invariant 1: taken out, acted on with no lock held, put back.
            let Some(mut resource) = sync::lock(&action.resource).take() else {
                return;
            };
            let outcome = catch_unwind(AssertUnwindSafe(|| unblock(&mut resource, reason)));
            *sync::lock(&action.resource) = Some(resource);
            if let Err(payload) = outcome {
                // Invariant 3: the resource is back; the panic is counted like a callback's.
                stats::callback_panicked();
                drop_payload(payload);
            }
        });
        Armed {
            slot,
            guard: Some(guard),
        }
    }
}

impl<R> Armed<R> {
    /// Whether the unblock action has run (or is running): the blocking call returned because
    /// of the cancel, not by itself.
    pub fn fired(&self) -> bool {
        // ORDERING: Acquire pairs with the Release store in the action.
        self.slot.fired.load(Ordering::Acquire) == FIRED
    }

    /// Disarms: removes the action if it has not run, waits for it if it is running (on the
    /// cancelling thread), and returns the resource. After this, the action never runs.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let source = CancelSource::new();
    /// let armed = source.token().arm(Vec::<&str>::new(), |log, _| log.push("unblocked"));
    /// let log = armed.disarm();
    /// source.cancel(CancelReason::Requested); // too late: disarmed
    /// assert!(log.is_empty());
    /// ```
    #[expect(
        clippy::missing_panics_doc,
        reason = "the resource is in its slot until disarmed (invariant 3): the expect never fires"
    )]
    pub fn disarm(mut self) -> R {
        self.release()
            .expect("an armed resource is in its slot until disarmed (invariant 3)")
    }

    fn release(&mut self) -> Option<R> {
        // Invariant 2: the guard's drop waits for a running action, and cancels a pending one.
        drop(self.guard.take());
        sync::lock(&self.slot.resource).take()
    }
}

impl<R> Drop for Armed<R> {
    fn drop(&mut self) {
        if self.guard.is_some() {
            let resource = self.release();
            crate::contain::drop_contained(resource);
        }
    }
}

impl<R> fmt::Debug for Armed<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Armed")
            .field("fired", &self.fired())
            .finish_non_exhaustive()
    }
}
