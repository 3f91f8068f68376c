//! A pool of long-lived `python3` worker processes that read requests on stdin and answer on
//! stdout, with each request tethered to the future that awaits it. A request whose future is
//! dropped (a timeout here) kills its worker at once, not on the worker's next call: the
//! request's cancel reaches the worker's process group, its blocking read ends, and a fresh
//! worker takes the dead one's place.
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
    use std::io::{self, BufRead, BufReader, Write};
    use std::process::{ChildStdin, ChildStdout, Command, Stdio};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::Duration;

    use tethered::{AbortHandle, NativeError};
    use tethered_process::{Process, ProcessJob};
    use tokio::sync::Notify;

    /// A worker: one request per line, `n` milliseconds of work, or forever for a negative `n`.
    const WORKER: &str = r#"
import sys, time
while True:
    line = sys.stdin.readline()
    if not line:
        break
    n = int(line)
    if n < 0:
        while True:  # a request that never ends
            pass
    time.sleep(n / 1000)
    print(f"done {n} ms", flush=True)
"#;

    /// A live worker process and its pipes.
    struct Worker {
        id: u32,
        process: ProcessJob,
        /// Cancels the worker's process from the request's cancel callback.
        stop: AbortHandle,
        stdin: ChildStdin,
        stdout: BufReader<ChildStdout>,
    }

    impl Worker {
        fn start(id: u32) -> io::Result<Worker> {
            let mut command = Command::new("python3");
            command
                .args(["-u", "-c", WORKER])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped());
            let mut process = Process::new(command)
                .grace(Duration::from_millis(500))
                .capture_stdout(false) // the replies are ours to read
                .spawn()?;
            let stdin = process
                .take_stdin()
                .ok_or_else(|| io::Error::other("no stdin"))?;
            let stdout = process
                .take_stdout()
                .ok_or_else(|| io::Error::other("no stdout"))?;
            Ok(Worker {
                id,
                stop: process.abort_handle(),
                process,
                stdin,
                stdout: BufReader::new(stdout),
            })
        }

        /// Sends one request and blocks for its reply. A killed worker closes its stdout, so
        /// the read ends with an error rather than hanging.
        fn ask(&mut self, n: i64) -> io::Result<String> {
            writeln!(self.stdin, "{n}")?;
            let mut reply = String::new();
            if self.stdout.read_line(&mut reply)? == 0 {
                return Err(io::Error::other("the worker is gone"));
            }
            Ok(reply.trim_end().to_owned())
        }
    }

    /// Idle workers, and a wake-up for requests waiting for one.
    struct Pool {
        idle: Mutex<Vec<Worker>>,
        returned: Notify,
        next_id: AtomicU32,
    }

    impl Pool {
        fn new(size: u32) -> io::Result<Arc<Pool>> {
            let pool = Arc::new(Pool {
                idle: Mutex::new(Vec::new()),
                returned: Notify::new(),
                next_id: AtomicU32::new(1),
            });
            for _ in 0..size {
                let worker = pool.fresh_worker()?;
                pool.give_back(worker);
            }
            Ok(pool)
        }

        fn fresh_worker(&self) -> io::Result<Worker> {
            let worker = Worker::start(self.next_id.fetch_add(1, Ordering::Relaxed))?;
            println!(
                "worker {} started (pid {})",
                worker.id,
                // `spawn` starts the child before it returns: it has a pid.
                worker.process.pid().unwrap_or_default()
            );
            Ok(worker)
        }

        fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Worker>> {
            self.idle.lock().unwrap_or_else(PoisonError::into_inner)
        }

        fn give_back(&self, worker: Worker) {
            self.idle().push(worker);
            self.returned.notify_one();
        }

        async fn checkout(&self) -> Worker {
            loop {
                let notified = self.returned.notified();
                if let Some(worker) = self.idle().pop() {
                    return worker;
                }
                notified.await;
            }
        }

        /// One tethered request: it runs on the blocking pool, and its cancel kills the worker.
        async fn call(self: &Arc<Self>, n: i64) -> Result<String, Box<dyn Error + Send + Sync>> {
            let mut worker = self.checkout().await;
            let pool = self.clone();
            let job = tethered_tokio::spawn_native(move |token| {
                // The request's cancel reaches the worker at once: SIGTERM to its group.
                let stop = worker.stop.clone();
                let _kill_worker = token.on_cancel(move |reason| {
                    stop.cancel(reason.clone());
                });
                let reply = worker.ask(n);
                if let (Ok(reply), false) = (&reply, token.is_cancelled()) {
                    pool.give_back(worker);
                    return Ok(reply.clone());
                }
                pool.replace(worker);
                reply
            });
            Ok(job.await??)
        }

        /// Reports how a killed worker ended, and puts a fresh one in its place.
        fn replace(&self, dead: Worker) {
            let Worker { id, process, .. } = dead;
            match process.join_blocking() {
                // The request's cancel stopped the worker: what it gave back is how it ended.
                Err(NativeError::Cancelled {
                    returned: Some(output),
                    ..
                }) => println!(
                    "worker {id} (pid {}) {}, reaped {:.1?} after its request was cancelled",
                    output.pid.unwrap_or_default(),
                    output.ended,
                    output.cancel_to_reaped.unwrap_or_default()
                ),
                // It died by itself (its request failed without a cancel).
                Ok(output) => println!(
                    "worker {id} (pid {}) {}",
                    output.pid.unwrap_or_default(),
                    output.ended
                ),
                Err(err) => println!("worker {id}: {err}"),
            }
            match self.fresh_worker() {
                Ok(worker) => self.give_back(worker),
                Err(err) => eprintln!("could not start a worker: {err}"),
            }
        }
    }

    #[tokio::main]
    pub(crate) async fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
        let pool = Pool::new(2)?;
        println!("request 40 ms: {}", pool.call(40).await?);

        // A request that never ends, behind a deadline: the timeout drops its future.
        let stuck = tokio::time::timeout(Duration::from_millis(200), pool.call(-1)).await;
        assert!(stuck.is_err(), "the request never ends by itself");
        println!("request forever: timed out after 200 ms; its future was dropped");
        // The killed worker's replacement is already there: both workers answer.
        let (a, b) = tokio::join!(pool.call(10), pool.call(20));
        println!("request 10 ms: {}; request 20 ms: {}", a?, b?);

        // Dropping the pool drops the idle workers, which stops their processes.
        drop(pool);
        tokio::task::spawn_blocking(|| {
            tethered::testing::wait_all_returned(Duration::from_secs(10))
        })
        .await??;
        println!("every worker process reaped; no waiter left running");
        Ok(())
    }
}
