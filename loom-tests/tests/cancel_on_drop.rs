//! Model 6: `CancelOnDrop`, its inner future completing against the wrapper being dropped.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use loom_tests::{
    model,
    sync::{Arc, AtomicBool, Ordering},
    thread,
};
use tethered::{CancelOnDrop, CancelReason, CancelSource};

/// Ready once another thread set the flag.
struct Flagged(Arc<AtomicBool>);

impl Future for Flagged {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0.load(Ordering::SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[test]
fn completion_disarms_and_drop_before_completion_cancels() {
    model("cancel_on_drop_completion_vs_drop", || {
        let ready = Arc::new(AtomicBool::new(false));
        let source = CancelSource::new();
        let token = source.token();
        let setter = {
            let ready = ready.clone();
            thread::spawn(move || ready.store(true, Ordering::SeqCst))
        };
        let mut wrapped = Box::pin(CancelOnDrop::new(Flagged(ready), source));
        let completed = wrapped
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready();
        assert_eq!(wrapped.is_completed(), completed);
        drop(wrapped);
        setter.join().unwrap();
        if completed {
            assert!(!token.is_cancelled(), "a completed wrapper must not cancel");
        } else {
            assert_eq!(token.reason(), Some(CancelReason::Dropped));
        }
    });
}
