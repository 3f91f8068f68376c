//! `tethered::testing`: the end-of-test proof that no native job leaked.
//!
//! Process-wide counters: the tests of this file (its own binary) take turns.

use std::sync::{Mutex, MutexGuard, mpsc};
use std::time::Duration;

use tethered::AbortableNative;
use tethered::testing::{assert_all_returned, wait_all_returned};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn passes_once_cancelled_jobs_have_returned() {
    let _serial = serial();
    let jobs: Vec<_> = (0..4)
        .map(|_| AbortableNative::spawn(|token| token.wait()))
        .collect();
    drop(jobs);
    assert_all_returned(Duration::from_secs(10));
}

#[test]
fn reports_a_leaked_job_with_the_counts() {
    let _serial = serial();
    let (started_tx, started) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    let job = AbortableNative::spawn(move |_token| {
        started_tx.send(()).unwrap();
        release.recv().unwrap(); // ignores its token: a leak
    });
    started.recv().unwrap();
    drop(job);
    let err = wait_all_returned(Duration::from_millis(50)).unwrap_err();
    assert_eq!(err.running, 1);
    assert!(err.waited >= Duration::from_millis(50));
    assert!(
        err.to_string()
            .starts_with("native jobs leaked: 1 closure(s) still running and 0 queued after"),
        "{err}"
    );
    let panic =
        std::panic::catch_unwind(|| assert_all_returned(Duration::from_millis(10))).unwrap_err();
    assert!(
        panic
            .downcast_ref::<String>()
            .unwrap()
            .contains("native jobs leaked")
    );
    release_tx.send(()).unwrap();
    assert_all_returned(Duration::from_secs(10));
}
