//! An untrusted program run as a child process, stopped when the future awaiting it is dropped.
//! The job's `on_cancel` callback sends SIGTERM to the child's process group the moment the
//! cancel happens; the job then gives the child a grace period, sends SIGKILL if it is still
//! there, and always reaps it, so no zombie is left behind.
//!
//! Run with: cargo run --example subprocess

#[cfg(unix)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    unix::main()
}

#[cfg(not(unix))]
fn main() {
    eprintln!("this example needs Unix signals and process groups");
}

#[cfg(unix)]
mod unix {
    use std::io;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::{Command, ExitStatus};
    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::{Duration, Instant};

    use nix::errno::Errno;
    use nix::sys::signal::{Signal, kill, killpg};
    use nix::unistd::Pid;
    use tethered::CancelToken;
    use tokio::sync::oneshot;

    /// How long a child may take to exit after SIGTERM before it gets SIGKILL.
    const GRACE: Duration = Duration::from_millis(300);
    /// How often the job checks whether the child has exited.
    const POLL: Duration = Duration::from_millis(5);

    /// What became of a child.
    #[derive(Debug)]
    struct Ended {
        pid: Pid,
        status: ExitStatus,
        /// When the cancel arrived, if it did.
        cancelled_at: Option<Instant>,
        /// Whether it took SIGKILL (it outlived the grace period).
        killed: bool,
        reaped_at: Instant,
    }

    /// Runs `command` in a process group of its own until it exits, or until `token` is
    /// cancelled: then SIGTERM, [`GRACE`], SIGKILL. Returns only after reaping the child.
    fn run_child(mut command: Command, token: &CancelToken) -> io::Result<Ended> {
        // A group of its own, so the signals also reach whatever the program starts.
        let mut child = command.process_group(0).spawn()?;
        let pid = Pid::from_raw(i32::try_from(child.id()).map_err(io::Error::other)?);

        // A pid may be signalled only until the child is reaped; after that the OS may hand it
        // to another process. `reaped` is set under the lock in the same step as the reaping,
        // and the callback signals under the lock only while it is unset.
        let reaped = Arc::new(Mutex::new(false));
        let cancelled_at = Arc::new(Mutex::new(None));
        let _terminate_on_cancel = token.on_cancel({
            let (reaped, cancelled_at) = (reaped.clone(), cancelled_at.clone());
            move |_reason| {
                *lock(&cancelled_at) = Some(Instant::now());
                if !*lock(&reaped) {
                    // ESRCH: the group is gone already; nothing to stop.
                    let _ = killpg(pid, Signal::SIGTERM);
                }
            }
        });

        let mut killed = false;
        loop {
            {
                let mut reaped = lock(&reaped);
                if let Some(status) = child.try_wait()? {
                    *reaped = true;
                    return Ok(Ended {
                        pid,
                        status,
                        cancelled_at: *lock(&cancelled_at),
                        killed,
                        reaped_at: Instant::now(),
                    });
                }
            }
            let since_cancel = lock(&cancelled_at).map(|at| at.elapsed());
            if !killed && since_cancel.is_some_and(|waited| waited >= GRACE) {
                // Only this thread reaps, and it has not: the pid is still the child's.
                let _ = killpg(pid, Signal::SIGKILL);
                killed = true;
            }
            // Sleeps `POLL`, or less: a cancel wakes it at once.
            token.wait_timeout(POLL);
        }
    }

    fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `program` on tokio's blocking pool, drops the future awaiting it after
    /// `patience`, and returns how the child ended.
    async fn run_and_give_up(
        label: &str,
        shell: &str,
        patience: Duration,
    ) -> Result<Ended, Box<dyn std::error::Error>> {
        let (ended_tx, ended_rx) = oneshot::channel();
        let mut command = Command::new("sh");
        command.arg("-c").arg(shell);
        let job = tethered_tokio::spawn_native(move |token| {
            let _ = ended_tx.send(run_child(command, &token));
        });
        println!("{label}: started `sh -c \"{shell}\"`");
        // The caller stops waiting: a timeout here, in real code a disconnect or a lost select.
        let result = tokio::time::timeout(patience, job).await;
        assert!(
            result.is_err(),
            "the program runs far longer than {patience:?}"
        );
        println!("{label}: gave up after {patience:?}; the drop cancelled the job");

        let ended = tokio::time::timeout(Duration::from_secs(5), ended_rx)
            .await
            .map_err(|_| "the child was not reaped within 5 s")??;
        let ended = ended?;
        let how = match (ended.status.signal(), ended.killed) {
            (Some(9), true) => "ignored SIGTERM, got SIGKILL after the grace period".to_owned(),
            (Some(15), false) => "exited on SIGTERM".to_owned(),
            (signal, _) => format!("ended with {:?} (signal {signal:?})", ended.status),
        };
        let cancelled_at = ended.cancelled_at.ok_or("the job was cancelled")?;
        println!(
            "{label}: pid {} {how}; reaped {:.1?} after the cancel sent SIGTERM",
            ended.pid,
            ended.reaped_at.saturating_duration_since(cancelled_at)
        );
        // Reaped means gone: a zombie would still answer signal 0.
        assert_eq!(kill(ended.pid, None), Err(Errno::ESRCH));
        println!("{label}: kill(pid, 0) says no such process: no zombie");
        Ok(ended)
    }

    #[tokio::main]
    pub(crate) async fn main() -> Result<(), Box<dyn std::error::Error>> {
        let polite =
            run_and_give_up("polite", "exec sleep 1000", Duration::from_millis(100)).await?;
        assert!(!polite.killed);

        // `trap '' TERM` makes the shell ignore SIGTERM, and an ignored signal stays ignored
        // across `exec`: this program only stops for SIGKILL.
        let stubborn = run_and_give_up(
            "stubborn",
            "trap '' TERM; exec sleep 1000",
            Duration::from_millis(100),
        )
        .await?;
        assert!(stubborn.killed);

        // The handles were dropped, so the jobs' last moments are the reaping: wait for them
        // off the async threads.
        tokio::task::spawn_blocking(|| {
            tethered::testing::wait_all_returned(Duration::from_secs(5))
        })
        .await??;
        println!("both children reaped; no native job left running");
        Ok(())
    }
}
