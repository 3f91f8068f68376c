//! `Pool`: long-lived python3 workers speaking a line protocol. A request dropped during its
//! turn stops its worker at once and a fresh one serves the next; crash loops back off and give
//! up with a clear error; a closed or dropped pool stops every worker.

#![cfg(target_os = "linux")]

mod common;

use std::io;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::pool::{WORKER, ask, python, runtime};
use common::{Proc, SLACK, median_and_worst, wait_until};
use std::num::{NonZeroU32, NonZeroUsize};
use tethered::{CancelReason, NativeError, Tethered};
use tethered_process::{Pool, Worker};

#[test]
fn a_busy_turn_dropped_mid_request_stops_its_worker_at_once_and_a_fresh_one_serves_next() {
    let grace = Duration::from_secs(2);
    let pool = Pool::builder(python(WORKER))
        .size(NonZeroUsize::new(1).unwrap())
        .kill_after(grace)
        .build()
        .expect("python3 starts");
    let runtime = runtime();
    let mut times = Vec::new();
    for round in 0..50 {
        let (pid_tx, pid_rx) = mpsc::channel();
        let request = pool.run(ask(-1, Some(pid_tx)));
        let pid = pid_rx.recv_timeout(SLACK).expect("a worker takes the turn");
        let worker = Proc::of(pid);
        // The caller gives up: the timeout drops the request during its turn.
        let timed_out =
            runtime.block_on(async { request.timeout(Duration::from_millis(20)).await });
        let dropped = Instant::now();
        assert!(
            timed_out.is_err(),
            "round {round}: a busy turn never answers"
        );
        assert!(
            wait_until(grace + SLACK, || !worker.exists()),
            "round {round}: the worker {pid} is still there"
        );
        times.push(dropped.elapsed());
        // The next request is served, by a fresh worker.
        let (pid_tx, pid_rx) = mpsc::channel();
        let next = pool.run(ask(1, Some(pid_tx)));
        assert_eq!(
            next.join_blocking().expect("served").expect("answered"),
            "done 1"
        );
        assert_ne!(pid_rx.recv().expect("its worker"), pid);
    }
    let (median, worst) = median_and_worst(&mut times);
    println!("turn dropped to worker gone: median {median:.1?}, worst {worst:.1?} (50 runs)");
    let stats = pool.stats();
    assert_eq!(stats.cancelled_mid_turn, 50, "{stats:?}");
    assert_eq!(stats.replaced, 50, "{stats:?}");
    assert_eq!(stats.served, 50, "{stats:?}");
    let report = pool.shutdown_blocking(SLACK);
    assert_eq!(report.stragglers.len(), 0);
}

#[test]
fn a_crash_loop_backs_off_and_gives_up_with_the_reason() {
    let pool = Pool::builder(python("import sys\nsys.exit(3)"))
        .size(NonZeroUsize::new(1).unwrap())
        .max_failures(NonZeroU32::new(4).unwrap())
        .build()
        .expect("python3 starts (and then exits)");
    let started = Instant::now();
    let request = pool.run(ask(1, None));
    match request.join_blocking() {
        // The first worker took it and closed its stdout, or the pool gave up first.
        Ok(Err(err)) => assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof),
        Err(stopped @ NativeError::Cancelled { .. }) => {
            assert_eq!(stopped.cancel_reason(), Some(CancelReason::Failed));
            let why = stopped
                .cause()
                .expect("the reason the pool gave up")
                .to_string();
            assert!(why.contains("gave up"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert!(wait_until(SLACK, || pool.stats().broken.is_some()));
    let took = started.elapsed();
    let stats = pool.stats();
    // Four failures in a row, with 10 + 20 + 40 ms of backoff between them: no hot loop.
    assert_eq!(stats.start_failures, 4, "{stats:?}");
    assert!(took >= Duration::from_millis(70), "gave up after {took:?}");
    let why = stats.broken.expect("broken");
    assert!(why.contains("4 workers in a row"), "{why}");
    // Later requests are refused with the same reason, at once.
    let refused = pool.run(ask(1, None)).join_blocking().unwrap_err();
    assert_eq!(refused.cancel_reason(), Some(CancelReason::Failed));
    assert!(refused.cause().unwrap().to_string().contains("gave up"));
    assert!(wait_until(SLACK, || pool.stats().live == 0));
}

#[test]
fn a_missing_program_is_an_error_at_build() {
    let missing = Pool::builder(|| Command::new("/no/such/worker"))
        .build()
        .unwrap_err();
    assert!(
        matches!(&missing, tethered::SpawnError::Start(err) if err.kind() == io::ErrorKind::NotFound),
        "{missing:?}"
    );
}

#[test]
fn a_worker_that_ignores_sigterm_is_killed_after_the_grace() {
    const STUBBORN: &str = "import signal, sys\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\nfor line in sys.stdin:\n    while True:\n        pass\n";
    let grace = Duration::from_millis(300);
    let pool = Pool::builder(python(STUBBORN))
        .kill_after(grace)
        .build()
        .expect("python3 starts");
    let (pid_tx, pid_rx) = mpsc::channel();
    let request = pool.run(move |worker: &mut Worker| {
        // Its handler is set once it says so.
        let ready = worker.read_line();
        let _ = pid_tx.send(worker.pid());
        ready?;
        worker.send_line("spin")?;
        worker.read_line()
    });
    let worker = Proc::of(pid_rx.recv_timeout(SLACK).expect("the turn runs"));
    let dropped = Instant::now();
    drop(request);
    assert!(wait_until(grace + SLACK, || !worker.exists()));
    assert!(
        dropped.elapsed() >= grace,
        "SIGTERM was ignored: SIGKILL came after the grace"
    );
    // Counted once its seat has seen the reap.
    assert!(
        wait_until(SLACK, || pool.stats().cancelled_mid_turn == 1),
        "{:?}",
        pool.stats()
    );
}

#[test]
fn a_worker_that_forked_a_grandchild_takes_it_along() {
    let pool = Pool::builder(python(WORKER))
        .build()
        .expect("python3 starts");
    let grandchild: u32 = pool
        .run(|worker: &mut Worker| {
            worker.send_line("fork")?;
            worker.read_line()
        })
        .join_blocking()
        .expect("served")
        .expect("answered")
        .parse()
        .expect("a pid");
    let grandchild = Proc::of(grandchild);
    let (pid_tx, pid_rx) = mpsc::channel();
    let request = pool.run(ask(-1, Some(pid_tx)));
    let worker = Proc::of(pid_rx.recv_timeout(SLACK).expect("the turn runs"));
    drop(request);
    assert!(wait_until(SLACK, || !worker.exists()));
    assert!(
        wait_until(SLACK, || !grandchild.is_running()),
        "the worker's grandchild outlived it"
    );
}

#[test]
fn a_worker_that_closes_its_stdout_is_a_clear_error_and_is_replaced() {
    const MUTE: &str = "import os, sys, time\nos.close(1)\nsys.stdin.readline()\ntime.sleep(600)\n";
    let pool = Pool::builder(python(MUTE)).build().expect("python3 starts");
    let answer = pool
        .run(ask(1, None))
        .join_blocking()
        .expect("the turn returned");
    let err = answer.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    assert!(err.to_string().contains("closed its stdout"), "{err}");
    assert!(wait_until(SLACK, || pool.stats().retired >= 1));
    let report = pool.shutdown_blocking(SLACK);
    assert_eq!(report.stragglers.len(), 0);
}

type Outcomes = std::pin::Pin<Box<dyn std::future::Future<Output = Vec<String>>>>;

/// A pool dropped with requests in flight: every request resolves as stopped by the shutdown,
/// and every worker is gone.
fn dropped_with_requests_in_flight(block_on: impl FnOnce(Outcomes) -> Vec<String>) {
    let pool = Pool::builder(python(WORKER))
        .size(NonZeroUsize::new(2).unwrap())
        .build()
        .expect("python3 starts");
    let (pid_tx, pid_rx) = mpsc::channel();
    let requests: Vec<_> = (0..6)
        .map(|_| pool.run(ask(-1, Some(pid_tx.clone()))))
        .collect();
    // Two take the workers; four wait.
    let workers: Vec<Proc> = (0..2)
        .map(|_| Proc::of(pid_rx.recv_timeout(SLACK).expect("a turn runs")))
        .collect();
    drop(pool);
    let outcomes = block_on(Box::pin(async move {
        let mut outcomes = Vec::new();
        for request in requests {
            outcomes.push(match request.await {
                Err(NativeError::Cancelled {
                    reason: CancelReason::Shutdown,
                    ..
                }) => "shutdown".to_owned(),
                other => format!("{other:?}"),
            });
        }
        outcomes
    }));
    assert!(
        outcomes.iter().all(|outcome| outcome == "shutdown"),
        "{outcomes:?}"
    );
    for worker in workers {
        assert!(
            wait_until(SLACK, || !worker.exists()),
            "worker {} left",
            worker.pid
        );
    }
}

#[test]
fn a_pool_dropped_with_requests_in_flight_stops_them_all_on_tokio() {
    let runtime = runtime();
    dropped_with_requests_in_flight(|future| runtime.block_on(future));
}

#[test]
fn a_pool_dropped_with_requests_in_flight_stops_them_all_on_smol() {
    dropped_with_requests_in_flight(smol::block_on);
}

#[test]
fn a_command_factory_that_panics_is_a_failed_start_not_a_dead_pool_thread() {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let pool = Pool::builder(move || {
        if counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            panic!("no more workers");
        }
        python(WORKER)()
    })
    .max_failures(NonZeroU32::new(2).unwrap())
    .build()
    .expect("the first worker starts");
    // Its only worker is stopped mid-turn; each replacement's factory panics.
    let (pid_tx, pid_rx) = mpsc::channel();
    let request = pool.run(ask(-1, Some(pid_tx)));
    pid_rx.recv_timeout(SLACK).expect("the turn runs");
    drop(request);
    assert!(
        wait_until(SLACK, || pool.stats().broken.is_some()),
        "{:?}",
        pool.stats()
    );
    let why = pool.stats().broken.expect("broken");
    assert!(why.contains("factory panicked: no more workers"), "{why}");
    let refused = pool.run(ask(1, None)).join_blocking().unwrap_err();
    assert_eq!(refused.cancel_reason(), Some(CancelReason::Failed));
    let report = pool.shutdown_blocking(SLACK);
    assert_eq!(report.stragglers.len(), 0);
}

/// The OS's name of every thread of this process (what `top -H` shows).
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
                .map(|name| name.trim_end().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A named turn's thread carries the turn's name while it runs, as every job's thread does,
/// and its own name again after: `top -H` shows which request a seat is busy with.
#[test]
fn a_named_turn_names_its_thread_while_it_runs() {
    let pool = Pool::builder(python(WORKER))
        .build()
        .expect("python3 starts");
    let (inside_tx, inside) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    let turn = pool
        .run_with(
            tethered::JobOptions::new().name("render-42"),
            move |worker| {
                let own = std::fs::read_to_string("/proc/thread-self/comm").unwrap_or_default();
                inside_tx.send(own.trim_end().to_owned()).unwrap();
                let _ = release.recv();
                worker.send_line("1")?;
                worker.read_line()
            },
        )
        .expect("the turn is queued");
    assert_eq!(inside.recv_timeout(SLACK).unwrap(), "render-42");
    assert!(
        thread_names().iter().any(|name| name == "render-42"),
        "no thread of the process carries the turn's name: {:?}",
        thread_names()
    );
    release_tx.send(()).unwrap();
    assert_eq!(turn.join_blocking().unwrap().unwrap(), "done 1");
    assert!(
        wait_until(SLACK, || !thread_names()
            .iter()
            .any(|name| name == "render-42")),
        "the seat's thread kept the finished turn's name: {:?}",
        thread_names()
    );
    assert!(
        thread_names()
            .iter()
            .any(|name| name.starts_with("tethered-pool"))
    );
}

/// A turn whose deadline has passed, or whose parent is cancelled, never starts: no worker
/// is touched, and the handle reads the stop at once.
#[test]
fn a_turn_cancelled_before_it_begins_never_touches_a_worker() {
    let pool = Pool::builder(python(WORKER))
        .build()
        .expect("python3 starts");
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for options in [
        tethered::JobOptions::new().timeout(Duration::ZERO),
        tethered::JobOptions::new().deadline(Instant::now() - Duration::from_secs(1)),
    ] {
        let ran = ran.clone();
        let turn = pool
            .run_with(options, move |_worker| {
                ran.store(true, std::sync::atomic::Ordering::SeqCst);
            })
            .expect("a stopped handle");
        let stopped = turn.join_blocking().unwrap_err();
        assert_eq!(stopped.cancel_reason(), Some(CancelReason::Timeout));
        assert!(stopped.returned().is_none());
    }
    let parent = tethered::CancelSource::new();
    parent.cancel(CancelReason::Shutdown);
    let ran_too = ran.clone();
    let turn = pool
        .run_with(
            tethered::JobOptions::new().child_of(&parent.token()),
            move |_worker| ran_too.store(true, std::sync::atomic::Ordering::SeqCst),
        )
        .unwrap();
    assert_eq!(
        turn.join_blocking().unwrap_err().cancel_reason(),
        Some(CancelReason::Shutdown)
    );
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(pool.stats().served, 0);
}
