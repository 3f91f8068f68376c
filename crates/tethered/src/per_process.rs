//! [`PerProcess`]: a process-wide value that a forked child makes afresh.

use std::fmt;
use std::sync::OnceLock;

/// A process-wide value (a supervisor thread's handle, a timer) that a forked child makes
/// afresh on first use instead of taking its parent's.
///
/// After `fork()` only the forking thread exists in the child: a process-wide singleton whose
/// thread lived in the parent is a ghost there, and a lock another parent thread held at the
/// fork stays locked forever. `PerProcess` keeps one value per process, found by its pid in a
/// list that only grows, and never touches another process's value: the child's first `get`
/// makes its own with `init`. Lookups take no lock (the first `get` of a process initialises
/// its entry once). A child whose pid equals that of an ancestor which forked it and has since
/// exited (a pid that came around within one lineage) would take that ancestor's value.
///
/// Every process-wide thread of this family is kept this way, so gunicorn's preload,
/// `multiprocessing`'s fork and a daemonising service get working machinery in the child.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use tethered::__private::PerProcess;
///
/// static MADE: AtomicUsize = AtomicUsize::new(0);
/// static COUNTER: PerProcess<AtomicUsize> = PerProcess::new(|| {
///     MADE.fetch_add(1, Ordering::SeqCst);
///     AtomicUsize::new(0)
/// });
/// COUNTER.get().fetch_add(1, Ordering::SeqCst);
/// COUNTER.get().fetch_add(1, Ordering::SeqCst);
/// assert_eq!(COUNTER.get().load(Ordering::SeqCst), 2);
/// assert_eq!(MADE.load(Ordering::SeqCst), 1); // once in this process
/// ```
pub struct PerProcess<T: 'static> {
    head: OnceLock<Box<Node<T>>>,
    init: fn() -> T,
}

struct Node<T> {
    pid: u32,
    value: T,
    next: OnceLock<Box<Node<T>>>,
}

impl<T: 'static> PerProcess<T> {
    /// A value made by `init` in each process on its first [`get`](Self::get).
    pub const fn new(init: fn() -> T) -> Self {
        PerProcess {
            head: OnceLock::new(),
            init,
        }
    }

    /// This process's value, made on the first call in this process.
    pub fn get(&'static self) -> &'static T {
        self.get_with_pid().0
    }

    /// This process's value and its pid.
    pub(crate) fn get_with_pid(&'static self) -> (&'static T, u32) {
        let pid = std::process::id();
        let mut slot = &self.head;
        loop {
            let node = slot.get_or_init(|| {
                Box::new(Node {
                    pid,
                    value: (self.init)(),
                    next: OnceLock::new(),
                })
            });
            if node.pid == pid {
                return (&node.value, pid);
            }
            slot = &node.next;
        }
    }
}

impl<T: 'static> fmt::Debug for PerProcess<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerProcess").finish_non_exhaustive()
    }
}
