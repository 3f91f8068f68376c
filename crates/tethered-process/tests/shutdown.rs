//! A runtime that goes away with busy children: its drop returns, and the children are gone.

#![cfg(target_os = "linux")]

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::{Proc, SLACK, busy, wait_until};
use tethered_process::Process;

const GRACE: Duration = Duration::from_secs(2);

/// Runs `f` on a thread of its own; panics if it has not returned within `limit`.
fn returns_within(limit: Duration, what: &str, f: impl FnOnce() + Send + 'static) {
    let (done_tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = done_tx.send(());
    });
    done.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("{what} did not return within {limit:?}"));
}

#[test]
fn dropping_a_tokio_runtime_with_busy_children_returns_and_they_are_gone() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (pids_tx, pids) = mpsc::channel();
    for _ in 0..4 {
        let pids_tx = pids_tx.clone();
        runtime.spawn(async move {
            let job = Process::new(busy())
                .kill_after(GRACE)
                .spawn()
                .expect("sh starts");
            pids_tx
                .send(Proc::of(job.pid().expect("started")))
                .expect("the test listens");
            let _ = job.await; // never finishes by itself
        });
    }
    let children: Vec<Proc> = (0..4)
        .map(|_| {
            pids.recv_timeout(SLACK)
                .expect("every task spawned its child")
        })
        .collect();
    assert!(children.iter().all(Proc::is_running));
    // The drop drops the tasks, which cancels the jobs; it then waits for the blocking pool,
    // whose waiters return once their children are reaped.
    returns_within(GRACE + SLACK, "the runtime's drop", move || drop(runtime));
    for child in &children {
        assert!(
            wait_until(GRACE + SLACK, || !child.exists()),
            "pid {} outlived its runtime",
            child.pid
        );
    }
}

#[test]
fn dropping_a_smol_executor_with_busy_children_stops_them() {
    let executor = smol::Executor::new();
    let mut children = Vec::new();
    for _ in 0..3 {
        let job = Process::new(busy())
            .kill_after(GRACE)
            .spawn()
            .expect("sh starts");
        children.push(Proc::of(job.pid().expect("started")));
        executor
            .spawn(async move {
                let _ = job.await;
            })
            .detach();
    }
    // Let the tasks start awaiting.
    for _ in 0..10 {
        executor.try_tick();
    }
    returns_within(SLACK, "the executor's drop", move || drop(executor));
    for child in &children {
        assert!(wait_until(GRACE + SLACK, || !child.exists()));
    }
}

#[test]
fn cancelling_an_async_std_task_stops_its_child() {
    let job = Process::new(busy())
        .kill_after(GRACE)
        .spawn()
        .expect("sh starts");
    let child = Proc::of(job.pid().expect("started"));
    async_std::task::block_on(async move {
        let task = async_std::task::spawn(async move {
            let _ = job.await;
        });
        async_std::task::sleep(Duration::from_millis(20)).await;
        assert!(
            task.cancel().await.is_none(),
            "the child never ends by itself"
        );
    });
    assert!(wait_until(GRACE + SLACK, || !child.exists()));
}
