//! `Pool` under 2,000 requests with random drops and timeouts. One test in its own binary: it
//! counts this process's children and jobs.

#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::pool::{WORKER, ask, python, runtime};
use common::{SLACK, wait_until, zombie_children};
use std::num::NonZeroUsize;
use tethered::Tethered;
use tethered_process::Pool;

#[test]
fn two_thousand_requests_with_random_drops_and_timeouts_leave_exactly_size_workers() {
    const SIZE: usize = 4;
    let pool = std::sync::Arc::new(
        Pool::builder(python(WORKER))
            .size(NonZeroUsize::new(SIZE).unwrap())
            .kill_after(Duration::from_millis(500))
            .build()
            .expect("python3 starts"),
    );
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |since| since.as_nanos() as u64)
        | 1;
    println!("seed {seed}");
    let runtime = runtime();
    let started = Instant::now();
    // Eight callers, 250 requests each, one after the other: about eight requests in flight
    // on four workers, so drops and timeouts hit waiting requests and running turns alike.
    let fates = runtime.block_on(async {
        let mut callers = tokio::task::JoinSet::new();
        for caller in 0..8u64 {
            let pool = pool.clone();
            let mut rng = seed.wrapping_mul(caller + 1) | 1;
            callers.spawn(async move {
                let mut fates = [0usize; 3];
                for i in 0..250u64 {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    match rng % 8 {
                        // Dropped while it waits or during its turn.
                        0 => {
                            let request = pool.run(ask(20, None));
                            tokio::time::sleep(Duration::from_millis(rng % 10)).await;
                            drop(request);
                            fates[0] += 1;
                        }
                        // A busy turn that times out.
                        1 => {
                            let request = pool.run(ask(-1, None));
                            let timed_out = request.timeout(Duration::from_millis(10)).await;
                            assert!(timed_out.is_err());
                            fates[1] += 1;
                        }
                        // Served.
                        _ => {
                            match pool.run(ask((i % 3) as i64, None)).await {
                                Ok(Ok(reply)) => assert!(reply.starts_with("done")),
                                other => panic!("request {i} not served: {other:?}"),
                            }
                            fates[2] += 1;
                        }
                    }
                }
                fates
            });
        }
        let mut fates = [0usize; 3];
        while let Some(caller) = callers.join_next().await {
            for (all, mine) in fates.iter_mut().zip(caller.expect("no caller panicked")) {
                *all += mine;
            }
        }
        fates
    });
    println!(
        "2,000 requests (dropped, timed out, served: {fates:?}) in {:.1?}",
        started.elapsed()
    );
    // Back to idle: exactly `SIZE` workers, every one idle, no zombie, nothing else in their
    // groups.
    assert!(
        wait_until(SLACK + SLACK, || {
            let stats = pool.stats();
            stats.live == SIZE && stats.idle == SIZE && stats.busy == 0 && stats.waiting == 0
        }),
        "{:?}",
        pool.stats()
    );
    let stats = pool.stats();
    println!("{stats:?}");
    assert!(stats.served as usize >= fates[2], "{stats:?}");
    assert!(
        stats.cancelled_mid_turn > 0,
        "no turn was cancelled: {stats:?}"
    );
    assert_eq!(stats.replaced, stats.cancelled_mid_turn, "{stats:?}");
    assert_eq!(stats.start_failures, 0, "{stats:?}");
    let children = common::children();
    assert_eq!(children.len(), SIZE, "{children:?}");
    assert_eq!(zombie_children(), Vec::<u32>::new());
    // Nothing else in the workers' groups (a process that is exiting right now may still be
    // listed for a moment: wait for that, and name what stays).
    let strays = || -> Vec<(u32, String)> {
        children
            .iter()
            .flat_map(|worker| common::live_group_members(*worker))
            .filter(|member| !children.contains(member))
            .map(|stray| {
                let cmdline = std::fs::read(format!("/proc/{stray}/cmdline")).unwrap_or_default();
                (stray, String::from_utf8_lossy(&cmdline).replace('\0', " "))
            })
            .collect()
    };
    assert!(
        wait_until(SLACK, || strays().is_empty()),
        "strays in the workers' groups: {:?}",
        strays()
    );
    // The workers wait for requests: idle, not running; nothing else runs.
    let counts = tethered::stats();
    assert_eq!((counts.running, counts.idle), (0, SIZE), "{counts:?}");
    let report = pool.shutdown_blocking(SLACK);
    assert_eq!(report.stragglers.len(), 0);
    assert!(wait_until(SLACK, || common::children().is_empty()));
}
