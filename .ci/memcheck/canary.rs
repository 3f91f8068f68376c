//! Leaks on purpose: two nodes that own each other through `Arc`s (the kind of cycle tokens,
//! children, jobs and scopes could form), left with no owner outside the cycle.
//!
//! `.ci/memcheck.sh` runs this under the same valgrind options as the tests and fails unless
//! valgrind reports the leak: a memcheck that could not see this cycle would pass any test.

use std::sync::{Arc, Mutex};

struct Node {
    next: Mutex<Option<Arc<Node>>>,
    _payload: Vec<u8>,
}

fn main() {
    let a = Arc::new(Node {
        next: Mutex::new(None),
        _payload: vec![1; 64],
    });
    let b = Arc::new(Node {
        next: Mutex::new(Some(Arc::clone(&a))),
        _payload: vec![2; 64],
    });
    *a.next.lock().expect("not poisoned") = Some(Arc::clone(&b));
    drop((a, b));
    println!("canary: dropped both handles to a cycle of two nodes");
}
