//! Blocking on a token: the waits of native code, and a guard waiting for its callback to
//! return, all on the token's condition variable (invariant 6).

use std::time::{Duration, Instant};

use super::{Shared, TokenState};
use crate::reason::CancelReason;
use crate::sync::{self, MutexGuard};

impl TokenState {
    /// Blocks on `changed` (for at most `timeout`, if given), counted in `sleepers` (invariant
    /// 6). The caller has just found, under this lock, that what it waits for is still false.
    pub(super) fn sleep<'a>(
        &'a self,
        mut shared: MutexGuard<'a, Shared>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Shared> {
        shared.sleepers += 1;
        let mut shared = match timeout {
            Some(timeout) => sync::wait_timeout(&self.changed, shared, timeout),
            None => sync::wait(&self.changed, shared),
        };
        shared.sleepers -= 1;
        shared
    }

    /// The reason if cancelled, read by a holder of the lock about to sleep: a bare token
    /// becomes active first, so that its cancel takes the lock and wakes the sleeper (a
    /// lock-free cancel would not).
    fn cancelled_under_lock(&self) -> Option<CancelReason> {
        if sleeper_keeps_bare() {
            return self.reason_now();
        }
        if self.flag_under_lock() & super::CANCELLED_BIT == 0 {
            return None;
        }
        self.reason_now()
    }

    /// Blocks until cancelled or until `timeout` has passed. A timeout too large for an
    /// `Instant` means no deadline.
    pub(crate) fn wait_timeout(&self, timeout: Duration) -> Option<CancelReason> {
        let deadline = Instant::now().checked_add(timeout);
        let mut shared = sync::lock(&self.shared);
        loop {
            if let Some(reason) = self.cancelled_under_lock() {
                return Some(reason);
            }
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                // Re-checked once a day, which changes nothing but the size of the wait.
                None => Duration::from_secs(60 * 60 * 24),
            };
            if left.is_zero() {
                return None;
            }
            shared = self.sleep(shared, Some(left));
        }
    }

    /// Blocks until cancelled (forever, on a sealed token).
    pub(crate) fn wait(&self) -> CancelReason {
        let mut shared = sync::lock(&self.shared);
        loop {
            if let Some(reason) = self.cancelled_under_lock() {
                return reason;
            }
            shared = self.sleep(shared, None);
        }
    }
}

/// Whether a thread about to sleep leaves a bare token bare. Never, but in a loom build whose
/// negative control puts that back: then a lock-free cancel does not wake it.
fn sleeper_keeps_bare() -> bool {
    #[cfg(tethered_loom)]
    if crate::fault::put_back("sleeper_keeps_token_bare") {
        return true;
    }
    false
}
