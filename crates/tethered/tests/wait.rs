//! Waiting for a cancel: the `cancelled()` future and `wait_timeout`.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use futures_executor::block_on;
use tethered::{CancelReason, CancelSource};

struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (Arc<CountingWaker>, Waker) {
    let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
    (counter.clone(), Waker::from(counter))
}

#[test]
fn cancelled_future_resolves_with_the_reason_from_another_thread() {
    let source = CancelSource::new();
    let token = source.token();
    let canceller = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        source.cancel(CancelReason::Timeout)
    });
    assert_eq!(block_on(token.cancelled()), CancelReason::Timeout);
    assert!(canceller.join().unwrap());
}

#[test]
fn cancelled_future_is_ready_at_once_when_already_cancelled() {
    let source = CancelSource::new();
    source.cancel(CancelReason::Shutdown);
    let (_, waker) = counting_waker();
    let mut fut = pin!(source.token().cancelled());
    assert_eq!(
        fut.as_mut().poll(&mut Context::from_waker(&waker)),
        Poll::Ready(CancelReason::Shutdown)
    );
}

#[test]
fn cancel_wakes_the_latest_waker_exactly_once() {
    let source = CancelSource::new();
    let token = source.token();
    let (first_count, first) = counting_waker();
    let (second_count, second) = counting_waker();
    let mut fut = pin!(token.cancelled());
    assert!(
        fut.as_mut()
            .poll(&mut Context::from_waker(&first))
            .is_pending()
    );
    assert!(
        fut.as_mut()
            .poll(&mut Context::from_waker(&second))
            .is_pending()
    );
    assert_eq!(
        token.registrations(),
        1,
        "a re-poll replaces, not adds, the waker"
    );
    source.cancel(CancelReason::Requested);
    assert_eq!(first_count.0.load(Ordering::SeqCst), 0);
    assert_eq!(second_count.0.load(Ordering::SeqCst), 1);
    assert_eq!(
        fut.as_mut().poll(&mut Context::from_waker(&second)),
        Poll::Ready(CancelReason::Requested)
    );
}

#[test]
fn dropping_a_pending_cancelled_future_removes_its_waker() {
    let source = CancelSource::new();
    let token = source.token();
    let (count, waker) = counting_waker();
    for _ in 0..1000 {
        let mut fut = Box::pin(token.cancelled());
        assert!(
            fut.as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        assert_eq!(token.registrations(), 1);
    }
    assert_eq!(token.registrations(), 0);
    source.cancel(CancelReason::Requested);
    assert_eq!(count.0.load(Ordering::SeqCst), 0);
}

#[test]
fn many_futures_on_many_threads_all_resolve() {
    let source = CancelSource::new();
    let waiters: Vec<_> = (0..8)
        .map(|_| {
            let token = source.token();
            thread::spawn(move || block_on(token.cancelled()))
        })
        .collect();
    thread::sleep(Duration::from_millis(20));
    source.cancel(CancelReason::Shutdown);
    for waiter in waiters {
        assert_eq!(waiter.join().unwrap(), CancelReason::Shutdown);
    }
}

#[test]
fn wait_timeout_returns_none_after_the_timeout() {
    let source = CancelSource::new();
    let start = Instant::now();
    assert_eq!(source.token().wait_timeout(Duration::from_millis(30)), None);
    assert!(start.elapsed() >= Duration::from_millis(30));
}

#[test]
fn wait_timeout_with_zero_timeout_does_not_block() {
    let source = CancelSource::new();
    assert_eq!(source.token().wait_timeout(Duration::ZERO), None);
    source.cancel(CancelReason::Timeout);
    assert_eq!(
        source.token().wait_timeout(Duration::ZERO),
        Some(CancelReason::Timeout)
    );
}

#[test]
fn wait_timeout_wakes_on_cancel_long_before_the_timeout() {
    let source = CancelSource::new();
    let token = source.token();
    let sleeper = thread::spawn(move || {
        let start = Instant::now();
        let reason = token.wait_timeout(Duration::from_secs(600));
        (reason, start.elapsed())
    });
    thread::sleep(Duration::from_millis(50));
    source.cancel(CancelReason::Dropped);
    let (reason, slept) = sleeper.join().unwrap();
    assert_eq!(reason, Some(CancelReason::Dropped));
    assert!(slept < Duration::from_secs(60), "slept {slept:?}");
}

#[test]
fn wait_timeout_with_huge_timeout_still_wakes_on_cancel() {
    let source = CancelSource::new();
    let token = source.token();
    let sleeper = thread::spawn(move || token.wait_timeout(Duration::MAX));
    thread::sleep(Duration::from_millis(20));
    source.cancel(CancelReason::Shutdown);
    assert_eq!(sleeper.join().unwrap(), Some(CancelReason::Shutdown));
}

#[test]
fn blocking_wait_returns_the_reason() {
    let source = CancelSource::new();
    let token = source.token();
    let waiter = thread::spawn(move || token.wait());
    source.cancel(CancelReason::Requested);
    assert_eq!(waiter.join().unwrap(), CancelReason::Requested);
}
