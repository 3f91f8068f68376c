//! `CancelOnDrop`: a future that cancels its source if dropped before completing.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures_executor::block_on;
use tethered::{CancelOnDrop, CancelOnDropExt, CancelReason, CancelSource};

#[test]
fn dropping_before_completion_cancels_with_dropped() {
    let source = CancelSource::new();
    let token = source.token();
    let mut fut = Box::pin(std::future::pending::<u8>().cancel_on_drop(source));
    assert!(
        fut.as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending()
    );
    assert!(!token.is_cancelled());
    assert!(!fut.is_completed());
    drop(fut);
    assert_eq!(token.reason(), Some(CancelReason::Dropped));
}

#[test]
fn dropping_unpolled_cancels_too() {
    let source = CancelSource::new();
    let token = source.token();
    drop(CancelOnDrop::new(async { 1 }, source));
    assert_eq!(token.reason(), Some(CancelReason::Dropped));
}

#[test]
fn completing_disarms_it() {
    let source = CancelSource::new();
    let token = source.token();
    let mut fut = Box::pin(CancelOnDrop::new(async { 42 }, source));
    assert_eq!(
        fut.as_mut().poll(&mut Context::from_waker(Waker::noop())),
        Poll::Ready(42)
    );
    assert!(fut.is_completed());
    drop(fut);
    assert!(!token.is_cancelled());
}

#[test]
fn token_is_a_token_of_the_source() {
    let source = CancelSource::new();
    let fut = CancelOnDrop::new(async {}, source.clone());
    assert!(fut.token().same_as(&source.token()));
    block_on(fut);
}

#[test]
fn an_earlier_cancel_keeps_its_reason() {
    let source = CancelSource::new();
    let token = source.token();
    let fut = std::future::pending::<()>().cancel_on_drop(source.clone());
    source.cancel(CancelReason::Timeout);
    drop(fut);
    assert_eq!(token.reason(), Some(CancelReason::Timeout));
}

/// A future backed by native work that has its own `cancel()`, as many FFI bindings do.
struct NativeOperation {
    cancelled: Arc<AtomicBool>,
}

impl NativeOperation {
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }
}

impl Future for NativeOperation {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

#[test]
fn with_on_cancel_it_wires_a_native_cancel_method_to_drop() {
    let cancelled = Arc::new(AtomicBool::new(false));
    let operation = Arc::new(Mutex::new(NativeOperation {
        cancelled: cancelled.clone(),
    }));
    let source = CancelSource::new();
    let handle = operation.clone();
    let guard = source
        .token()
        .on_cancel(move |_| handle.lock().unwrap().cancel());
    let fut = async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    }
    .cancel_on_drop(source);
    let mut fut = Box::pin(fut);
    assert!(
        fut.as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending()
    );
    drop(fut);
    assert!(cancelled.load(Ordering::SeqCst));
}

#[test]
fn debug_output_says_whether_completed() {
    let fut = CancelOnDrop::new(async {}, CancelSource::new());
    assert!(format!("{fut:?}").starts_with("CancelOnDrop { completed: false"));
}
