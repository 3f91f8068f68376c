//! [`Inbox`]: what other threads hand the supervisor (new children, cancels), and when the
//! supervisor must be woken for it.
//!
//! # States
//!
//! The inbox is one lock over two lists and one flag, `wake_sent`:
//!
//! ```text
//!            post / cancel (first since the last take: the poster writes the wake byte)
//!  Quiet ───────────────────────────────────────────────────────────────────▶ Signalled
//!    ▲                                                                           │
//!    └──────────── take (the supervisor drained the wake byte first) ◀──────────┘
//! ```
//!
//! # Invariants
//!
//! 1. While the lists hold anything, `wake_sent` is set and a wake byte was (or is about to be)
//!    written after the supervisor's last drain: the supervisor drains the wake channel *before*
//!    it takes the lists, so a byte written for mail it has not taken is never drained unread.
//! 2. A byte that arrives for mail already taken only wakes the supervisor once for nothing.
//! 3. No user code runs under the lock; the poster writes the byte after releasing it.
//! 4. A cancel is never lost to the order of the mail: a child's cancel link is registered
//!    before the child is posted, so its cancel can arrive in an earlier mail than the child
//!    and find nothing to stop. [`Taken::deliver`] therefore stops a child that arrives with its
//!    token cancelled already.
//! 5. A child that exited by itself before its cancel is handled is reaped as such, never
//!    signalled ([`Entry::stop`] looks first): its end reads `Exited`, whatever the order in
//!    which the supervisor learns of the two (a pidfd made readable by the exit and a cancel
//!    in the same turn).

use std::collections::HashMap;

use crate::sync::{self, Mutex};

/// What the inbox needs of a child.
pub(crate) trait Entry {
    fn id(&self) -> u64;
    /// Whether the child's job was cancelled.
    fn is_cancelled(&self) -> bool;
    /// Whether a stop may begin: the child is not reaped, and no stop began.
    fn stoppable(&self) -> bool;
    /// The cancel reached the child now (for its `cancel_to_reaped`).
    fn cancel_seen(&mut self);
    /// Looks whether the child exited by itself, and reaps it if so: `true` once it is gone.
    fn reap_if_exited(&mut self) -> bool;
    /// Sends the stop's first signal.
    fn signal_stop(&mut self);

    /// Begins the child's stop (nothing if it began or the child is reaped), unless it exited
    /// by itself: then it is reaped as such (invariant 5).
    fn stop(&mut self) {
        if !self.stoppable() {
            return;
        }
        self.cancel_seen();
        if !crate::fault::put_back("process_cancel_before_exit") && self.reap_if_exited() {
            return;
        }
        self.signal_stop();
    }
}

/// Mail for the supervisor: new children (`E`) and cancels (by child id).
pub(crate) struct Inbox<E> {
    mail: Mutex<Mail<E>>,
}

struct Mail<E> {
    new: Vec<E>,
    cancelled: Vec<u64>,
    /// A wake byte was written since the supervisor's last take.
    wake_sent: bool,
}

/// What the supervisor took in one go.
pub(crate) struct Taken<E> {
    pub(crate) new: Vec<E>,
    pub(crate) cancelled: Vec<u64>,
}

impl<E> Inbox<E> {
    pub(crate) fn new() -> Self {
        Inbox {
            mail: Mutex::new(Mail {
                new: Vec::new(),
                cancelled: Vec::new(),
                wake_sent: false,
            }),
        }
    }

    /// Hands over a new child; `true` if the caller must now write the wake byte.
    pub(crate) fn post(&self, entry: E) -> bool {
        let mut mail = sync::lock(&self.mail);
        mail.new.push(entry);
        !std::mem::replace(&mut mail.wake_sent, true)
    }

    /// Asks for the child `id` to be stopped; `true` if the caller must write the wake byte.
    pub(crate) fn cancel(&self, id: u64) -> bool {
        let mut mail = sync::lock(&self.mail);
        mail.cancelled.push(id);
        !std::mem::replace(&mut mail.wake_sent, true)
    }

    /// Empties the wake channel with `drain`, then takes everything posted so far, in that
    /// order (invariant 1).
    pub(crate) fn collect(&self, drain: impl FnOnce()) -> Taken<E> {
        drain();
        self.take()
    }

    fn take(&self) -> Taken<E> {
        let mut mail = sync::lock(&self.mail);
        mail.wake_sent = false;
        Taken {
            new: std::mem::take(&mut mail.new),
            cancelled: std::mem::take(&mut mail.cancelled),
        }
    }
}

impl<E: Entry> Taken<E> {
    /// Adds the new children to `children`, stopping those cancelled already (invariant 4),
    /// then stops the cancelled ones it knows. A cancel for a child it does not know is for one
    /// that finished, or that arrives later and is stopped then.
    pub(crate) fn deliver(self, children: &mut HashMap<u64, E>) {
        for mut child in self.new {
            if child.is_cancelled() {
                child.stop();
            }
            children.insert(child.id(), child);
        }
        for id in self.cancelled {
            if let Some(child) = children.get_mut(&id) {
                child.stop();
            }
        }
    }
}
