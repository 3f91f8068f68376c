//! [`Registry`]: a token's callbacks (or wakers), in key order.
//!
//! Keys only grow, so a new entry always goes last, and the entries stay sorted by key in a
//! `VecDeque`: one small buffer for the usual one or two registrations (a `BTreeMap` allocates
//! a node of eleven entries for the first), found by binary search, taken from the front in
//! registration order. An entry removed from the middle leaves a hole, and holes are swept out
//! once they outnumber the entries, so each removal costs O(log n) amortised and memory stays
//! within twice the live entries.

use std::collections::VecDeque;

use super::Key;

pub(super) struct Registry<T> {
    /// `(key, Some(value))` for a live entry, `(key, None)` for a hole; sorted by key.
    slots: VecDeque<(Key, Option<T>)>,
    live: usize,
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Registry {
            slots: VecDeque::new(),
            live: 0,
        }
    }
}

impl<T> Registry<T> {
    pub(super) fn len(&self) -> usize {
        self.live
    }

    pub(super) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Adds `value` under `key`, which is larger than every key added before.
    pub(super) fn push(&mut self, key: Key, value: T) {
        debug_assert!(self.slots.back().is_none_or(|(last, _)| *last < key));
        self.slots.push_back((key, Some(value)));
        self.live += 1;
    }

    fn find(&self, key: Key) -> Option<usize> {
        self.slots.binary_search_by_key(&key, |(k, _)| *k).ok()
    }

    pub(super) fn contains(&self, key: Key) -> bool {
        self.find(key)
            .is_some_and(|index| self.slots[index].1.is_some())
    }

    pub(super) fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        let index = self.find(key)?;
        self.slots[index].1.as_mut()
    }

    /// Takes out the entry under `key`, if it is still there.
    pub(super) fn remove(&mut self, key: Key) -> Option<T> {
        let index = self.find(key)?;
        let value = self.slots[index].1.take()?;
        self.live -= 1;
        self.sweep();
        Some(value)
    }

    /// Takes out the entry with the smallest key.
    pub(super) fn pop_first(&mut self) -> Option<(Key, T)> {
        while let Some((key, slot)) = self.slots.pop_front() {
            if let Some(value) = slot {
                self.live -= 1;
                return Some((key, value));
            }
        }
        None
    }

    /// Takes out every entry `pick` chooses and hands each to `out`, in key order.
    pub(super) fn take_where(&mut self, mut pick: impl FnMut(&T) -> bool, mut out: impl FnMut(T)) {
        let Registry { slots, live } = self;
        let mut taken = false;
        for (_, slot) in slots.iter_mut() {
            if slot.as_ref().is_some_and(&mut pick) {
                if let Some(value) = slot.take() {
                    *live -= 1;
                    taken = true;
                    out(value);
                }
            }
        }
        if taken {
            self.sweep();
        }
    }

    /// Every live value, in key order, leaving the registry empty.
    pub(super) fn into_values(self) -> impl Iterator<Item = T> {
        self.slots.into_iter().filter_map(|(_, value)| value)
    }

    /// Drops the holes at the front, and all of them once they outnumber the live entries.
    fn sweep(&mut self) {
        while self.slots.front().is_some_and(|(_, value)| value.is_none()) {
            self.slots.pop_front();
        }
        while self.slots.back().is_some_and(|(_, value)| value.is_none()) {
            self.slots.pop_back();
        }
        if self.slots.len() > 2 * self.live + 8 {
            self.slots.retain(|(_, value)| value.is_some());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Registry;

    #[test]
    fn entries_come_out_in_key_order_and_leave_by_key() {
        let mut registry = Registry::default();
        for key in 0..100 {
            registry.push(key, key * 10);
        }
        assert_eq!(registry.remove(50), Some(500));
        assert_eq!(registry.remove(50), None, "once only");
        assert!(!registry.contains(50));
        assert!(registry.contains(51));
        *registry.get_mut(51).unwrap() = 1;
        assert_eq!(registry.pop_first(), Some((0, 0)));
        assert_eq!(registry.len(), 98);
        for key in (2..100).step_by(2) {
            registry.remove(key);
        }
        assert!(
            registry.slots.len() <= 2 * registry.len() + 8,
            "holes are swept"
        );
        let mut threes = Vec::new();
        registry.take_where(|value| *value % 3 == 0, |value| threes.push(value));
        assert_eq!(threes[..3], [30, 90, 150], "taken in key order");
        assert!(!registry.contains(3) && registry.contains(5));
        registry.take_where(|value| *value == 1, |value| threes.push(value));
        for value in [10, 50, 70] {
            registry.push(1_000 + value, value);
        }
        let rest: Vec<_> = registry.into_values().collect();
        // The odd keys not taken are left, in order, then the three pushed after the takes.
        assert_eq!(threes.len(), 17, "16 multiples of 30, and 51's 1");
        assert_eq!(
            threes.last(),
            Some(&1),
            "51's value, changed in place, then taken"
        );
        assert_eq!(rest.len(), 50 - 17 + 3);
        assert_eq!(rest[..3], [10, 50, 70]);
        assert_eq!(rest[rest.len() - 3..], [10, 50, 70]);
    }

    #[test]
    fn a_million_removals_in_any_order_stay_cheap() {
        let mut registry = Registry::default();
        for key in 0..1_000_000u64 {
            registry.push(key, ());
        }
        // Every third from the middle outwards, then the rest: no quadratic shifting.
        for key in (0..1_000_000u64).rev().step_by(3) {
            registry.remove(key);
        }
        for key in 0..1_000_000u64 {
            registry.remove(key);
        }
        assert!(registry.is_empty());
        assert_eq!(registry.pop_first(), None);
    }
}
