//! `Server::run`: every way a run ends shuts everything down within the one deadline, says why,
//! and never turns a stuck job into a hang.

use std::num::NonZeroUsize;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tethered::{CancelReason, JobOptions, NativeScope};
use tethered_server::{Server, ShutdownCause, Signal};

/// Signals are process-wide: the tests of this binary take turns.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A job in `scope` that ignores its token until `release` is dropped or sent to, and says
/// when it started.
fn stuck_job(scope: &NativeScope, name: &str) -> (mpsc::Sender<()>, mpsc::Receiver<()>) {
    let (release_tx, release) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel();
    tethered::spawn(
        JobOptions::new().name(name).in_scope(scope),
        move |_token| {
            started_tx.send(()).unwrap();
            let _ = release.recv(); // ignores its token: a leak until released
        },
    )
    .unwrap()
    .detach();
    (release_tx, started)
}

/// Runs `f` on a thread and fails if it has not returned within `limit`: a hang is a failure,
/// not a test that never ends.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("did not return within {limit:?}: a hang"))
}

#[test]
fn a_main_that_returns_by_itself_shuts_down_cleanly_and_says_so() {
    let _serial = serial();
    let report = within(Duration::from_secs(20), || {
        let server = Server::new().unwrap();
        let started = Instant::now();
        let report = server
            .run(Duration::from_secs(5), async {
                Ok::<(), std::io::Error>(())
            })
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "nothing to wait for"
        );
        report
    });
    assert_eq!(report.cause, ShutdownCause::MainReturned);
    assert!(report.drained);
    assert!(report.is_clean(), "{report}");
}

#[test]
fn a_main_that_returns_with_a_stuck_job_is_done_within_the_deadline_and_names_it() {
    let _serial = serial();
    let (report, release) = within(Duration::from_secs(20), || {
        let server = Server::new().unwrap();
        let scope = server.scope();
        let (release, started) = stuck_job(&scope, "stuck-render");
        started.recv().unwrap();
        let began = Instant::now();
        let report = server
            .run(Duration::from_millis(300), async {
                Ok::<(), std::io::Error>(())
            })
            .unwrap();
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "returned {:?} after a 300 ms deadline",
            began.elapsed()
        );
        (report, release)
    });
    assert_eq!(report.cause, ShutdownCause::MainReturned);
    assert_eq!(report.shutdown.stragglers.len(), 1, "{report}");
    assert_eq!(
        report.shutdown.stragglers[0].name.as_deref(),
        Some("stuck-render")
    );
    assert!(report.to_string().contains("stuck-render"), "{report}");
    drop(release); // the stuck closure returns; nothing is left running
    tethered::testing::assert_all_returned(Duration::from_secs(10));
}

#[derive(Debug)]
struct Failed;

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the listener failed")
    }
}

impl std::error::Error for Failed {}

#[test]
fn a_main_that_fails_gives_its_error_back_with_the_report() {
    let _serial = serial();
    let failed = within(Duration::from_secs(20), || {
        let server = Server::new().unwrap();
        let token = server.token().clone();
        let failed = server
            .run(Duration::from_secs(5), async { Err::<(), _>(Failed) })
            .unwrap_err();
        assert_eq!(token.reason(), Some(CancelReason::Shutdown));
        failed
    });
    assert_eq!(failed.report.cause, ShutdownCause::MainReturned);
    assert_eq!(
        std::error::Error::source(&failed).unwrap().to_string(),
        "the listener failed"
    );
    assert!(
        failed
            .to_string()
            .starts_with("the server's main future failed")
    );
}

#[test]
fn a_main_that_panics_with_a_stuck_job_resumes_the_panic_without_hanging() {
    let _serial = serial();
    let release = Arc::new(Mutex::new(None));
    let keep = release.clone();
    let panicked = within(Duration::from_secs(20), move || {
        let server = Server::new().unwrap();
        let (release, started) = stuck_job(&server.scope(), "stuck");
        started.recv().unwrap();
        *keep.lock().unwrap() = Some(release);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            server.run(Duration::from_millis(200), async {
                panic!("main failed badly");
                #[allow(unreachable_code)]
                Ok::<(), std::io::Error>(())
            })
        }))
    });
    let payload = panicked.expect_err("the panic comes back to the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"main failed badly"));
    drop(release.lock().unwrap().take());
    tethered::testing::assert_all_returned(Duration::from_secs(10));
}

#[test]
fn sigterm_begins_the_shutdown_and_the_report_says_so() {
    let _serial = serial();
    let report = within(Duration::from_secs(20), || {
        let server = Server::new().unwrap();
        let token = server.token().clone();
        let job_token = Arc::new(Mutex::new(None));
        let seen = job_token.clone();
        let scope = server.scope();
        let report = server
            .run(Duration::from_secs(5), async move {
                let job = tethered_tokio::spawn_native_with(
                    JobOptions::new().in_scope(&scope),
                    |token| token.wait(),
                )
                .unwrap();
                *seen.lock().unwrap() = Some(tethered::Tethered::token(&job).clone());
                // The signal, as systemd or Kubernetes would send it.
                tokio::time::sleep(Duration::from_millis(50)).await;
                nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::SIGTERM)
                    .unwrap();
                token.cancelled().await;
                let stopped = job.await.unwrap_err();
                assert_eq!(stopped.cancel_reason(), Some(CancelReason::Shutdown));
                Ok::<(), std::io::Error>(())
            })
            .unwrap();
        assert_eq!(
            job_token.lock().unwrap().as_ref().unwrap().reason(),
            Some(CancelReason::Shutdown)
        );
        report
    });
    assert_eq!(report.cause, ShutdownCause::Signal(Signal::Terminate));
    assert!(report.is_clean(), "{report}");
}

#[test]
fn a_scope_of_its_own_keeps_a_second_kind_of_work_from_being_starved() {
    let _serial = serial();
    let server = Server::new().unwrap();
    let mut server = server.with_max_running(NonZeroUsize::new(2).unwrap());
    let renders = server.scope();
    let scripts = server.add_scope(NonZeroUsize::new(2).unwrap());
    // Renders take every slot of their scope and hold it.
    let held: Vec<_> = (0..2)
        .map(|i| stuck_job(&renders, &format!("render-{i}")))
        .collect();
    for (_, started) in &held {
        started.recv().unwrap();
    }
    // A script still runs at once, in a scope with a limit of its own...
    let handle = server.handle().clone();
    let answer = handle.block_on(async {
        tethered_tokio::spawn_native_with(JobOptions::new().in_scope(&scripts), |_| 7)
            .unwrap()
            .await
    });
    assert_eq!(answer.unwrap(), 7);
    // ...while a third render waits for a slot of its own scope.
    let waiting = tethered::spawn(JobOptions::new().in_scope(&renders), |_| ()).unwrap();
    assert_eq!(renders.stats().queued, 1);
    drop(waiting);
    let report = within(Duration::from_secs(20), move || {
        server
            .run(Duration::from_millis(200), async {
                Ok::<(), std::io::Error>(())
            })
            .unwrap()
    });
    assert_eq!(report.shutdown.stragglers.len(), 2, "{report}");
    drop(held);
    tethered::testing::assert_all_returned(Duration::from_secs(10));
}

#[test]
fn a_server_dropped_without_running_cancels_its_jobs_and_does_not_hang() {
    let _serial = serial();
    within(Duration::from_secs(20), || {
        let server = Server::new().unwrap();
        let scope = server.scope();
        let (release, started) = stuck_job(&scope, "stuck");
        started.recv().unwrap();
        let token = server.token().clone();
        drop(server);
        assert_eq!(token.reason(), Some(CancelReason::Shutdown));
        drop(release);
    });
    tethered::testing::assert_all_returned(Duration::from_secs(10));
}

/// A worker that answers each line, and one that ignores SIGTERM.
fn python(script: &'static str) -> impl Fn() -> std::process::Command + Send + Sync + 'static {
    move || {
        let mut command = std::process::Command::new("python3");
        command.args(["-u", "-c", script]);
        command
    }
}

#[test]
fn a_pool_is_stopped_within_the_same_deadline_and_reported() {
    let _serial = serial();
    let report = within(Duration::from_secs(30), || {
        let mut server = Server::new().unwrap();
        let pool = tethered_process::Pool::builder(python(
            "import sys\nfor line in sys.stdin: print(line.strip(), flush=True)",
        ))
        .size(NonZeroUsize::new(2).unwrap())
        .build()
        .unwrap();
        // The second worker starts on its seat's thread: wait for it.
        let until = Instant::now() + Duration::from_secs(10);
        while pool.stats().live < 2 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        // `add` hands the pool back shared: the handlers keep using it.
        let pool = server.add(pool);
        server
            .run(Duration::from_secs(5), async move {
                let echoed = pool
                    .run(|worker| {
                        worker.send_line("ping")?;
                        worker.read_line()
                    })
                    .await;
                assert_eq!(echoed.unwrap().unwrap(), "ping");
                Ok::<(), std::io::Error>(())
            })
            .unwrap()
    });
    assert_eq!(
        report.shutdown.cancelled, 2,
        "two workers stopped: {report}"
    );
    assert!(report.is_clean(), "{report}");
}

#[test]
fn a_pool_worker_that_will_not_stop_is_named_in_the_report() {
    let _serial = serial();
    let report = within(Duration::from_secs(30), || {
        let mut server = Server::new().unwrap();
        let pool = tethered_process::Pool::builder(python(
            "import signal, sys\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\nfor line in sys.stdin: pass",
        ))
        .kill_after(Duration::from_secs(3))
        .build()
        .unwrap();
        // Past its start: it ignores SIGTERM from here on.
        let ready = pool.run(|worker| worker.read_line()).join_blocking();
        assert_eq!(ready.unwrap().unwrap(), "ready");
        let _pool = server.add(pool);
        let began = Instant::now();
        let report = server
            .run(Duration::from_millis(300), async {
                Ok::<(), std::io::Error>(())
            })
            .unwrap();
        assert!(
            began.elapsed() < Duration::from_secs(3),
            "the deadline held"
        );
        report
    });
    assert_eq!(report.shutdown.stragglers.len(), 1, "{report}");
    assert_eq!(
        report.shutdown.stragglers[0].name.as_deref(),
        Some("pool worker 1"),
        "{report}"
    );
    // The worker gets its SIGKILL after its own 3 s; nothing is left running then.
    assert!(
        (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            tethered::stats().running == 0
        }),
        "{:?}",
        tethered::stats()
    );
}

/// The documented way to tie a job to the shutdown (the server's scope, as a child of the
/// request) reads `Shutdown` every time, though the same shutdown makes the service cancel the
/// request too: here a task that, like an SDK's, cancels every request as soon as it hears
/// the server's token, on another thread, racing the server's own cancel down the tree.
#[test]
fn a_scoped_job_reads_shutdown_though_the_shutdown_also_cancels_its_request() {
    let _serial = serial();
    for round in 0..20 {
        let reason = within(Duration::from_secs(20), move || {
            let server = Server::new().unwrap();
            let scope = server.scope();
            let token = server.token().clone();
            let source = server.source().clone();
            let (reason_tx, reason_rx) = mpsc::channel();
            server
                .run(Duration::from_secs(5), async move {
                    let request = tethered::CancelSource::new();
                    let options = JobOptions::new()
                        .in_scope(&scope)
                        .child_of(&request.token());
                    let job = tethered_tokio::spawn_native_with(options, |t| t.wait())?;
                    // The service's side: it cancels its requests when it hears the shutdown.
                    let sdk = tokio::spawn({
                        let token = token.clone();
                        async move {
                            token.cancelled().await;
                            request.cancel(CancelReason::Dropped);
                        }
                    });
                    tokio::task::yield_now().await;
                    // As a SIGTERM would: the server's source, cancelled from another thread.
                    std::thread::spawn(move || source.cancel(CancelReason::Shutdown));
                    let stopped = job.await.unwrap_err();
                    reason_tx.send(stopped.cancel_reason()).unwrap();
                    sdk.await.unwrap();
                    Ok::<(), tethered::SpawnError>(())
                })
                .unwrap();
            reason_rx.recv().unwrap()
        });
        assert_eq!(reason, Some(CancelReason::Shutdown), "round {round}");
    }
}

#[test]
fn a_job_that_stops_at_once_on_the_shutdown_is_still_counted_as_returned() {
    let _serial = serial();
    // The jobs spin on their tokens, so they return within nanoseconds of the server-wide
    // cancel, and a slow listener on the server's token (registered last, so it runs after the
    // tokens of the jobs are cancelled) holds the cancel long after: the report must have
    // counted them before any of that.
    for round in 0..5 {
        let report = within(Duration::from_secs(20), move || {
            let mut server = Server::new().unwrap();
            let part = server.add(NativeScope::new().child_of(server.token()));
            let _slow = server
                .token()
                .on_cancel(|_| std::thread::sleep(Duration::from_millis(100)));
            let (started_tx, started) = mpsc::channel();
            for scope in [&server.scope(), &*part] {
                let started_tx = started_tx.clone();
                scope
                    .spawn(move |token| {
                        started_tx.send(()).unwrap();
                        while !token.is_cancelled() {
                            std::hint::spin_loop();
                        }
                    })
                    .unwrap()
                    .detach();
            }
            started.recv().unwrap();
            started.recv().unwrap();
            server
                .run(Duration::from_secs(5), async {
                    Ok::<(), std::io::Error>(())
                })
                .unwrap()
        });
        assert_eq!(report.shutdown.returned, 2, "round {round}: {report}");
        assert!(report.is_clean(), "round {round}: {report}");
    }
}
