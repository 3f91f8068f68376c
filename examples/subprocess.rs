//! An untrusted program run as a child process with `tethered-process`, stopped when the caller
//! gives up on it (here at a deadline, `cancel_after`, or behind a timeout): SIGTERM to the
//! child's process group, a grace period, SIGKILL if it is still there, and always the reap, so
//! no process, zombie or grandchild is left behind. A child that stops on SIGTERM is gone at
//! once; one that ignores it lasts the grace period.
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
    use std::process::Command;
    use std::time::Duration;

    use nix::errno::Errno;
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    use tethered::{CancelReason, NativeError, Tethered};
    use tethered_process::{Ended, Process, ProcessOutput};

    /// How long a child may take to exit after SIGTERM before it gets SIGKILL: its grace period.
    const KILL_AFTER: Duration = Duration::from_millis(300);

    /// Runs `sh -c shell` with a deadline of `patience`, and waits until it is reaped.
    async fn run_and_give_up(
        label: &str,
        shell: &str,
        patience: Duration,
    ) -> Result<ProcessOutput, Box<dyn std::error::Error>> {
        let mut command = Command::new("sh");
        command.arg("-c").arg(shell);
        let job = Process::new(command).kill_after(KILL_AFTER).spawn()?;
        println!("{label}: started `sh -c \"{shell}\"`, deadline {patience:?}");
        // The caller gives up at the deadline (in real code: a disconnect, a lost select): the
        // job is cancelled with `Timeout`, and awaiting it waits until the child is reaped.
        job.cancel_after(patience)?;
        let ended = match job.await {
            Err(NativeError::Cancelled {
                reason: CancelReason::Timeout,
                returned: Some(output),
                ..
            }) => *output,
            other => {
                return Err(
                    format!("the program runs far longer than {patience:?}: {other:?}").into(),
                );
            }
        };
        let how = match &ended.ended {
            Ended::Stopped(_) => "exited on SIGTERM".to_owned(),
            Ended::Killed(_) => "ignored SIGTERM, got SIGKILL after the grace period".to_owned(),
            other => format!("ended otherwise: {other}"),
        };
        let took = ended.cancel_to_reaped.unwrap_or_default();
        // `spawn` starts the child at once, so it has a pid (only a job that waited for a
        // scope's slot and then failed to start has none).
        let pid = ended.pid.ok_or("the child started")?;
        println!("{label}: pid {pid} {how}; reaped {took:.1?} after the cancel");
        // Reaped means gone: a zombie would still answer signal 0.
        let pid = Pid::from_raw(i32::try_from(pid)?);
        assert_eq!(kill(pid, None), Err(Errno::ESRCH));
        println!("{label}: kill(pid, 0) says no such process: no zombie");
        Ok(ended)
    }

    #[tokio::main]
    pub(crate) async fn main() -> Result<(), Box<dyn std::error::Error>> {
        let polite =
            run_and_give_up("polite", "exec sleep 1000", Duration::from_millis(100)).await?;
        assert!(polite.ended.is_stopped());

        // `trap '' TERM` makes the shell ignore SIGTERM, and an ignored signal stays ignored
        // across `exec`: this program only stops for SIGKILL.
        let stubborn = run_and_give_up(
            "stubborn",
            "trap '' TERM; exec sleep 1000",
            Duration::from_millis(100),
        )
        .await?;
        assert!(stubborn.ended.is_killed());

        // A timeout that answers at the deadline does the same without waiting: it cancels the
        // job, and its waiter stops the group and reaps it on its own.
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 1000 & sleep 1000"]); // a grandchild too
        let job = Process::new(command).kill_after(KILL_AFTER).spawn()?;
        let result = job.timeout(Duration::from_millis(100)).await;
        let err = result
            .err()
            .ok_or("the program runs far longer than 100 ms")?;
        // `Abandoned` while the child is still being stopped; `Cancelled` if it was reaped first.
        assert_eq!(err.cancel_reason(), Some(CancelReason::Timeout));
        println!("no wait: the timeout answered at the deadline; the group got SIGTERM");
        // The waiter's last moment is the reap: wait for it off the async threads.
        tokio::task::spawn_blocking(|| {
            tethered::testing::wait_all_returned(Duration::from_secs(5))
        })
        .await??;
        println!("all children reaped; no waiter left running");
        Ok(())
    }
}
