//! [`WaitQueue`]: a first-in, first-out queue whose entries can also leave from the middle, by
//! the key `push_back` returned, in O(1): a scope's jobs waiting for a slot, any of which may
//! be cancelled while it waits.

use std::collections::VecDeque;

/// Entries are `Some` while queued; a removed one leaves a `None` behind, dropped when it
/// reaches the front. So memory is bounded by the span from the oldest waiting entry to the
/// newest.
#[derive(Debug)]
pub(crate) struct WaitQueue<T> {
    slots: VecDeque<Option<T>>,
    /// The key of `slots[0]`.
    front_key: u64,
    len: usize,
}

impl<T> WaitQueue<T> {
    pub(crate) fn new() -> Self {
        WaitQueue {
            slots: VecDeque::new(),
            front_key: 0,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Queues `value` last; returns its key.
    pub(crate) fn push_back(&mut self, value: T) -> u64 {
        let key = self.front_key + self.slots.len() as u64;
        self.slots.push_back(Some(value));
        self.len += 1;
        key
    }

    /// Takes out the oldest entry still queued.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        while let Some(slot) = self.slots.pop_front() {
            self.front_key += 1;
            if let Some(value) = slot {
                self.len -= 1;
                return Some(value);
            }
        }
        None
    }

    /// Takes out the entry under `key`, wherever it is; `None` if it left already.
    pub(crate) fn remove(&mut self, key: u64) -> Option<T> {
        let index = usize::try_from(key.checked_sub(self.front_key)?).ok()?;
        let value = self.slots.get_mut(index)?.take()?;
        self.len -= 1;
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::WaitQueue;

    #[test]
    fn entries_leave_in_order_or_by_key() {
        let mut queue = WaitQueue::new();
        let keys: Vec<u64> = (0..5).map(|i| queue.push_back(i)).collect();
        assert_eq!(queue.remove(keys[1]), Some(1));
        assert_eq!(queue.remove(keys[1]), None, "once only");
        assert_eq!(queue.pop_front(), Some(0));
        assert_eq!(queue.pop_front(), Some(2), "the removed one is skipped");
        assert_eq!(queue.remove(keys[0]), None, "a key that left the front");
        assert_eq!(queue.len(), 2);
        let late = queue.push_back(9);
        assert_eq!(queue.remove(late), Some(9));
        assert_eq!(
            (queue.pop_front(), queue.pop_front(), queue.pop_front()),
            (Some(3), Some(4), None)
        );
        assert_eq!(queue.len(), 0);
    }
}
