//! A pool of long-lived `python3` worker processes that read requests on stdin and answer on
//! stdout, with each request tethered to the future that awaits it (`tethered_process::Pool`).
//! A request whose future is dropped (a timeout here) stops its worker at once, not on the
//! worker's next call: the request's cancel reaches the worker's process group, its blocking
//! read ends, and a fresh worker takes the dead one's place.
//!
//! Run with: cargo run --example worker_pool

#[cfg(unix)]
fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    unix::main()
}

#[cfg(not(unix))]
fn main() {
    eprintln!("this example needs Unix signals and process groups");
}

#[cfg(unix)]
mod unix {
    use std::error::Error;
    use std::num::NonZeroUsize;
    use std::process::Command;
    use std::time::Duration;

    use tethered::Tethered;
    use tethered_process::{Pool, Worker};

    /// A worker: one request per line, `n` milliseconds of work, or forever for a negative `n`.
    const WORKER: &str = r#"
import sys, time
for line in sys.stdin:
    n = int(line)
    if n < 0:
        while True:  # a request that never ends
            pass
    time.sleep(n / 1000)
    print(f"done {n} ms", flush=True)
"#;

    /// One request's turn: a line out, a line back.
    fn ask(n: i64) -> impl FnOnce(&mut Worker) -> std::io::Result<String> {
        move |worker| {
            println!(
                "request {n} ms: on worker {} (pid {})",
                worker.id(),
                worker.pid()
            );
            worker.send_line(&n.to_string())?;
            worker.read_line()
        }
    }

    #[tokio::main]
    pub(crate) async fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
        let pool = Pool::builder(|| {
            let mut command = Command::new("python3");
            command.args(["-u", "-c", WORKER]);
            command
        })
        // One worker, so that the requests after the stuck one are served by its replacement.
        .size(NonZeroUsize::MIN)
        .kill_after(Duration::from_millis(500))
        .build()?;
        println!("request 40 ms: {}", pool.run(ask(40)).await??);

        // A request that never ends, behind a deadline: the timeout drops it during its turn.
        let stuck = pool.run(ask(-1)).timeout(Duration::from_millis(200)).await;
        assert!(stuck.is_err(), "the request never ends by itself");
        println!("request forever: timed out after 200 ms; its future was dropped");
        // Its worker was stopped and a fresh one started: it answers both, in turn.
        let (a, b) = tokio::join!(pool.run(ask(10)), pool.run(ask(20)));
        println!("request 10 ms: {}; request 20 ms: {}", a??, b??);
        let stats = pool.stats();
        println!(
            "workers live: {}; stopped mid-turn: {}, replaced: {}, turns served: {}",
            stats.live, stats.cancelled_mid_turn, stats.replaced, stats.served
        );

        // The shutdown stops every worker and waits for their reap.
        let report =
            tokio::task::spawn_blocking(move || pool.shutdown_blocking(Duration::from_secs(10)))
                .await?;
        assert!(report.is_clean(), "{report}");
        tokio::task::spawn_blocking(|| {
            tethered::testing::wait_all_returned(Duration::from_secs(10))
        })
        .await??;
        println!("every worker process reaped in {:.1?}", report.elapsed);
        Ok(())
    }
}
