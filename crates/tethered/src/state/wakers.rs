//! [`Wakers`]: the wakers of a token's pending `cancelled()` futures: the first one in a slot
//! of its own, the rest in a [`Registry`].
//!
//! Most tokens that have a waiter have exactly one (the task awaiting `cancelled()`), so that
//! one lives inline: registering it allocates no list, and a cancel takes it out and wakes it
//! without draining, or freeing, a list's buffer. In a fan-out of a thousand children each with
//! one waiter, the list cost more than the rest of each child's cancel (see `BENCHMARKS.md`).

use std::task::Waker;

use super::Key;
use super::registry::Registry;

#[derive(Default)]
pub(super) struct Wakers {
    /// The first waker (by arrival while the slot was free), with its key.
    first: Option<(Key, Waker)>,
    /// Every other one, in key order.
    rest: Registry<Waker>,
}

impl Wakers {
    pub(super) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }

    /// Adds `waker` under `key`, which is larger than every key added before.
    pub(super) fn push(&mut self, key: Key, waker: Waker) {
        if self.first.is_none() {
            self.first = Some((key, waker));
        } else {
            self.rest.push(key, waker);
        }
    }

    pub(super) fn get_mut(&mut self, key: Key) -> Option<&mut Waker> {
        match &mut self.first {
            Some((first, waker)) if *first == key => Some(waker),
            _ => self.rest.get_mut(key),
        }
    }

    /// Takes out the waker under `key`, if it is still there.
    pub(super) fn remove(&mut self, key: Key) -> Option<Waker> {
        match &self.first {
            Some((first, _)) if *first == key => self.first.take().map(|(_, waker)| waker),
            _ => self.rest.remove(key),
        }
    }

    /// Takes every waker out, for a cancel to wake: the usual lone waker without moving the
    /// (empty) list.
    pub(super) fn take(&mut self) -> ToWake {
        if self.rest.is_empty() {
            match self.first.take() {
                Some((_, waker)) => ToWake::One(waker),
                None => ToWake::None,
            }
        } else {
            ToWake::All(std::mem::take(self))
        }
    }

    /// Every waker, by value: the inline one first, then the rest in key order.
    pub(super) fn for_each(self, mut f: impl FnMut(Waker)) {
        if let Some((_, waker)) = self.first {
            f(waker);
        }
        if !self.rest.is_empty() {
            self.rest.into_values().for_each(f);
        }
    }
}

/// What [`Wakers::take`] took out, to be woken.
pub(super) enum ToWake {
    None,
    One(Waker),
    All(Wakers),
}

impl ToWake {
    /// Calls `f` with every waker taken.
    pub(super) fn for_each(self, mut f: impl FnMut(Waker)) {
        match self {
            ToWake::None => {}
            ToWake::One(waker) => f(waker),
            ToWake::All(wakers) => wakers.for_each(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::task::Wake;

    use super::*;

    /// A waker that writes its id into `woken` when woken.
    struct Recording {
        id: usize,
        woken: Arc<Mutex<Vec<usize>>>,
    }

    impl Wake for Recording {
        fn wake(self: Arc<Self>) {
            self.woken.lock().unwrap().push(self.id);
        }
    }

    fn waker(id: usize, woken: &Arc<Mutex<Vec<usize>>>) -> Waker {
        Waker::from(Arc::new(Recording {
            id,
            woken: woken.clone(),
        }))
    }

    #[test]
    fn the_first_waker_is_inline_and_the_others_follow_in_key_order() {
        let woken = Arc::new(Mutex::new(Vec::new()));
        let mut wakers = Wakers::default();
        for id in 1..=3 {
            wakers.push(id as Key, waker(id, &woken));
        }
        assert_eq!(wakers.len(), 3);
        assert!(wakers.get_mut(1).is_some() && wakers.get_mut(3).is_some());
        // The inline one leaves; a later one takes the free slot.
        assert!(wakers.remove(1).is_some());
        assert!(wakers.remove(1).is_none());
        wakers.push(4, waker(4, &woken));
        assert!(wakers.remove(2).is_some());
        assert_eq!(wakers.len(), 2);
        wakers.for_each(Waker::wake);
        assert_eq!(*woken.lock().unwrap(), [4, 3]);
    }

    #[test]
    fn an_empty_set_wakes_nobody() {
        let wakers = Wakers::default();
        assert!(wakers.is_empty());
        assert_eq!(wakers.len(), 0);
        let mut count = 0;
        wakers.for_each(|_| count += 1);
        assert_eq!(count, 0);
    }
}
