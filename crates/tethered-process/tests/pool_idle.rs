//! A pool whose workers leave by themselves while idle (an idle timeout of their own): no
//! request goes to a worker that is gone, such an exit is nobody's failure, and a request that
//! waits for a worker still hears its cancel.

#![cfg(target_os = "linux")]

mod common;

use std::num::NonZeroU32;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use common::{SLACK, wait_until};
use tethered::{CancelReason, Tethered};
use tethered_process::{Pool, Worker};

/// A worker that answers each line with `done <line>`, and exits cleanly after `idle`
/// seconds without a request.
fn idle_worker(idle: f64) -> impl Fn() -> Command + Send + Sync + 'static {
    move || {
        let mut command = Command::new("python3");
        command.args([
            "-u",
            "-c",
            &format!(
                "import select, sys\n\
                 while True:\n\
                 \x20   ready, _, _ = select.select([sys.stdin], [], [], {idle})\n\
                 \x20   if not ready:\n\
                 \x20       sys.exit(0)\n\
                 \x20   line = sys.stdin.readline()\n\
                 \x20   if not line:\n\
                 \x20       sys.exit(0)\n\
                 \x20   print('done ' + line.strip(), flush=True)\n"
            ),
        ]);
        command
    }
}

/// A turn that sends `n` and gives the reply and the worker's pid.
fn ask(n: u32) -> impl FnOnce(&mut Worker) -> std::io::Result<(String, u32)> {
    move |worker| {
        worker.send_line(&n.to_string())?;
        Ok((worker.read_line()?, worker.pid()))
    }
}

/// Whether `pid` has exited (a zombie not yet reaped, or gone).
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

#[test]
fn a_request_sent_as_soon_as_the_worker_idled_out_goes_to_a_fresh_worker() {
    let pool = Pool::builder(idle_worker(0.2))
        .build()
        .expect("python3 starts");
    for round in 0..10 {
        let (reply, pid) = pool
            .run(ask(round))
            .join_blocking()
            .expect("served")
            .unwrap_or_else(|err| panic!("round {round}: {err}"));
        assert_eq!(reply, format!("done {round}"));
        assert!(wait_until(SLACK, || exited(pid)), "the worker idles out");
        // At once: the worker has exited, and the pool may not have noticed yet.
    }
    let (reply, _) = pool.run(ask(99)).join_blocking().unwrap().unwrap();
    assert_eq!(reply, "done 99");
    let stats = pool.stats();
    assert_eq!(
        stats.start_failures, 0,
        "an idle exit is nobody's failure: {stats:?}"
    );
    assert!(stats.broken.is_none(), "{stats:?}");
    assert!(stats.idle_exits >= 10, "{stats:?}");
    assert!(pool.shutdown_blocking(SLACK).is_clean());
}

#[test]
fn requests_at_gaps_of_one_and_a_half_to_four_idle_times_all_succeed() {
    let pool = Pool::builder(idle_worker(0.1))
        .build()
        .expect("python3 starts");
    let gaps = [150, 200, 250, 300, 400, 150, 200, 250, 300, 400];
    for (round, gap) in gaps.into_iter().enumerate() {
        std::thread::sleep(Duration::from_millis(gap));
        let answer = pool.run(ask(round as u32)).join_blocking().expect("served");
        assert!(answer.is_ok(), "round {round} after {gap} ms: {answer:?}");
    }
    let stats = pool.stats();
    assert_eq!(stats.start_failures, 0, "{stats:?}");
    assert!(pool.shutdown_blocking(SLACK).is_clean());
}

#[test]
fn a_request_waiting_for_a_worker_that_cannot_start_hears_its_cancel() {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let worker = idle_worker(0.1);
    let pool = Pool::builder(move || {
        if counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            worker()
        } else {
            Command::new("/no/such/worker") // every replacement fails to start
        }
    })
    .max_failures(NonZeroU32::new(1_000).unwrap())
    .build()
    .expect("the first worker starts");
    // The first worker idles out; the pool waits for a request before it replaces it.
    assert!(wait_until(SLACK, || pool.stats().idle_exits == 1));
    let request = pool.run(ask(1));
    // The seat tries to start a worker, fails, and hands the request back to the queue.
    assert!(wait_until(SLACK, || pool.stats().start_failures >= 2));
    assert!(request.cancel(CancelReason::Dropped));
    let (done_tx, done) = mpsc::channel();
    std::thread::spawn(move || done_tx.send(request.join_blocking()).unwrap());
    let stopped = done
        .recv_timeout(SLACK)
        .expect("a cancelled request waiting for a worker leaves the queue at once")
        .unwrap_err();
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Dropped));
    assert!(
        wait_until(SLACK, || pool.stats().waiting == 0),
        "{:?}",
        pool.stats()
    );
    assert!(pool.stats().broken.is_none());
    pool.shutdown_blocking(SLACK);
}
