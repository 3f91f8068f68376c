//! Scenario 6: 10,000 jobs cancelled at random points, then nothing runs and nothing burns CPU.
//!
//! Alone in its binary: `tethered::stats()` and the process's CPU clock are process-wide, and
//! another test running alongside would move both.

mod common;

use std::panic;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use common::{Naive, PATIENCE, RUNTIME, bounded, report, wait_for};
use smol::Timer;
use tethered::{CancelToken, NativeError};

const JOBS: usize = 10_000;
/// Jobs in flight at once.
const BATCH: usize = 32;
/// Naive jobs for the baseline: enough to leak a few spinning closures, few enough to be kind to
/// a small machine for the second they spin.
const NAIVE_JOBS: usize = 64;
const PLANNED_PANIC: &str = "soak: a planned panic";
/// Issue 3: after the soak, CPU time grows by less than 5% of one core over 500 ms.
const IDLE_WINDOW: Duration = Duration::from_millis(500);
const MAX_IDLE_CPU_SHARE: f64 = 0.05;

/// xorshift64: a fixed seed makes the plans repeatable; the races stay real.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

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
    /// `timeout(after, job)`.
    Timeout(Duration),
    /// Loses an `or` race against a timer.
    Race(Duration),
    /// The driver drops the awaiting task after this long.
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
    fn random(rng: &mut Rng) -> Plan {
        let micros = |rng: &mut Rng, max: u64| Duration::from_micros(rng.below(max));
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

/// The awaiting task: spawns the job, says so on `spawned`, then gives up as planned.
async fn run_job(plan: Plan, record: Arc<Record>, spawned: smol::channel::Sender<()>) {
    let job = tethered_smol::spawn_native(closure(plan.work, record.clone()));
    let _ = spawned.try_send(());
    let watched = record.clone();
    job.token()
        .on_cancel(move |_| {
            let _ = watched.cancelled_at.set(Instant::now());
        })
        .detach();
    let result = match plan.give_up {
        GiveUp::AtOnce => return drop(job),
        GiveUp::Timeout(after) => tethered_smol::timeout(after, job).await,
        GiveUp::Race(after) => {
            let raced = smol::future::or(async { Some(job.await) }, async {
                Timer::after(after).await;
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
        Err(_cancelled) => return, // a timeout, or a cancel before the closure started
    };
    let _ = record.awaited.set(seen);
}

/// CPU time this process has used (user + system), from `/proc/self/stat`, in clock ticks.
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    // Fields after the command name, which ends with the last ')': state is field 3, utime
    // field 14, stime field 15.
    let fields: Vec<&str> = stat[stat.rfind(')').expect("a stat line") + 1..]
        .split_whitespace()
        .collect();
    let field = |number: usize| fields[number - 3].parse::<u64>().expect("a tick count");
    field(14) + field(15)
}

/// Clock ticks per second (`getconf CLK_TCK`); 100 on Linux for every mainstream architecture.
const TICKS_PER_SECOND: f64 = 100.0;

/// The share of one core this process used over [`IDLE_WINDOW`].
fn cpu_share_over_idle_window() -> f64 {
    let before = cpu_ticks();
    thread::sleep(IDLE_WINDOW);
    let ticks = cpu_ticks() - before;
    ticks as f64 / TICKS_PER_SECOND / IDLE_WINDOW.as_secs_f64()
}

fn silence_planned_panics() {
    let report = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let planned =
            info.payload().downcast_ref::<String>().map(String::as_str) == Some(PLANNED_PANIC);
        if !planned {
            report(info);
        }
    }));
}

#[test]
fn ten_thousand_jobs_cancelled_at_random_points_leave_nothing_running_and_no_cpu_burn() {
    silence_planned_panics();
    bounded("the soak", PATIENCE * 6, || {
        let before = tethered::stats();
        let mut rng = Rng(0x7e7e_7e7e_d00d_f00d);
        let records: Vec<Arc<Record>> = (0..JOBS).map(|_| Arc::default()).collect();
        let plans: Vec<Plan> = (0..JOBS).map(|_| Plan::random(&mut rng)).collect();
        let started = Instant::now();
        smol::block_on(async {
            for (plans, records) in plans.chunks(BATCH).zip(records.chunks(BATCH)) {
                let tasks: Vec<_> = plans
                    .iter()
                    .zip(records)
                    .map(|(plan, record)| {
                        let (spawned, job_spawned) = smol::channel::bounded(1);
                        let task = smol::spawn(run_job(*plan, record.clone(), spawned));
                        (plan, task, job_spawned)
                    })
                    .collect();
                for (plan, task, job_spawned) in tasks {
                    match plan.give_up {
                        GiveUp::DropTask(after) => {
                            // Drop the task once it has spawned its job: every plan is a job.
                            let _ = job_spawned.recv().await;
                            Timer::after(after).await;
                            drop(task);
                        }
                        _ => task.await,
                    }
                }
            }
        });
        eprintln!(
            "[{RUNTIME}] soak: {JOBS} jobs driven in {:?}",
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
            "[{RUNTIME}] soak: {} cancelled mid-run, {never_ran} cancelled before they started, \
             {raced_completion} cancelled as they finished, {awaited} results awaited, \
             {planned} panics, {} cancels counted",
            cancelled_mid_run.len(),
            after.cancelled - before.cancelled,
        );
        assert!(
            never_ran > 0,
            "some cancels came before the closure started"
        );
        report("soak", cancelled_mid_run);

        let share = cpu_share_over_idle_window();
        eprintln!(
            "[{RUNTIME}] soak: CPU over the next {IDLE_WINDOW:?}: {:.1}% of one core",
            share * 100.0
        );
        assert!(
            share < MAX_IDLE_CPU_SHARE,
            "the process burned {:.1}% of a core after the soak",
            share * 100.0
        );

        naive_baseline_burns_cpu();
    });
}

/// The same random plans with plain `unblock`: the closures that only a cancel would stop run
/// on and burn CPU after every caller gave up.
fn naive_baseline_burns_cpu() {
    let mut rng = Rng(0x5eed_0fda_7a7a_0001);
    let naive = Naive::new();
    smol::block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..NAIVE_JOBS {
            let plan = Plan::random(&mut rng);
            let task = match plan.work {
                Work::UntilCancelled => smol::unblock(naive.spinning_job()),
                Work::Bounded { spin, .. } => smol::unblock(move || thread::sleep(spin)),
            };
            tasks.push((plan, task));
        }
        for (plan, task) in tasks {
            match plan.give_up {
                GiveUp::AtOnce => drop(task),
                GiveUp::Timeout(after) | GiveUp::Race(after) | GiveUp::DropTask(after) => {
                    let give_up = async {
                        Timer::after(after).await;
                    };
                    smol::future::or(task, give_up).await;
                }
                GiveUp::Never => task.await,
            }
        }
    });
    let leaked = naive.running();
    let share = cpu_share_over_idle_window();
    eprintln!(
        "[{RUNTIME}] soak: naive: {leaked} closure(s) still running, CPU over {IDLE_WINDOW:?}: \
         {:.1}% of one core",
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
