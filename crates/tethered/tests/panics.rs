//! Panics from user code (callbacks, closures, panic payloads' and captured values' `Drop`s,
//! spawners) never escape a call into the library, never abort, and never wedge its state.

use std::panic::{AssertUnwindSafe, catch_unwind, panic_any};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::thread;
use std::time::Duration;

use tethered::{
    AbortableNative, CancelReason, CancelSource, JobOptions, NativeError, NativeScope, Runnable,
    SpawnError, Spawner, Tethered, stats,
};

mod support;
use std::num::NonZeroUsize;
use support::QueueSpawner;

/// The counters are process-wide: tests that compare them take turns.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A panic payload whose own `Drop` panics: the second panic the library must contain.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("a payload that panics when dropped");
    }
}

fn quiet_panics() {
    // The default hook prints every contained panic; these tests make dozens on purpose.
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let quiet = info
                .payload()
                .downcast_ref::<&str>()
                .is_some_and(|m| m.contains("panics when dropped") || m.contains("on purpose"))
                || info.payload().is::<PanicsOnDrop>();
            if !quiet {
                default(info);
            }
        }));
    });
}

#[test]
fn a_callback_panicking_with_a_payload_that_panics_on_drop_is_contained() {
    quiet_panics();
    let _serial = serial();
    let before = stats();
    let source = CancelSource::new();
    let ran_after = Arc::new(AtomicUsize::new(0));
    let guard = source.token().on_cancel(|_| panic_any(PanicsOnDrop));
    let after = ran_after.clone();
    source
        .token()
        .on_cancel(move |_| {
            after.fetch_add(1, Ordering::SeqCst);
        })
        .detach();

    let cancelled = catch_unwind(AssertUnwindSafe(|| source.cancel(CancelReason::Requested)));
    assert!(matches!(cancelled, Ok(true)), "no panic leaves cancel()");
    assert_eq!(
        ran_after.load(Ordering::SeqCst),
        1,
        "the next callback still ran"
    );
    let now = stats();
    assert_eq!(now.callback_panics, before.callback_panics + 1);
    assert_eq!(now.leaked_payloads, before.leaked_payloads + 1);

    // The "running" marker was cleared: dropping the guard elsewhere returns at once.
    let (done_tx, done) = mpsc::channel();
    thread::spawn(move || {
        drop(guard);
        done_tx.send(()).unwrap();
    });
    done.recv_timeout(Duration::from_secs(10))
        .expect("dropping the panicked callback's guard returns");

    // Registering on the cancelled token runs inline: contained there too.
    let inline = catch_unwind(AssertUnwindSafe(|| {
        source.token().on_cancel(|_| panic_any(PanicsOnDrop))
    }));
    assert!(inline.is_ok(), "no panic leaves on_cancel()");
    assert_eq!(stats().callback_panics, before.callback_panics + 2);
}

#[test]
fn a_cancel_guard_dropped_during_unwinding_does_not_abort() {
    quiet_panics();
    let _serial = serial();
    let source = CancelSource::new();
    source
        .token()
        .on_cancel(|_| panic_any(PanicsOnDrop))
        .detach();
    let token = source.token();
    // A panic unwinds through a scope holding the guard: its cancel runs during unwinding,
    // where a second escaping panic would abort the whole test process.
    let unwound = thread::spawn(move || {
        let _guard = source.drop_guard();
        panic!("unwinding on purpose");
    })
    .join();
    assert!(unwound.is_err());
    assert_eq!(token.reason(), Some(CancelReason::Dropped));
}

#[test]
fn dropping_the_handle_of_a_job_that_panicked_with_such_a_payload_does_not_panic() {
    quiet_panics();
    let _serial = serial();
    let before = stats();
    let (done_tx, done) = mpsc::channel();
    let job = AbortableNative::spawn(move |_| {
        let _signal = Signal(done_tx);
        panic_any(PanicsOnDrop)
    });
    done.recv().unwrap();
    while !job.is_finished() {
        thread::yield_now();
    }
    let dropped = catch_unwind(AssertUnwindSafe(|| drop(job)));
    assert!(
        dropped.is_ok(),
        "the payload's panic stays inside the library"
    );
    let now = stats();
    assert_eq!(now.panicked, before.panicked + 1);
    assert_eq!(
        now.drop_panics,
        before.drop_panics + 1,
        "the payload's drop, contained"
    );

    // And when the handle is gone before the closure panics, the runner drops it, contained.
    let (go_tx, go) = mpsc::channel::<()>();
    let job = tethered::spawn(
        JobOptions::new().on(tethered::ThreadSpawner::new()),
        move |_| {
            let _ = go.recv();
            panic_any(PanicsOnDrop)
        },
    )
    .unwrap();
    job.detach();
    go_tx.send(()).unwrap();
    tethered::testing::assert_all_returned(Duration::from_secs(10));
}

/// Sends when dropped, so the test knows the closure is past its last statement.
struct Signal(mpsc::Sender<()>);

impl Drop for Signal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// A captured value whose `Drop` panics.
struct CaptureThatPanicsOnDrop;

impl Drop for CaptureThatPanicsOnDrop {
    fn drop(&mut self) {
        panic!("a capture that panics when dropped");
    }
}

#[test]
fn a_queued_job_whose_capture_panics_on_drop_resolves_when_cancelled() {
    quiet_panics();
    let _serial = serial();
    let before = stats();
    let pool = QueueSpawner::default();
    let scope =
        NativeScope::with_spawner(pool.clone()).with_max_running(NonZeroUsize::new(1).unwrap());
    let blocker = scope.spawn(|token| token.wait()).unwrap();
    let capture = CaptureThatPanicsOnDrop;
    let queued = scope
        .spawn(move |_| {
            let _keep = &capture;
        })
        .unwrap();
    assert_eq!(scope.len(), 2);

    let cancelled = catch_unwind(AssertUnwindSafe(|| queued.cancel(CancelReason::Requested)));
    assert!(matches!(cancelled, Ok(true)));
    assert!(matches!(
        queued.join_blocking(),
        Err(NativeError::Cancelled {
            reason: CancelReason::Requested,
            ..
        })
    ));
    assert_eq!(scope.len(), 1, "no phantom straggler is left in the scope");
    assert_eq!(stats().drop_panics, before.drop_panics + 1);

    blocker.cancel(CancelReason::Requested);
    pool.take().run();
    assert!(blocker.join_blocking().unwrap_err().is_cancelled());
    assert!(scope.shutdown_blocking(Duration::from_secs(5)).is_clean());
}

/// Panics on its first spawn, then runs tasks on threads.
#[derive(Default)]
struct PanicsOnce {
    calls: AtomicUsize,
}

impl Spawner for PanicsOnce {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("a spawner that panics on purpose");
        }
        thread::spawn(move || task.run());
        Ok(())
    }
}

#[test]
fn a_spawner_that_panics_once_is_an_error_and_leaves_the_scope_working() {
    quiet_panics();
    let scope = NativeScope::with_spawner(PanicsOnce::default())
        .with_max_running(NonZeroUsize::new(1).unwrap());
    let first = catch_unwind(AssertUnwindSafe(|| scope.spawn(|_| 1)));
    let err = first
        .expect("the spawner's panic stays inside spawn()")
        .expect_err("a panicking spawner is a refusal");
    assert!(
        tethered::__private::error_chain(&err).contains("panicked"),
        "{err}"
    );
    // The slot it took is free again: later jobs run, in order, one at a time.
    let jobs: Vec<_> = (0..5).map(|i| scope.spawn(move |_| i).unwrap()).collect();
    for (i, job) in jobs.into_iter().enumerate() {
        assert_eq!(job.join_blocking().unwrap(), i);
    }
    assert!(scope.is_empty());
}

#[test]
fn a_waker_that_panics_is_contained() {
    quiet_panics();
    struct Panicky;
    impl std::task::Wake for Panicky {
        fn wake(self: Arc<Self>) {
            panic!("a waker that panics on purpose");
        }
    }
    let waker = std::task::Waker::from(Arc::new(Panicky));
    let mut cx = std::task::Context::from_waker(&waker);
    let source = CancelSource::new();
    let mut cancelled = Box::pin(source.token().cancelled());
    assert!(cancelled.as_mut().poll(&mut cx).is_pending());
    let result = catch_unwind(AssertUnwindSafe(|| source.cancel(CancelReason::Requested)));
    assert!(matches!(result, Ok(true)));
    assert_eq!(
        cancelled.as_mut().poll(&mut cx),
        std::task::Poll::Ready(CancelReason::Requested)
    );
}
