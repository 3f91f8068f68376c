//! The leak and its cure, side by side: sandbox jobs (a toy interpreter running a user's endless
//! script) behind a timeout on tokio, run twice.
//!
//! - naive: `tokio::task::spawn_blocking`, the script checking a stop flag that nothing sets
//!   when the timeout drops the future awaiting it;
//! - tethered: `tethered_tokio::spawn_native` and the job's `timeout` (`tethered::Tethered`),
//!   the script checking its `CancelToken`.
//!
//! Prints a table (jobs timed out, closures still running afterwards, CPU burnt after the
//! timeouts, blocking-pool slots held, how long a fresh job waits for a thread) and writes an
//! SVG chart of the closures still running over time. The naive closures really leak: they spin
//! until the demo ends the process with `std::process::exit`, since nothing else can stop them.
//!
//! Run with: cargo run --release --example leak_demo
//! Options:  cargo run --release --example leak_demo -- --help

mod args;
mod chart;
mod cpu;
mod report;
mod vm;

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tethered::{CancelReason, Tethered};

use crate::args::{Command, Options};
use crate::cpu::ThreadTimes;
use crate::report::{default_chart_path, explain, print_table, relative, show, write_chart};

/// How long `Runtime::shutdown_timeout` may wait for the blocking pool at the end of a run.
const SHUTDOWN_LIMIT: Duration = Duration::from_millis(250);
/// How often the running closures are counted for the chart.
const SAMPLE_EVERY: Duration = Duration::from_millis(5);

fn main() {
    let options = match args::parse(std::env::args_os().skip(1)) {
        Ok(Command::Run(options)) => options,
        Ok(Command::Help) => {
            print!("{}", args::USAGE);
            return;
        }
        Err(err) => {
            eprintln!("leak_demo: error: {err}\n\nRun with --help to see the options.");
            std::process::exit(2);
        }
    };
    println!(
        "{} sandbox jobs, each running an endless script behind a {} timeout,\n\
         on a tokio runtime whose blocking pool has {} threads; watched for {} after the timeouts.\n",
        options.jobs,
        show(options.timeout),
        options.pool,
        show(options.observe)
    );

    // Tethered first: the naive closures never stop, and would burn the CPU under anything
    // measured after them.
    let runs = run(Way::Tethered, &options, "[1/2]")
        .and_then(|tethered| Ok((tethered, run(Way::Naive, &options, "[2/2]")?)));
    let (tethered, naive) = match runs {
        Ok(runs) => runs,
        Err(err) => {
            eprintln!("leak_demo: error: cannot build a tokio runtime: {err}");
            std::process::exit(1);
        }
    };

    println!();
    print_table(&options, &naive, &tethered);
    println!();
    explain(&naive, &tethered);

    let out = options.out.clone().unwrap_or_else(default_chart_path);
    let mut code = 0;
    match write_chart(&out, &options, &naive, &tethered) {
        Ok(()) => println!("\nchart: {}", relative(&out).display()),
        Err(err) => {
            eprintln!(
                "\nleak_demo: error: cannot write the chart to {}: {err}",
                out.display()
            );
            code = 1;
        }
    }
    if tethered.observed.running_after != 0 {
        eprintln!("leak_demo: error: tethered closures were still running; that is a bug");
        code = 1;
    }
    println!(
        "\nThe {} naive closure(s) spin on as you read this, and nothing in the program can stop \
         them.\nDropping their runtime would wait for them forever; the demo gave up on them with\n\
         shutdown_timeout, and ends the process, and them, with std::process::exit.",
        naive.still_running_at_exit()
    );
    std::process::exit(code);
}

/// Which way a run spawns its jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    Naive,
    Tethered,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Naive => "naive",
            Way::Tethered => "tethered",
        }
    }

    /// The name of the run's runtime threads, by which its CPU time is found.
    fn thread_name(self) -> &'static str {
        match self {
            Way::Naive => "leak-naive",
            Way::Tethered => "leak-tethered",
        }
    }
}

/// Counters the jobs of one run keep, read by the sampler and the report.
#[derive(Debug)]
struct Tally {
    began: Instant,
    started: AtomicUsize,
    running: AtomicUsize,
    timed_out: AtomicUsize,
    /// Nanoseconds after `began` when the first timeout fired; `u64::MAX` before.
    first_timeout_at: AtomicU64,
    /// Nanoseconds after `began` when the last running closure returned; 0 while any runs.
    all_returned_at: AtomicU64,
}

impl Tally {
    fn new() -> Arc<Tally> {
        Arc::new(Tally {
            began: Instant::now(),
            started: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            timed_out: AtomicUsize::new(0),
            first_timeout_at: AtomicU64::new(u64::MAX),
            all_returned_at: AtomicU64::new(0),
        })
    }

    fn running(&self) -> usize {
        // ORDERING (all counters): Relaxed; they are independent tallies for display.
        self.running.load(Ordering::Relaxed)
    }

    /// Nanoseconds since `began`, for the timestamps above.
    fn now(&self) -> u64 {
        u64::try_from(self.began.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn timed_out(&self) {
        self.timed_out.fetch_add(1, Ordering::Relaxed);
        self.first_timeout_at
            .fetch_min(self.now(), Ordering::Relaxed);
    }

    /// When the first timeout fired, after `began`.
    fn first_timeout(&self) -> Option<Duration> {
        match self.first_timeout_at.load(Ordering::Relaxed) {
            u64::MAX => None,
            nanos => Some(Duration::from_nanos(nanos)),
        }
    }
}

/// Counts a closure as running until it returns.
struct RunningGuard(Arc<Tally>);

impl RunningGuard {
    fn enter(tally: &Arc<Tally>) -> RunningGuard {
        tally.started.fetch_add(1, Ordering::Relaxed);
        tally.running.fetch_add(1, Ordering::Relaxed);
        RunningGuard(tally.clone())
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::Relaxed) == 1 {
            let now = self.0.now().max(1);
            self.0.all_returned_at.store(now, Ordering::Relaxed);
        }
    }
}

/// The sandbox job itself: the same interpreter both ways; only the stop signal differs.
fn sandbox(tally: &Arc<Tally>, stop: impl Fn() -> bool) -> u64 {
    let _running = RunningGuard::enter(tally);
    vm::run(vm::ENDLESS, stop)
}

/// A request written the usual way: the script checks a stop flag, which the request would set
/// to stop it. But a timeout around the request drops this future at its `.await`, and a drop
/// runs none of its code: nothing ever sets the flag.
async fn naive_request(tally: Arc<Tally>) -> u64 {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let job = tokio::task::spawn_blocking(move || sandbox(&tally, || flag.load(Ordering::Relaxed)));
    job.await.expect("the interpreter does not panic")
}

/// The same request with tethered: the timeout cancels the job's token with `Timeout`.
fn tethered_request(tally: Arc<Tally>) -> tethered::AbortableNative<u64> {
    tethered_tokio::spawn_native(move |token| sandbox(&tally, || token.is_cancelled()))
}

/// What one run measured.
#[derive(Debug)]
struct Observed {
    timed_out: usize,
    running_after: usize,
    started: usize,
    /// Jobs still queued in a spawner when the observation ended, where tethered can tell.
    queued_after: Option<usize>,
    cpu_after_timeouts: Option<Duration>,
    /// How long a job spawned after the timeouts waited for a thread; `None`: it was still
    /// waiting when the observation ended.
    fresh_wait: Option<Duration>,
}

/// Spawns the jobs, lets the timeouts fire, then watches for `options.observe`.
async fn drive(way: Way, options: Options, tally: Arc<Tally>) -> Observed {
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..options.jobs {
        let tally = tally.clone();
        let counter = tally.clone();
        requests.spawn(async move {
            let timed_out = match way {
                Way::Naive => tokio::time::timeout(options.timeout, naive_request(tally))
                    .await
                    .is_err(),
                // `Abandoned` for a running closure (it stops at its next check), `Cancelled`
                // for a queued one (skipped unrun): a timeout either way.
                Way::Tethered => tethered_request(tally)
                    .timeout(options.timeout)
                    .await
                    .is_err_and(|err| err.cancel_reason() == Some(CancelReason::Timeout)),
            };
            if timed_out {
                counter.timed_out();
            }
        });
    }
    while requests.join_next().await.is_some() {}
    let timeouts_at = Instant::now();
    let cpu_before = ThreadTimes::of_threads_named(way.thread_name());

    // A fresh, trivial job: how long until a thread picks it up?
    let asked = Instant::now();
    let fresh_wait = match way {
        Way::Naive => {
            let fresh = tokio::task::spawn_blocking(move || asked.elapsed());
            match tokio::time::timeout(options.observe, fresh).await {
                Ok(Ok(waited)) => Some(waited),
                _ => None,
            }
        }
        Way::Tethered => {
            let fresh = tethered_tokio::spawn_native(move |_token| asked.elapsed());
            fresh.timeout(options.observe).await.ok()
        }
    };

    tokio::time::sleep_until((timeouts_at + options.observe).into()).await;
    let cpu_after = ThreadTimes::of_threads_named(way.thread_name());
    Observed {
        timed_out: tally.timed_out.load(Ordering::Relaxed),
        running_after: tally.running(),
        started: tally.started.load(Ordering::Relaxed),
        queued_after: (way == Way::Tethered).then(|| tethered::stats().queued),
        cpu_after_timeouts: cpu_before
            .zip(cpu_after)
            .map(|(before, after)| after.since(&before)),
        fresh_wait,
    }
}

/// One run's results.
#[derive(Debug)]
struct Run {
    way: Way,
    jobs: usize,
    tally: Arc<Tally>,
    observed: Observed,
    samples: Vec<(Duration, usize)>,
    shutdown: Duration,
}

impl Run {
    /// Jobs whose closure never started: still queued (naive) or skipped (tethered).
    fn never_started(&self) -> usize {
        self.jobs.saturating_sub(self.observed.started)
    }

    fn still_running_at_exit(&self) -> usize {
        self.tally.running()
    }

    /// When the last closure returned, after the first timeout fired; `None` if some still run.
    fn all_returned_after_timeouts(&self) -> Option<Duration> {
        if self.tally.running() != 0 {
            return None;
        }
        let returned = Duration::from_nanos(self.tally.all_returned_at.load(Ordering::Relaxed));
        Some(returned.saturating_sub(self.tally.first_timeout()?))
    }
}

/// One run on a runtime of its own, with its own named threads.
fn run(way: Way, options: &Options, step: &str) -> std::io::Result<Run> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(options.pool)
        .thread_name(way.thread_name())
        .enable_time()
        .build()?;
    let tally = Tally::new();
    let sampler = Sampler::start(
        tally.clone(),
        format!("{step} {}", way.name()),
        options.jobs,
    );
    let observed = runtime.block_on(drive(way, options.clone(), tally.clone()));
    let samples = sampler.finish();

    // Dropping a tokio runtime waits for its blocking closures with no time limit: for the
    // naive run, forever. `shutdown_timeout` gives up after a limit and leaves them running.
    let shutting_down = Instant::now();
    runtime.shutdown_timeout(SHUTDOWN_LIMIT);
    let shutdown = shutting_down.elapsed();
    Ok(Run {
        way,
        jobs: options.jobs,
        tally,
        observed,
        samples,
        shutdown,
    })
}

/// Counts the running closures every [`SAMPLE_EVERY`] for the chart, and shows a progress line
/// (updated in place on a terminal).
struct Sampler {
    done: Arc<AtomicBool>,
    thread: JoinHandle<Vec<(Duration, usize)>>,
}

impl Sampler {
    fn start(tally: Arc<Tally>, label: String, jobs: usize) -> Sampler {
        let done = Arc::new(AtomicBool::new(false));
        let finished = done.clone();
        let live = std::io::stderr().is_terminal();
        let thread = thread::spawn(move || {
            let line = |tally: &Tally| {
                format!(
                    "{label}: {:>5.2} s, {}/{jobs} jobs timed out, {} closures running",
                    tally.began.elapsed().as_secs_f64(),
                    tally.timed_out.load(Ordering::Relaxed),
                    tally.running(),
                )
            };
            let mut samples = Vec::new();
            let mut next = tally.began;
            while !finished.load(Ordering::Relaxed) {
                samples.push((tally.began.elapsed(), tally.running()));
                if live && samples.len() % 20 == 1 {
                    eprint!("\r{}   ", line(&tally));
                    let _ = std::io::stderr().flush();
                }
                next += SAMPLE_EVERY;
                thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            samples.push((tally.began.elapsed(), tally.running()));
            // The last state, on its own line, terminal or not.
            eprintln!("{}{}   ", if live { "\r" } else { "" }, line(&tally));
            samples
        });
        Sampler { done, thread }
    }

    fn finish(self) -> Vec<(Duration, usize)> {
        self.done.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}
