//! [`Waiting`]: a blocking wait run on a thread of its own, as a future any executor can
//! await (a pool's shutdown, awaited by a server).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tethered::ShutdownReport;

/// The report, once the waiting thread has it, and the waker of whoever awaits it.
#[derive(Default)]
struct Slot {
    report: Option<ShutdownReport>,
    waker: Option<Waker>,
}

/// Resolves to what a blocking wait, run on a thread of its own, returns.
pub(super) struct Waiting {
    slot: Arc<Mutex<Slot>>,
}

impl Waiting {
    /// Runs `wait` on a new thread; the future resolves to its report. If no thread can be
    /// had, `wait` runs here, now.
    pub(super) fn start(wait: impl FnOnce() -> ShutdownReport + Send + 'static) -> Waiting {
        let slot = Arc::new(Mutex::new(Slot::default()));
        let filled = slot.clone();
        let wait = Arc::new(Mutex::new(Some(wait)));
        let on_thread = wait.clone();
        let spawned = std::thread::Builder::new()
            .name("tethered-pool-shutdown".into())
            .spawn(move || {
                let wait = on_thread.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some(wait) = wait {
                    fill(&filled, wait());
                }
            });
        if spawned.is_err() {
            let wait = wait.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(wait) = wait {
                fill(&slot, wait());
            }
        }
        Waiting { slot }
    }
}

fn fill(slot: &Mutex<Slot>, report: ShutdownReport) {
    let waker = {
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.report = Some(report);
        slot.waker.take()
    };
    if let Some(waker) = waker {
        waker.wake();
    }
}

impl Future for Waiting {
    type Output = ShutdownReport;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ShutdownReport> {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        match slot.report.take() {
            Some(report) => Poll::Ready(report),
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
