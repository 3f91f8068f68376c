//! Scenario 6: 10,000 jobs cancelled at random points, then nothing runs and nothing burns CPU.
//!
//! The test must be alone in its binary: `tethered::stats()` and the process's CPU clock are
//! process-wide, and another test running alongside would move both.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use tethered::{CancelGuard, CancelSource, CancelToken, NativeError, Tethered};

use crate::{
    Naive, PATIENCE, Runtime, XorShift, bounded, count_planned_panics, cpu_share_over, report,
    wait_for,
};

const JOBS: usize = 10_000;
/// Jobs in flight at once.
const BATCH: usize = 32;
/// Naive jobs for the baseline: enough to leak a few spinning closures, few enough to be kind to
/// a small machine for the second they spin.
const NAIVE_JOBS: usize = 64;
const PLANNED_PANIC: &str = "soak: a planned panic";
/// The leak's symptom, checked: after the soak, CPU time grows by less than 5% of one core over 500 ms.
const IDLE_WINDOW: Duration = Duration::from_millis(500);
const MAX_IDLE_CPU_SHARE: f64 = 0.05;

/// What a job's closure does.
#[derive(Clone, Copy, Debug)]
enum Work {
    /// Spins for this long (checking its token), then returns or panics.
    Bounded { spin: Duration, panics: bool },
    /// Spins until cancelled: a job that only a cancel stops.
    UntilCancelled,
}

/// How the awaiting side gives up on the job.
#[derive(Clone, Copy, Debug)]
enum GiveUp {
    /// Drops the handle right after spawning: races the job's start.
    AtOnce,
    /// The adapter's `timeout(after, job)`.
    Timeout(Duration),
    /// Loses the runtime's race against a timer.
    Race(Duration),
    /// The driver abandons the awaiting task after this long ([`Runtime::abandon`]).
    DropTask(Duration),
    /// Never: awaits the result (only for bounded work).
    Never,
}

#[derive(Clone, Copy, Debug)]
struct Plan {
    work: Work,
    give_up: GiveUp,
}

impl Plan {
    fn random(rng: &mut XorShift) -> Plan {
        let micros = |rng: &mut XorShift, max: u64| Duration::from_micros(rng.below(max));
        let work = if rng.below(4) == 0 {
            Work::UntilCancelled
        } else {
            Work::Bounded {
                spin: micros(rng, 600),
                panics: rng.below(8) == 0,
            }
        };
        let give_up = match rng.below(5) {
            0 => GiveUp::AtOnce,
            1 => GiveUp::Timeout(micros(rng, 1_500)),
            2 => GiveUp::Race(micros(rng, 1_500)),
            3 => GiveUp::DropTask(micros(rng, 1_500)),
            _ => match work {
                Work::UntilCancelled => GiveUp::Timeout(micros(rng, 1_500)),
                Work::Bounded { .. } => GiveUp::Never,
            },
        };
        Plan { work, give_up }
    }
}

/// What one job did, as its closure and its awaiting side saw it.
#[derive(Debug, Default)]
struct Record {
    cancelled_at: OnceLock<Instant>,
    returned_at: OnceLock<Instant>,
    /// The closure stopped because it saw its token cancelled.
    saw_cancel: AtomicBool,
    panicked: AtomicBool,
    /// The awaiting side got the job's result (not a timeout, not dropped).
    awaited: OnceLock<Result<(), String>>,
}

/// Closures that panicked on purpose: every one must show in `stats().panicked`.
static PLANNED_PANICS: AtomicU64 = AtomicU64::new(0);
/// The planned panics the panic hook saw (and kept off stderr).
static PANICS_SEEN_BY_HOOK: AtomicU64 = AtomicU64::new(0);

fn closure(work: Work, record: Arc<Record>) -> impl FnOnce(CancelToken) + Send + 'static {
    move |token| {
        let (stop_at, panics) = match work {
            Work::Bounded { spin, panics } => (Some(Instant::now() + spin), panics),
            Work::UntilCancelled => (None, false),
        };
        loop {
            if token.is_cancelled() {
                record.saw_cancel.store(true, Ordering::SeqCst);
                break;
            }
            if stop_at.is_some_and(|stop_at| Instant::now() >= stop_at) {
                break;
            }
            std::hint::spin_loop();
        }
        let _ = record.returned_at.set(Instant::now());
        if panics && !record.saw_cancel.load(Ordering::SeqCst) {
            record.panicked.store(true, Ordering::SeqCst);
            PLANNED_PANICS.fetch_add(1, Ordering::SeqCst);
            panic!("{PLANNED_PANIC}");
        }
    }
}

/// The awaiting task: spawns the job, says so by dropping `spawned` (a guard whose source the
/// driver awaits: a one-shot signal any executor can wait for, also given if the task ends
/// early), then gives up as planned.
async fn run_job<R: Runtime>(plan: Plan, record: Arc<Record>, spawned: CancelGuard) {
    let job = R::spawn_native(closure(plan.work, record.clone()));
    drop(spawned);
    let watched = record.clone();
    job.token()
        .on_cancel(move |_| {
            let _ = watched.cancelled_at.set(Instant::now());
        })
        .detach();
    let result = match plan.give_up {
        GiveUp::AtOnce => return drop(job),
        GiveUp::Timeout(after) => job.timeout(after).await,
        GiveUp::Race(after) => {
            let raced = R::race(async { Some(job.await) }, async {
                R::sleep(after).await;
                None
            });
            match raced.await {
                Some(result) => result,
                None => return,
            }
        }
        GiveUp::DropTask(_) | GiveUp::Never => job.await,
    };
    let seen = match result {
        Ok(()) => Ok(()),
        Err(NativeError::Panicked(panic)) => Err(panic.message().unwrap_or_default().to_owned()),
        // Stopped: a timeout, or a cancel before the closure started or while it ran.
        Err(_stopped) => return,
    };
    let _ = record.awaited.set(seen);
}

/// The process's CPU use over [`IDLE_WINDOW`], as a share of one core.
fn cpu_share_over_idle_window() -> f64 {
    cpu_share_over(IDLE_WINDOW).expect("read the CPU time from /proc/self/stat")
}

/// 10,000 jobs with random work, cancelled at random points (before they start, mid-run, as
/// they finish): afterwards no closure runs or waits, every panic is counted and reported to
/// whoever awaited the job, every cancelled closure returned within
/// [`RETURN_BOUND`](crate::RETURN_BOUND), and the process is idle. The same plans on the naive
/// baseline leave closures running that burn CPU.
pub fn ten_thousand_jobs_cancelled_at_random_points<R: Runtime>() {
    count_planned_panics(PLANNED_PANIC, &PANICS_SEEN_BY_HOOK);
    bounded("the soak", PATIENCE * 6, || {
        let before = tethered::stats();
        let mut rng = XorShift::new(0x7e7e_7e7e_d00d_f00d);
        let records: Vec<Arc<Record>> = (0..JOBS).map(|_| Arc::default()).collect();
        let plans: Vec<Plan> = (0..JOBS).map(|_| Plan::random(&mut rng)).collect();
        let started = Instant::now();
        R::block_on(async {
            for (plans, records) in plans.chunks(BATCH).zip(records.chunks(BATCH)) {
                let tasks: Vec<_> = plans
                    .iter()
                    .zip(records)
                    .map(|(plan, record)| {
                        let spawned = CancelSource::new();
                        let job_spawned = spawned.token();
                        let task =
                            R::spawn(run_job::<R>(*plan, record.clone(), spawned.drop_guard()));
                        (plan, task, job_spawned)
                    })
                    .collect();
                for (plan, task, job_spawned) in tasks {
                    match plan.give_up {
                        GiveUp::DropTask(after) => {
                            // Abandon the task once it has spawned its job: every plan is a job.
                            job_spawned.cancelled().await;
                            R::sleep(after).await;
                            R::abandon(task).await;
                        }
                        _ => task.await,
                    }
                }
            }
        });
        eprintln!(
            "[{}] soak: {JOBS} jobs driven in {:?}",
            R::NAME,
            started.elapsed()
        );

        // No closure running, none queued: every job has finished or was skipped.
        tethered::testing::assert_all_returned(PATIENCE);
        let after = tethered::stats();
        assert_eq!((after.running, after.queued), (0, 0));
        assert_eq!(after.detached, before.detached);
        assert_eq!(after.spawned - before.spawned, JOBS as u64);

        // Every panic accounted for: counted once, and reported to whoever awaited the job.
        let planned = PLANNED_PANICS.load(Ordering::SeqCst);
        assert!(planned > 0, "the plans include panics");
        assert_eq!(after.panicked - before.panicked, planned);
        assert_eq!(PANICS_SEEN_BY_HOOK.load(Ordering::SeqCst), planned);
        for record in &records {
            let panicked = record.panicked.load(Ordering::SeqCst);
            match record.awaited.get() {
                Some(Err(message)) => {
                    assert!(panicked);
                    assert_eq!(message, PLANNED_PANIC);
                }
                Some(Ok(())) => assert!(!panicked, "a panic was reported as a result"),
                None => {}
            }
        }
        // A closure that saw its cancel can return before the cancelling thread has run the
        // callback that timestamps the cancel.
        wait_for("every cancel callback to have run", PATIENCE, || {
            records.iter().all(|record| {
                !record.saw_cancel.load(Ordering::SeqCst) || record.cancelled_at.get().is_some()
            })
        });
        let raced_completion = records
            .iter()
            .filter(|record| {
                record.cancelled_at.get().is_some()
                    && record.returned_at.get().is_some()
                    && !record.saw_cancel.load(Ordering::SeqCst)
            })
            .count();
        let cancelled_mid_run: Vec<Duration> = records
            .iter()
            .filter(|record| record.saw_cancel.load(Ordering::SeqCst))
            .map(|record| {
                let cancelled = record.cancelled_at.get().expect("a cancel was seen");
                let returned = record.returned_at.get().expect("the closure returned");
                returned.saturating_duration_since(*cancelled)
            })
            .collect();
        let awaited = records.iter().filter(|r| r.awaited.get().is_some()).count();
        let never_ran = records
            .iter()
            .filter(|r| r.returned_at.get().is_none())
            .count();
        eprintln!(
            "[{}] soak: {} cancelled mid-run, {never_ran} cancelled before they started, \
             {raced_completion} cancelled as they finished, {awaited} results awaited, \
             {planned} panics, {} cancels counted",
            R::NAME,
            cancelled_mid_run.len(),
            after.cancelled - before.cancelled,
        );
        assert!(
            never_ran > 0,
            "some cancels came before the closure started"
        );
        report(R::NAME, "soak", cancelled_mid_run);

        let share = cpu_share_over_idle_window();
        eprintln!(
            "[{}] soak: CPU over the next {IDLE_WINDOW:?}: {:.1}% of one core",
            R::NAME,
            share * 100.0
        );
        assert!(
            share < MAX_IDLE_CPU_SHARE,
            "the process burned {:.1}% of a core after the soak",
            share * 100.0
        );

        naive_baseline_burns_cpu::<R>();
    });
}

/// The same random plans with the runtime's plain blocking spawn: the closures that only a
/// cancel would stop run on and burn CPU after every caller gave up.
fn naive_baseline_burns_cpu<R: Runtime>() {
    let mut rng = XorShift::new(0x5eed_0fda_7a7a_0001);
    let naive = Naive::new();
    R::block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..NAIVE_JOBS {
            let plan = Plan::random(&mut rng);
            let task = match plan.work {
                Work::UntilCancelled => R::spawn_blocking(naive.spinning_job()),
                Work::Bounded { spin, .. } => R::spawn_blocking(move || thread::sleep(spin)),
            };
            tasks.push((plan, task));
        }
        for (plan, task) in tasks {
            match plan.give_up {
                GiveUp::AtOnce => R::abandon(task).await,
                GiveUp::Timeout(after) | GiveUp::Race(after) | GiveUp::DropTask(after) => {
                    let _ = R::give_up_after(after, task).await;
                }
                GiveUp::Never => task.await,
            }
        }
    });
    let leaked = naive.running();
    let share = cpu_share_over_idle_window();
    eprintln!(
        "[{}] soak: naive: {leaked} closure(s) still running, CPU over {IDLE_WINDOW:?}: \
         {:.1}% of one core",
        R::NAME,
        share * 100.0
    );
    assert!(
        leaked > 0,
        "some naive closures run on after their callers gave up"
    );
    assert!(
        share > MAX_IDLE_CPU_SHARE,
        "the leaked closures burn CPU (the leak's real symptom)"
    );
    naive.release();
}
