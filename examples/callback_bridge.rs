//! A native-backed future with its own `cancel()`: the shape of the original bug.
//!
//! A native engine (here a stand-in for a C SDK, a GPU queue, a database driver) runs a query on
//! its own thread, reports through a completion callback, and has `QueryHandle::cancel()`. The
//! usual async wrapper awaits the callback, but when the wrapper is dropped (a timeout, a lost
//! `select!`, a client that went away) nobody calls `cancel()`, and the engine works on. Wrapping
//! the future in `CancelOnDrop` and registering `cancel()` with `on_cancel` ties the two together.
//!
//! Run with: cargo run --example callback_bridge

use std::future::Future;
use std::time::Duration;

use tethered::{CancelOnDropExt, CancelSource};
use tokio::sync::oneshot;

/// The native engine's API, as its bindings expose it.
mod engine {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

    /// Queries running in the engine right now.
    static ACTIVE: AtomicUsize = AtomicUsize::new(0);

    /// How a query ended.
    #[derive(Debug, PartialEq, Eq)]
    pub(crate) enum Done {
        Rows(u64),
        Cancelled { after_rows: u64 },
    }

    /// The engine's handle to a running query. Dropping it does not stop the query: like many
    /// native APIs, only `cancel()` does.
    #[derive(Debug)]
    pub(crate) struct QueryHandle {
        cancelled: Arc<AtomicBool>,
    }

    impl QueryHandle {
        pub(crate) fn cancel(&self) {
            // ORDERING: Relaxed; the flag carries no data, and the query only needs to see it.
            self.cancelled.store(true, Ordering::Relaxed);
        }
    }

    /// Starts a query producing `rows` rows (1 ms each) on the engine's own thread; `on_done`
    /// is called there when it finishes or is cancelled.
    pub(crate) fn start(rows: u64, on_done: impl FnOnce(Done) + Send + 'static) -> QueryHandle {
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = cancelled.clone();
        ACTIVE.fetch_add(1, Ordering::Relaxed);
        std::thread::spawn(move || {
            let mut produced = 0;
            while produced < rows && !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                produced += 1;
            }
            ACTIVE.fetch_sub(1, Ordering::Relaxed);
            on_done(if produced == rows {
                Done::Rows(produced)
            } else {
                Done::Cancelled {
                    after_rows: produced,
                }
            });
        });
        QueryHandle { cancelled }
    }

    /// How many queries are running in the engine.
    pub(crate) fn active() -> usize {
        ACTIVE.load(Ordering::Relaxed)
    }
}

/// The usual wrapper: await the completion callback. Dropping this future drops the handle,
/// which does not cancel the query: the bug.
async fn query_naive(rows: u64) -> Option<engine::Done> {
    let (done_tx, done_rx) = oneshot::channel();
    let _handle = engine::start(rows, move |done| {
        let _ = done_tx.send(done);
    });
    done_rx.await.ok()
}

/// The tethered wrapper: the same future, wrapped in `CancelOnDrop`. Dropped unfinished, it
/// cancels `source`, and the cancel runs the callback registered with `on_cancel`, which calls
/// the engine's own `cancel()`.
fn query(rows: u64) -> impl Future<Output = Option<engine::Done>> {
    let source = CancelSource::new();
    let token = source.token();
    async move {
        let (done_tx, done_rx) = oneshot::channel();
        let handle = engine::start(rows, move |done| {
            let _ = done_tx.send(done);
        });
        // Lives as long as this future: once the query is done, the guard's drop unregisters
        // the callback, so a finished query is never cancelled.
        let _cancel_query = token.on_cancel(move |_reason| handle.cancel());
        done_rx.await.ok()
    }
    .cancel_on_drop(source)
}

/// Waits until the engine runs at most `queries` queries; whether it got there `within`.
async fn engine_settles_at(queries: usize, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while engine::active() > queries && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    engine::active() <= queries
}

#[tokio::main]
async fn main() {
    let patience = Duration::from_millis(50);

    // A query that finishes in time gives its rows, and leaves nothing running.
    assert_eq!(query(10).await, Some(engine::Done::Rows(10)));
    println!("a 10-row query, awaited to the end: Rows(10)");

    // The naive wrapper behind a timeout: the future is dropped, the query is not.
    assert!(
        tokio::time::timeout(patience, query_naive(60_000))
            .await
            .is_err()
    );
    let stopped = engine_settles_at(0, Duration::from_millis(200)).await;
    println!(
        "naive:    a 60,000-row query behind a {patience:?} timeout; 200 ms after the timeout the \
         engine still runs {} query",
        engine::active()
    );
    assert!(!stopped, "nothing called cancel(): the engine works on");

    // The tethered wrapper behind the same timeout: the drop reaches `cancel()`.
    assert!(tokio::time::timeout(patience, query(60_000)).await.is_err());
    let timed_out = tokio::time::Instant::now();
    let stopped = engine_settles_at(1, Duration::from_secs(5)).await;
    println!(
        "tethered: the same query behind the same timeout; the engine stopped it {:.1?} after \
         the timeout",
        timed_out.elapsed()
    );
    assert!(stopped, "the drop called cancel()");
    // The naive query would run for a minute; the end of the process ends it.
    println!(
        "still running in the engine: {} query (the naive one)",
        engine::active()
    );
}
