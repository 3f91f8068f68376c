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

use crate::sync::{self, Mutex};

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

    /// Takes everything posted so far. Call only after draining the wake channel
    /// (invariant 1).
    pub(crate) fn take(&self) -> Taken<E> {
        let mut mail = sync::lock(&self.mail);
        mail.wake_sent = false;
        Taken {
            new: std::mem::take(&mut mail.new),
            cancelled: std::mem::take(&mut mail.cancelled),
        }
    }
}
