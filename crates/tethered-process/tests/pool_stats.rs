//! Leak accounting tells a pool's idle workers from running jobs: an idle worker counts in
//! `tethered::stats().idle`, a worker in a turn in `running`. (A binary of its own: the
//! process-wide counters must not see other tests' jobs.)

#![cfg(target_os = "linux")]

mod common;

use std::num::NonZeroUsize;
use std::sync::mpsc;

use common::pool::{WORKER, python};
use common::{SLACK, wait_until};
use tethered::{CancelReason, Tethered};
use tethered_process::Pool;

#[test]
fn idle_workers_count_as_idle_and_a_turn_as_running() {
    let before = tethered::stats();
    let pool = Pool::builder(python(WORKER))
        .size(NonZeroUsize::new(2).unwrap())
        .build()
        .expect("python3 starts");
    assert!(
        wait_until(SLACK, || tethered::stats().idle == before.idle + 2),
        "two idle workers: {:?}",
        tethered::stats()
    );
    assert_eq!(
        tethered::stats().running,
        before.running,
        "idle workers do not run"
    );
    // A turn: its request (a job) and its worker run.
    let (pid_tx, pid_rx) = mpsc::channel();
    let request = pool.run(move |worker| {
        pid_tx.send(worker.pid()).unwrap();
        worker.send_line("-1")?; // burns CPU until stopped
        worker.read_line()
    });
    pid_rx.recv_timeout(SLACK).expect("the turn runs");
    let busy = tethered::stats();
    assert_eq!(busy.idle, before.idle + 1, "{busy:?}");
    assert_eq!(
        busy.running,
        before.running + 2,
        "the request and its worker: {busy:?}"
    );
    request.cancel(CancelReason::Dropped);
    drop(request);
    let report = pool.shutdown_blocking(SLACK);
    assert!(report.is_clean(), "{report}");
    assert!(
        wait_until(SLACK, || {
            let now = tethered::stats();
            now.idle == before.idle && now.running == before.running
        }),
        "{:?}",
        tethered::stats()
    );
}
