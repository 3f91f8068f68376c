//! A thousand live children on tokio: one supervisor thread watches them all, and dropping
//! them all at once leaves no process and no zombie. One test in its own binary, so that the
//! thread count it reads is its own.

#![cfg(target_os = "linux")]

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{sh, thread_count, wait_until, zombie_children};
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use tethered_process::Process;

/// How many children the test wants alive at once.
const WANTED: usize = 1000;
/// Descriptors one child holds here at most: its pidfd and two captured pipes, with room for
/// the ones `Command::spawn` opens for a moment.
const FDS_PER_CHILD: u64 = 4;
/// The most threads a thousand children may add.
const MAX_NEW_THREADS: usize = 64;
/// How long all of them may take to be gone once dropped.
const ALL_GONE: Duration = Duration::from_secs(15);

/// Raises the soft limit on open descriptors to the hard one; the limit now.
fn raise_nofile() -> u64 {
    let limit = getrlimit(Resource::Nofile);
    let raised = Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    if setrlimit(Resource::Nofile, raised).is_err() {
        println!(
            "RLIMIT_NOFILE stays at {:?}: raising it was refused",
            limit.current
        );
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

#[test]
fn a_thousand_live_children_add_a_bounded_number_of_threads_and_all_go_when_dropped() {
    let nofile = raise_nofile();
    let fits = usize::try_from(nofile.saturating_sub(256) / FDS_PER_CHILD).unwrap_or(usize::MAX);
    let count = WANTED.min(fits);
    if count < WANTED {
        println!("RLIMIT_NOFILE is {nofile}: {count} children instead of {WANTED}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let threads_before = thread_count();
    let started = Instant::now();
    let (pids_tx, pids) = std::sync::mpsc::channel();
    let tasks: Vec<_> = (0..count)
        .map(|i| {
            let pids_tx = pids_tx.clone();
            runtime.spawn(async move {
                // One in twenty burns CPU; the others sleep. Half the children have both
                // pipes captured.
                let script = if i % 20 == 0 {
                    "echo up; while :; do :; done"
                } else {
                    "echo up; exec sleep 600"
                };
                let mut command = sh(script);
                if i % 2 == 0 {
                    command.stdout(Stdio::piped()).stderr(Stdio::piped());
                } else {
                    command.stdout(Stdio::null());
                }
                let job = Process::new(command)
                    .kill_after(Duration::from_secs(2))
                    .spawn()
                    .expect("sh starts");
                pids_tx.send(job.pid()).expect("the test listens");
                // Never ends by itself: the task is aborted below.
                let _ = job.await;
            })
        })
        .collect();
    let live: Vec<u32> = (0..count)
        .map(|_| {
            pids.recv_timeout(Duration::from_secs(60))
                .expect("every child starts")
                .expect("started at once")
        })
        .collect();
    let spawned_in = started.elapsed();
    assert!(wait_until(Duration::from_secs(30), || {
        tethered::stats().running >= count
    }));
    let threads_alive = thread_count();
    println!(
        "{count} live children: {threads_before} threads before, {threads_alive} with them \
         (started in {spawned_in:.1?})"
    );
    assert!(
        threads_alive <= threads_before + MAX_NEW_THREADS,
        "{count} children took {} threads",
        threads_alive - threads_before
    );
    assert_eq!(common::children().len(), count, "{live:?}");

    let dropped = Instant::now();
    for task in &tasks {
        task.abort();
    }
    let gone = wait_until(ALL_GONE, || common::children().is_empty());
    let took = dropped.elapsed();
    println!("all {count} dropped at once: gone and reaped in {took:.1?}");
    assert!(
        gone,
        "{} children left {ALL_GONE:?} after the drop",
        common::children().len()
    );
    assert_eq!(zombie_children(), Vec::<u32>::new());
    assert!(wait_until(Duration::from_secs(10), || tethered::stats()
        .running
        == 0));
    drop(runtime);
    // The supervisor stays (one thread); no reader or waiter thread outlives its job.
    assert!(
        wait_until(Duration::from_secs(10), || thread_count()
            <= threads_before + 1),
        "{} threads after, {threads_before} before",
        thread_count()
    );
}
